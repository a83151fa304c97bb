"""Spike: the capture side of the design -- a parfor launch lowered as a plain call of Numba's
outlined body ``B`` (its serial meaning), and ``B`` differentiated as a not-inlined callee by
the existing machinery (``ir_passes/diff/callees.py``), with no change to the project code.

Monkeypatches (this script only): ``parfor_lowering.call_parallel_gufunc`` emits
``B(sched={start..., stop-1..., 0}, args...)`` instead of the threaded launch (arrays with a
null meminfo and parent, as Numba's gufunc wrapper passes them), the capture treats
``__numba_parfor_gufunc_*`` as not inlined and never lowers a typed IR again (Parfor nodes
cannot be lowered twice: Numba raises ValueError), and the reverse's call check accepts the
schedule (an ``alloca`` not written after the call) and its null meminfo/parent (see
``check_call`` below). Kernels are declared with
``parallel={}`` (parallel, yet past the capture's ``parallel=True`` refusal) and derived before
their first call (so the capture compiles its twins through the patched lowering).
Checks forward and reverse derivatives against the analytic ones.

Run (from the worktree):  nice python docs/design/parallel_spike/spike_capture.py
"""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))

import numpy as np                                         # noqa: E402
import numba                                               # noqa: E402
from numba import prange                                   # noqa: E402
from numba.core import cgutils, types                      # noqa: E402
from numba.parfors import parfor_lowering                  # noqa: E402

import enzyme_py                                           # noqa: E402
import enzyme_py.numba_bridge.capture as cap               # noqa: E402
import ir_passes.diff.reverse.callees as rc                # noqa: E402

assert enzyme_py.__file__.startswith(sys.path[0]), enzyme_py.__file__


def serial_launch(lowerer, cres, gu_signature, outer_sig, expr_args, expr_arg_types,
                  loop_ranges, redvars, reddict, redarrdict, init_block, index_var_typ, races,
                  exp_name_to_tuple_var):
    """The parfor as one call of its body over one division (what the pass differentiates)."""
    assert not races, races
    context, builder = lowerer.context, lowerer.builder
    intp = context.get_value_type(types.intp)
    ndim = len(loop_ranges)
    buf = cgutils.alloca_once(builder, intp, size=2 * ndim + 1, name="enzyme.sched")
    for d, (start, stop, step) in enumerate(loop_ranges):
        assert step == 1
        start, stop = (lowerer.loadvar(v.name) if hasattr(v, "name")
                       else context.get_constant(types.intp, v) for v in (start, stop))
        builder.store(start, builder.gep(buf, [intp(d)]))
        builder.store(builder.sub(stop, stop.type(1)), builder.gep(buf, [intp(ndim + d)]))
    builder.store(intp(0), builder.gep(buf, [intp(2 * ndim)]))
    sched_type = outer_sig.args[0]
    sched = context.make_array(sched_type)(context, builder)
    context.populate_array(sched, data=buf, shape=[intp(2 * ndim + 1)], strides=[intp(8)],
                           itemsize=intp(8), meminfo=None)

    def load(name):
        if name in exp_name_to_tuple_var:
            tup, offset = exp_name_to_tuple_var[name]
            return builder.extract_value(lowerer.loadvar(tup), offset)
        return lowerer.loadvar(name)

    expr_args = expr_args[1:]                   # Numba's list starts with 'sched'
    ninouts = len(expr_args) - len(redvars)
    def view(value, typ):                       # as Numba's gufunc wrapper: no meminfo/parent
        if not isinstance(typ, types.Array):
            return value
        ary = context.make_array(typ)(context, builder, value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()

    values = [load(x) for x in expr_args[:ninouts]] + \
        [lowerer.loadvar(redarrdict[x].name) for x in redvars]
    args = [sched._getvalue()] + [view(v, t) for v, t in zip(values, outer_sig.args[1:])]
    fnty = context.call_conv.get_function_type(types.none, outer_sig.args)
    fn = cgutils.get_or_insert_function(builder.module, fnty, cres.fndesc.llvm_func_name)
    status, _ = context.call_conv.call_function(builder, fn, types.none, outer_sig.args, args)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    context.active_code_library.add_linking_library(cres.library)


def check_call(st, inst, callee):
    """reverse/callees.py's check, plus: memory of an ``alloca`` the caller does not write
    after the call (the schedule) may be read by the callee's reverse (the one-clause
    extension the design needs; here a copy of the check with that clause)."""
    written = rc.written_parameters(st.module)
    writes = written.get(callee.name or "", frozenset())
    bases = {}
    for i, op in enumerate(inst.operands[2:], start=2):
        if not op.type.is_pointer:
            continue
        bases.setdefault(id(rc.pointer_base(op)), []).append(i)
        if i in writes or st.plan.read_only(op):
            continue
        targets = lambda call: rc.written_targets(call, written)    # noqa: E731
        base, owned = rc.pointer_base(op), rc.local_owner(op)
        if isinstance(base, rc.Argument) and not rc.written_after(inst, [base], targets=targets):
            continue
        if isinstance(op, rc.Constant) or getattr(base, "opcode", None) == "alloca" and \
                not rc.written_after(inst, [base], targets=targets):
            continue                                # the added clause (and a null meminfo)
        if owned is None or rc.written_after(inst, owned[1], targets=targets):
            raise st.diag.unsupported(f"call to @{callee.name} reads memory (%{op.name}) "
                                      "written after the call", inst, rc._HINT)
        if owned[0] not in st.kept_allocations:
            raise st.diag.unsupported("local array allocated more than once", inst, rc._HINT)
    for same in bases.values():
        if len(same) > 1 and writes.intersection(same):
            raise st.diag.unsupported("memory written through two arguments", inst, rc._HINT)


parfor_lowering.call_parallel_gufunc = serial_launch
rc.check_call = check_call
cap._lowered_again = lambda *args: None   # Parfor nodes cannot be lowered twice (ValueError)
_noinline = cap.explicitly_noinline
cap.explicitly_noinline = lambda symbol: "__numba_parfor_gufunc" in symbol or _noinline(symbol)


@numba.njit(parallel={})
def rowmap(x, out):
    for i in prange(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i]


@numba.njit(parallel={})
def nested(x, out):
    n, m = x.shape
    for i in prange(n):
        acc = 0.0
        for j in range(m):
            acc += x[i, j] * x[i, j] * x[i, 0]
        out[i] = acc


@numba.njit(parallel={})
def reduce_(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += np.exp(x[i])
    return s


@numba.njit(parallel={})
def fused(x, y, w):
    return np.sum(np.exp(-x * y) * w)


def main():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(7)
    t = rng.standard_normal(7)
    out, t_out = np.zeros(7), np.zeros(7)
    fwd = enzyme_py.derive_diff(rowmap, None, ("dup", "dup"), "forward")
    rev = enzyme_py.derive_diff(rowmap, None, ("dup", "dup"), "reverse")
    text = cap.capture(rowmap, (numba.typeof(x), numba.typeof(out))).module_text
    assert "__numba_parfor_gufunc" in text and "numba_parallel_for" not in text
    fwd(x, t, out, t_out)
    partial = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-15)
    np.testing.assert_allclose(t_out, t * partial, rtol=1e-13)
    dx, d_out = np.zeros(7), rng.standard_normal(7)
    seed = d_out.copy()
    rev(x, dx, out, d_out)
    np.testing.assert_allclose(dx, seed * partial, rtol=1e-13)
    print("rowmap: B kept as a callee; forward and reverse derivatives correct")

    X = rng.standard_normal((5, 4))
    T = rng.standard_normal((5, 4))
    o, t_o = np.zeros(5), np.zeros(5)
    enzyme_py.derive_diff(nested, None, ("dup", "dup"), "forward")(X, T, o, t_o)
    grad = 2 * X * X[:, :1]
    grad[:, 0] += (X * X).sum(axis=1)
    np.testing.assert_allclose(t_o, (grad * T).sum(axis=1), rtol=1e-12)
    dX, seed = np.zeros((5, 4)), rng.standard_normal(5)
    enzyme_py.derive_diff(nested, None, ("dup", "dup"), "reverse")(X, dX, o, seed.copy())
    np.testing.assert_allclose(dX, grad * seed[:, None], rtol=1e-12)
    print("nested (scalar m passed by value): forward and reverse derivatives correct")

    dx = np.zeros(7)
    enzyme_py.derive_diff(reduce_, None, ("dup",), "reverse")(x, dx)
    np.testing.assert_allclose(dx, np.exp(x), rtol=1e-13)
    value, tangent = enzyme_py.derive_diff(reduce_, None, ("dup",), "forward")(x, t)
    np.testing.assert_allclose(tangent, np.exp(x) @ t, rtol=1e-13)
    print("prange reduction (reduction array allocated by the caller, combined after the "
          "call): forward and reverse derivatives correct")

    y, w = rng.standard_normal(7), rng.standard_normal(7)
    e = np.exp(-x * y)
    dx, dy, dw = np.zeros(7), np.zeros(7), np.zeros(7)
    enzyme_py.derive_diff(fused, None, ("dup", "dup", "dup"), "reverse")(x, dx, y, dy, w, dw)
    np.testing.assert_allclose(dx, -y * e * w, rtol=1e-13)
    np.testing.assert_allclose(dy, -x * e * w, rtol=1e-13)
    np.testing.assert_allclose(dw, e, rtol=1e-13)
    ty, tw = rng.standard_normal(7), rng.standard_normal(7)
    _, tangent = enzyme_py.derive_diff(fused, None, ("dup", "dup", "dup"), "forward")(
        x, t, y, ty, w, tw)
    np.testing.assert_allclose(tangent, (-y * e * w) @ t + (-x * e * w) @ ty + e @ tw,
                               rtol=1e-12)
    print("fused np.sum(np.exp(-x * y) * w): forward and reverse derivatives correct")

if __name__ == "__main__":
    main()
