"""JAX-style helpers over `derive_diff`: `grad`, `value_and_grad`, `jacobian`, `hessian`, `hvp`.

Each returns a Numba dispatcher callable from Python and from `@njit` code. Its body is
generated per argument types (`typed_dispatch`): the parameters in `argnums` are
differentiated ("active" float scalars, "dup" float arrays), the others are "const".
Array arguments in another layout than C are copied to C order first, so the gradients and
Jacobians returned are new C-contiguous arrays.

Every helper takes `strong_zero=False`, passed on to `derive_diff` (API.md).

Second derivatives are reverse over forward: the reverse derivative of `x -> <f'(x), v>`
(the forward derivative's tangent). Forward over reverse, which API.md names, works too,
also on functions with temporary arrays holding active values (`tests/test_second_order.py`).
"""
from __future__ import annotations

import inspect

from numba import types

from ir_passes.errors import ActivityError

from .api import derive_diff
from .numba_bridge.link import njit_wrapper
from .omitted import Slots, parameter_defaults
from .typed_dispatch import (activities_for, contiguous_line, float_kind, kept,
                             normalize_argnums, parameter_slots, primal_of, require_float_return,
                             return_type, typed_dispatcher)

#: Directions per vector forward pass of `jacobian(..., mode="forward")`.
CHUNK = 8
_JACOBIAN_MODES = ("auto", "forward", "reverse")


class _Target:
    """The function a helper differentiates: its dispatcher, name and parameter names."""

    def __init__(self, f) -> None:
        self.primal = primal_of(f)
        self.fname = self.primal.py_func.__name__
        self.names = list(inspect.signature(self.primal.py_func).parameters)
        self.args = [f"a{i}" for i in range(len(self.names))]

    def slots(self, nums: tuple[int, ...], helper: str) -> Slots:
        """A helper's parameters (`omitted`): trailing ones with defaults may be left out,
        except the differentiated ones, `nums`."""
        return parameter_slots(self.names, parameter_defaults(self.primal.py_func), nums,
                               helper)


def grad(f, argnums=0, *, strong_zero: bool = False):
    """`g(*args)`: the gradient of the float-valued `f` with respect to parameter `argnums`
    (a float or a new array), or a tuple of gradients for a tuple `argnums`."""
    return _gradient("grad", f, argnums, with_value=False, strong_zero=strong_zero)


def value_and_grad(f, argnums=0, *, strong_zero: bool = False):
    """`g(*args) -> (f(*args), grad(f, argnums)(*args))`, in one reverse pass."""
    return _gradient("value_and_grad", f, argnums, with_value=True, strong_zero=strong_zero)


def _gradient(helper: str, f, argnums, with_value: bool, strong_zero: bool):
    t = _Target(f)
    single = not isinstance(argnums, tuple)
    nums = normalize_argnums(helper, t.fname, t.names, argnums)

    def make_impl(argtypes: tuple):
        require_float_return(helper, t.fname, t.primal, argtypes,
                             "use jacobian for array results")
        acts = activities_for(helper, t.fname, t.names, argtypes, nums, "reverse")
        df = kept(t.primal, ("grad", acts, with_value, strong_zero), lambda: derive_diff(
            t.primal, f"{helper}_{t.fname}", acts, return_primal=with_value,
            strong_zero=strong_zero))
        source = _gradient_source(t, argtypes, acts, nums, single, with_value)
        return source, {"df": df}

    return typed_dispatcher(f"{helper}_{t.fname}", t.slots(nums, helper), make_impl)


def _gradient_source(t: _Target, argtypes: tuple, acts: tuple, nums: tuple, single: bool,
                     with_value: bool) -> str:
    """`impl`: zeroed shadows for the "dup" arrays, one reverse pass, the gradients picked
    in `argnums` order from the shadows and the returned gradients of "active" floats."""
    lines, call, grads, n_active = [f"def impl({', '.join(t.args)}):"], [], {}, 0
    for i, (a, act) in enumerate(zip(t.args, acts)):
        if act == "dup":
            lines += [contiguous_line(f"x{i}", a, argtypes[i]), f"    s{i} = np.zeros_like(x{i})"]
            call += [f"x{i}", f"s{i}"]
            grads[i] = f"s{i}"
        else:
            call.append(a)
        if act == "active":
            grads[i] = f"g[{n_active}]"
            n_active += 1
    lines.append(f"    r = df({', '.join(call)})")
    lines.append("    g = r[1]" if with_value else "    g = r")
    result = grads[nums[0]] if single else "(" + "".join(grads[i] + ", " for i in nums) + ")"
    lines.append(f"    return (r[0], {result})" if with_value else f"    return {result}")
    return "\n".join(lines) + "\n"


def jacobian(f, argnums: int = 0, mode: str = "auto", chunk: int = CHUNK, *,
             strong_zero: bool = False):
    """`J(*args)`: the Jacobian of `f` (returning a float or an array of floats) with respect
    to parameter `argnums` (an int), shaped `out.shape + in.shape` (a float when both are
    scalars). mode="forward": vector forward passes of `chunk` directions each;
    "reverse": one reverse pass per output element; "auto": whichever takes fewer passes."""
    t = _Target(f)
    (num,) = normalize_argnums("jacobian", t.fname, t.names, argnums, single_only=True)
    if mode not in _JACOBIAN_MODES:
        raise ValueError(f"jacobian({t.fname}): mode must be one of {_JACOBIAN_MODES}, "
                         f"not {mode!r}")
    if not (isinstance(chunk, int) and chunk >= 1):
        raise ValueError(f"jacobian({t.fname}): chunk must be a positive int, not {chunk!r}")

    def make_impl(argtypes: tuple):
        restype = return_type(t.primal, argtypes)
        out_kind = float_kind(restype)
        if out_kind is None:
            raise ActivityError(f"jacobian({t.fname}) needs {t.fname} to return a float or an "
                                f"array of floats; it returns {restype}")
        writer = kept(t.primal, ("writer", out_kind), lambda: _writer(t, out_kind))
        acts = {m: activities_for("jacobian", t.fname, t.names, argtypes, (num,), m) + ("dup",)
                for m in ("forward", "reverse")}
        namespace = {"primal": t.primal}
        if mode != "reverse":
            namespace["fwd"] = kept(t.primal, ("jacfwd", out_kind, acts["forward"], chunk,
                                               strong_zero),
                                    lambda: _derived(writer, "forward", acts["forward"], chunk,
                                                     strong_zero))
        if mode != "forward":
            namespace["rev"] = kept(t.primal, ("jacrev", out_kind, acts["reverse"], strong_zero),
                                    lambda: _derived(writer, "reverse", acts["reverse"], 1,
                                                     strong_zero))
        source = _jacobian_source(t, num, argtypes, restype, mode, chunk)
        return source, namespace

    return typed_dispatcher(f"jacobian_{t.fname}", t.slots((num,), "jacobian"), make_impl)


def _writer(t: _Target, out_kind: str):
    """`write(*args, out)`: the result of `f(*args)` flattened into `out` (one element for a
    float), whose derivatives in both modes and any width (unlike those of `f` for an array
    result) take and give `out`'s shadow, one row of the Jacobian per element."""
    value = f"primal({', '.join(t.args)})"
    line = f"out[:] = {value}.ravel()" if out_kind == "array" else f"out[0] = {value}"
    source = f"def write({', '.join(t.args + ['out'])}):\n    {line}\n"
    return njit_wrapper(source, "write", {"primal": t.primal}, as_name=f"{t.fname}_into")


def _derived(writer, mode: str, acts: tuple, width: int, strong_zero: bool):
    prefix = "jacfwd" if mode == "forward" else "jacrev"
    return derive_diff(writer, f"{prefix}_{writer.py_func.__name__}", acts, mode, width=width,
                       strong_zero=strong_zero)


def _jacobian_source(t: _Target, num: int, argtypes: tuple, restype, mode: str,
                     chunk: int) -> str:
    """`impl`: evaluate f once for the output shape, then fill `Jf`, the Jacobian seen as
    (outputs, inputs), by forward chunks or reverse rows."""
    x_array = isinstance(argtypes[num], types.Array)
    y_array = isinstance(restype, types.Array)
    dtype = f"np.{(restype.dtype if y_array else restype).name}"
    args = list(t.args)
    args[num] = "x"
    lines = [f"def impl({', '.join(t.args)}):", contiguous_line("x", t.args[num], argtypes[num]),
             f"    y = primal({', '.join(args)})" if y_array else "    y = 0.0",
             f"    n = {'x.size' if x_array else '1'}",
             f"    m = {'y.size' if y_array else '1'}",
             f"    out = np.empty(m, {dtype})",
             f"    J = np.empty({'y.shape' if y_array else '()'} + "
             f"{'x.shape' if x_array else '()'}, {dtype})",
             "    Jf = J.reshape((m, n))"]
    forward = _forward_lines(_inserted(args, num, ["T"]), x_array, chunk)
    reverse = _reverse_lines(_inserted(args, num, ["dx"] if x_array else []), x_array)
    if mode == "auto":
        lines.append(f"    if (n + {chunk - 1}) // {chunk} <= m:")
        lines += ["    " + line for line in forward]
        lines.append("    else:")
        lines += ["    " + line for line in reverse]
    else:
        lines += forward if mode == "forward" else reverse
    lines.append("    return J" if x_array or y_array else "    return Jf[0, 0]")
    return "\n".join(lines) + "\n"


def _inserted(args: list[str], num: int, after: list[str]) -> str:
    """`args` joined for a call, with `after` inserted after argument `num`."""
    return ", ".join(args[:num + 1] + after + args[num + 1:])


def _forward_lines(call: str, x_array: bool, chunk: int) -> list[str]:
    """Columns of J, `chunk` at a time: tangents `T` (unit directions) in, `tout` out."""
    tangent = f"np.zeros(({chunk},) + x.shape, x.dtype)" if x_array else f"np.zeros({chunk})"
    seeded = "T.reshape((T.shape[0], n))" if x_array else f"T.reshape(({chunk}, 1))"
    return [f"    T = {tangent}",
            f"    Tf = {seeded}",
            "    tout = np.zeros((T.shape[0], m), out.dtype)",
            f"    for start in range(0, n, {chunk}):",
            f"        c = min({chunk}, n - start)",
            "        Tf[:] = 0.0",
            "        for j in range(c):",
            "            Tf[j, start + j] = 1.0",
            f"        fwd({call}, out, tout)",
            "        for j in range(c):",
            "            Jf[:, start + j] = tout[j]"]


def _reverse_lines(call: str, x_array: bool) -> list[str]:
    """Rows of J: the seed `dout` = e_i in, the gradient of `x` out."""
    lines = ["    dout = np.zeros(m, out.dtype)"]
    if x_array:
        lines += ["    dx = np.zeros_like(x)", "    dxf = dx.reshape(n)"]
    lines += ["    for i in range(m):",
              "        dout[:] = 0.0",
              "        dout[i] = 1.0"]
    if x_array:
        lines += ["        dxf[:] = 0.0", f"        rev({call}, out, dout)", "        Jf[i] = dxf"]
    else:
        lines += [f"        Jf[i, 0] = rev({call}, out, dout)[0]"]
    return lines


def hvp(f, argnums: int = 0, *, strong_zero: bool = False):
    """`h(*args, v)`: the Hessian of the float-valued `f` with respect to parameter
    `argnums` (an int) times `v` (shaped like that parameter), by reverse over forward."""
    return _second_order("hvp", f, argnums, strong_zero)


def hessian(f, argnums: int = 0, *, strong_zero: bool = False):
    """`H(*args)`: the Hessian of the float-valued `f` with respect to parameter `argnums`
    (an int), shaped `in.shape + in.shape` (a float for a scalar), one `hvp` per column."""
    return _second_order("hessian", f, argnums, strong_zero)


def _second_order(helper: str, f, argnums, strong_zero: bool):
    t = _Target(f)
    (num,) = normalize_argnums(helper, t.fname, t.names, argnums, single_only=True)

    def make_impl(argtypes: tuple):
        primal_types = argtypes[:len(t.names)]
        require_float_return(helper, t.fname, t.primal, primal_types,
                             "second derivatives are of float-valued functions")
        acts = activities_for(helper, t.fname, t.names, primal_types, (num,), "reverse")
        hv = kept(t.primal, ("hvp", num, acts, strong_zero),
                  lambda: _reverse_over_forward(t, num, acts, strong_zero))
        x_array = acts[num] == "dup"
        source = (_hvp_source if helper == "hvp" else _hessian_source)(t, num, argtypes,
                                                                      x_array)
        return source, {"hv": hv}

    return typed_dispatcher(f"{helper}_{t.fname}", t.slots((num,), helper), make_impl,
                            ("v",) if helper == "hvp" else ())


def _reverse_over_forward(t: _Target, num: int, acts: tuple, strong_zero: bool):
    """`hv(..., x, d_x, v, ...)`: the reverse derivative of the directional derivative
    `(..., x, v, ...) -> f'(x) v` (the forward derivative's tangent), H v into `d_x`."""
    forward = tuple("dup" if a == "active" else a for a in acts)
    fwd = derive_diff(t.primal, f"t_{t.fname}", forward, "forward", strong_zero=strong_zero)
    params = _inserted(t.args, num, ["v"])
    source = f"def directional({params}):\n    return fwd({params})[1]\n"
    directional = njit_wrapper(source, "directional", {"fwd": fwd},
                               as_name=f"directional_{t.fname}")
    outer = acts[:num + 1] + ("const",) + acts[num + 1:]
    return derive_diff(directional, f"hvp_{t.fname}", outer, strong_zero=strong_zero)


def _hv_call(t: _Target, num: int, x_array: bool, v: str) -> str:
    args = list(t.args)
    args[num] = "x"
    return f"hv({_inserted(args, num, ['dx', v] if x_array else [v])})"


def _hvp_source(t: _Target, num: int, argtypes: tuple, x_array: bool) -> str:
    v = f"a{len(t.args)}"            # the dispatcher's generated name of `v`
    lines = [f"def impl({', '.join(t.args + [v])}):",
             contiguous_line("x", t.args[num], argtypes[num])]
    if not x_array:
        return "\n".join(lines + [f"    return {_hv_call(t, num, False, v)}[0]"]) + "\n"
    lines += [contiguous_line("w", v, argtypes[-1]),
              "    if w.shape != x.shape:",
              f"        raise ValueError('hvp({t.fname}): v must have the shape of "
              f"{t.names[num]}')",
              "    dx = np.zeros_like(x)",
              f"    {_hv_call(t, num, True, 'w')}",
              "    return dx"]
    return "\n".join(lines) + "\n"


def _hessian_source(t: _Target, num: int, argtypes: tuple, x_array: bool) -> str:
    lines = [f"def impl({', '.join(t.args)}):",
             contiguous_line("x", t.args[num], argtypes[num])]
    if not x_array:
        return "\n".join(lines + [f"    return {_hv_call(t, num, False, '1.0')}[0]"]) + "\n"
    lines += ["    n = x.size",
              "    H = np.empty(x.shape + x.shape, x.dtype)",
              "    Hf = H.reshape((n, n))",
              "    e = np.zeros_like(x)",
              "    ef = e.reshape(n)",
              "    dx = np.zeros_like(x)",
              "    dxf = dx.reshape(n)",
              "    for i in range(n):",
              "        ef[:] = 0.0",
              "        ef[i] = 1.0",
              "        dxf[:] = 0.0",
              f"        {_hv_call(t, num, True, 'e')}",
              "        Hf[:, i] = dxf",
              "    return H"]
    return "\n".join(lines) + "\n"


__all__ = ["grad", "hessian", "hvp", "jacobian", "value_and_grad"]
