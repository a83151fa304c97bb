"""Checkpointed loops (`derive_diff(..., checkpoint=True)`, `ir_passes/checkpoint_loops.py`):
the reverse re-runs each iteration of an outermost loop whose body reads only memory it
wrote itself, instead of taping all iterations. Checked against finite differences and
forward-vs-reverse inner products; the loop is shown checkpointed (its body outlined and
its augmented forward called from the reverse) and its tape gone from the caller's; a loop
taping per iteration that is not checkpointed is named by a `CheckpointWarning`."""
from __future__ import annotations

import functools
import inspect as pysource
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

from enzyme_py import CheckpointWarning, autodiff, derive_diff
from enzyme_py.cli import main as cli_main
from enzyme_py.inspection import inspect, inspection
from ir_passes.pipeline import Stages
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import Kernel
from tests.support.nrt_stats import frees_by, nrt_statistics
# hidden_layer: a local array filled before the checkpointed loop and only read by its bodies
# (an MLP's hidden layer), kept alive by its slot until the fill's reverse
from tests.test_tape_placement import hidden_layer, matmul_loss

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "examples" / "benchmarks"))
from bench_kernels import gmm_objective  # noqa: E402

_DERIVE = functools.partial(derive_diff, checkpoint=True)
_NAMED = pytest.mark.filterwarnings("ignore::enzyme_py.CheckpointWarning")  # the loops kept


def filled_rows(x, out):
    """A temporary filled per row, reduced into a carried sum; one output per row."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(0.3 * x[i, j])
        for j in range(d):
            for l in range(j + 1, d):
                t[l] += x[i, j] * t[j]
        r = 0.0
        for j in range(d):
            r += math.sin(t[j]) * t[j]
        out[i] = r
        s += r * r
    return s


def raising_rows(x):
    """A body that can raise (not on these inputs)."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        if t[0] > 1e300:
            raise ValueError("overflow")
        for j in range(d):
            s += t[j] * math.cos(t[j])
    return s


def read_before_fill(x):
    """Not provable (each iteration reads the previous one's fill): today's tape."""
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            s += math.sin(t[j]) * x[i, j]
        for j in range(d):
            t[j] = math.exp(0.5 * x[i, j])
    return s


def written_after_loop(x, y):
    """Not checkpointed: the body reads y, which is written after the loop."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(y[j] * x[i, j])
        for j in range(d):
            s += t[j] * t[j]
    y[0] = s
    return s


def last_row(x, out):
    """Not checkpointed: every iteration writes out[0] (a reverse re-running the iterations,
    last first, would leave the first one's value)."""
    n, d = x.shape
    s = 0.0
    for i in range(n):
        r = 0.0
        for j in range(d):
            r += math.sin(x[i, j]) * x[i, j]
        out[0] = r
        s += r * r
    return s


def overwritten_after_loop(x, out):
    """Not checkpointed: out[i] is written once per iteration, but out[0] again after the
    loop (a re-run iteration would restore its own value)."""
    n, d = x.shape
    s = 0.0
    for i in range(n):
        r = 0.0
        for j in range(d):
            r += math.sin(x[i, j]) * x[i, j]
        out[i] = r
        s += r * r
    out[0] = 2.0 * s
    return s


def _gmm_args(rng):
    d, k, n = 3, 4, 12
    return (rng.normal(size=k), rng.normal(size=(k, d)),
            0.3 * rng.normal(size=(k, d + d * (d - 1) // 2)), rng.normal(size=(n, d)), 1.0, 0)


KERNELS = [
    Kernel("gmm", gmm_objective, _gmm_args, const=(4,)),
    Kernel("filled_rows", filled_rows,
           lambda rng: (rng.uniform(-1, 1, (6, 4)), np.zeros(6)), outputs=(1,)),
    Kernel("raising_rows", raising_rows, lambda rng: (rng.uniform(-1, 1, (5, 3)),)),
    Kernel("hidden_layer", hidden_layer,
           lambda rng: (rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, 3))),
    Kernel("read_before_fill", read_before_fill, lambda rng: (rng.uniform(-1, 1, (5, 3)),)),
    Kernel("written_after_loop", written_after_loop,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, 3)), outputs=(1,)),
    Kernel("last_row", last_row,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), np.zeros(5)), outputs=(1,)),
    Kernel("overwritten_after_loop", overwritten_after_loop,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), np.zeros(5)), outputs=(1,)),
]


@_NAMED
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_finite_differences(kernel):
    check_reverse(kernel, derive=_DERIVE)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_inner_products(kernel):
    check_inner_product(kernel, derive=_DERIVE)


def test_a_local_array_read_by_checkpointed_bodies_lives_until_its_reverse(tmp_path):
    """`hidden_layer` called again and again, in a process where glibc checks its heap
    (MALLOC_CHECK_=3 aborts on a corrupted heap): the hidden layer is checkpointed (its tape
    stage says so), every call's gradient is the same, and nothing is freed early."""
    types, acts = "float64[:, ::1], float64[::1]", ("dup", "dup")
    assert "; checkpointed loops" in inspect(hidden_layer, acts, types=types, stage="tape",
                                             checkpoint=True)
    (tmp_path / "child.py").write_text(
        "import numpy as np\n"
        "from enzyme_py import derive_diff\n"
        "from tests.test_checkpoint_loops import hidden_layer\n"
        "d = derive_diff(hidden_layer, None, ('dup', 'dup'), checkpoint=True)\n"
        "W, x = np.linspace(-1, 1, 12).reshape(4, 3), np.array([0.3, -0.2, 0.5])\n"
        "grads = []\n"
        "for _ in range(5):\n"
        "    dW, dx = np.zeros_like(W), np.zeros_like(x)\n"
        "    d(W, dW, x, dx)\n"
        "    grads.append(np.concatenate([dW.ravel(), dx]))\n"
        "    junk = [np.empty(n) for n in range(1, 200)]\n"
        "assert all(np.array_equal(g, grads[0]) for g in grads)\n")
    root = pathlib.Path(__file__).parents[1]
    env = dict(os.environ, MALLOC_CHECK_="3", LIBC_FATAL_STDERR_="1",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(tmp_path / "child.py")], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def _stages(fn, acts, types, checkpoint):
    target = inspection(fn, acts, types=types).stages.target
    return Stages(target, checkpoint=checkpoint)


_GMM = ("float64[::1], float64[:,::1], float64[:,::1], float64[:,::1], float64, int64",
        ("dup", "dup", "dup", "const", "const", "const"))


def test_gmm_checkpointed():
    """The data-point loop's body is outlined, run by the forward pass as the primal, and
    by its reverse as augmented forward then reverse; the caller's tape no longer grows
    with the data points (the carried sum is added after each call, not handed to it)."""
    types, acts = _GMM
    on = _stages(gmm_objective, acts, types, True)
    text = on.module_text
    calls = [line for line in text.splitlines() if " call i32 @" in line]
    body = [c for c in calls if ".body.B" in c and "augmented_" not in c and "diffe_" not in c]
    assert body and any("augmented_" in c for c in calls)
    off = _stages(gmm_objective, acts, types, False)
    per_n = {s: _per_point(st) for s, st in (("on", on), ("off", off))}
    assert per_n["on"] == 0 and per_n["off"] > 2000, per_n


def _per_point(stages) -> int:
    """The tape report's bytes per data point (the total at n = 2 minus n = 1)."""
    def total(n):
        text = stages.tape_text({"x.shape[0]": n, "alphas.shape[0]": 25, "x.shape[1]": 10})
        line = next(l for l in text.splitlines() if "total tape per call" in l)
        return int(line.rsplit("=", 1)[1].split()[0])
    return total(2) - total(1)


@_NAMED
@pytest.mark.parametrize("fn, types, acts, outlined", [
    (filled_rows, "float64[:,::1], float64[::1]", ("dup", "dup"), True),
    (raising_rows, "float64[:,::1]", ("dup",), True),
    (read_before_fill, "float64[:,::1]", ("dup",), False),
    (written_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
    (last_row, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
    (overwritten_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
])
def test_which_loops_are_checkpointed(fn, types, acts, outlined):
    text = _stages(fn, acts, types, True).module_text
    calls = [l for l in text.splitlines() if " call i32 @" in l and ".body.B" in l]
    assert bool(calls) is outlined


_REFUSED = "an iteration writes memory other than a local array or out[i] (i the loop's " \
    "counter) that nothing writes after the loop"


@pytest.mark.parametrize("fn, types, acts, reason", [
    (read_before_fill, "float64[:,::1]", ("dup",),
     "an iteration may read memory an earlier one wrote (read at %"),
    (written_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"),
     "an iteration reads memory written after the loop, or neither an argument nor a local "
     "array"),
    (last_row, "float64[:,::1], float64[::1]", ("dup", "dup"), _REFUSED),
    (overwritten_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"), _REFUSED),
])
def test_a_loop_keeping_its_tape_is_named(fn, types, acts, reason):
    """checkpoint=True and a loop taping per iteration that does not qualify: one
    `CheckpointWarning` names it by its `for` line and says why, shown at that line."""
    stages = _stages(fn, acts, types, True)
    lines, first = pysource.getsourcelines(fn)
    line = first + next(k for k, l in enumerate(lines) if l.lstrip().startswith("for i "))
    where = f"{fn.__code__.co_filename}:{line}"
    with pytest.warns(CheckpointWarning) as record:
        assert stages.checkpointed == ()
        stages.drop_ir()
        stages.module_text                      # computed again: no second warning
    assert len(record) == 1, [str(w.message) for w in record]
    message = str(record[0].message)
    assert message.startswith(f"checkpoint=True: loops of {fn.__name__} (array(float64, 2d, C)")
    assert f"keep a tape growing with their trip count: the loop at {where}: {reason}" \
        in message, message
    assert (record[0].filename, record[0].lineno) == (fn.__code__.co_filename, line)


def test_no_warning_for_loops_keeping_nothing():
    """GMM's K loop summing icf keeps nothing per iteration (not checkpointed, not named);
    a derivative asking checkpoint=True from Python warns only at its first call."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        for vector_math in (False, True):
            target = inspection(gmm_objective, _GMM[1], types=_GMM[0]).stages.target
            assert Stages(target, vector_math, checkpoint=True).checkpointed
        df = derive_diff(filled_rows, None, ("dup", "dup"), checkpoint=True)
        x = np.ones((3, 2))
        df(x, np.zeros_like(x), np.zeros(3), np.ones(3))
    df = derive_diff(last_row, None, ("dup", "dup"), checkpoint=True)
    with pytest.warns(CheckpointWarning, match="loops of last_row .* keep a tape"):
        df(x, np.zeros_like(x), np.zeros(3), np.ones(3))


def test_gmm_loops_chosen():
    """Of GMM's three outermost loops holding loops, the data-point loop (line 62) and the
    prior's K loop (line 94, an exp per j taped) are checkpointed; the K loop summing icf
    (line 56) is not: its reverse keeps nothing per iteration, so a recompute buys nothing.
    The loops inside a checkpointed body stay in it (no nested checkpointing)."""
    types, acts = _GMM
    on = _stages(gmm_objective, acts, types, True)
    text = on.tape_text({})
    lines = {l.split()[1]: l.split()[-1] for l in text.splitlines()
             if l.startswith(";   B") and "trips =" in l}
    chosen = next(l for l in text.splitlines() if l.startswith("; checkpointed loops"))
    named = re.findall(r"(B[\w.]+) \(\S*/(bench_kernels\.py:\d+)\)", chosen)
    assert sorted(lines[h] for h, _ in named) == ["bench_kernels.py:62", "bench_kernels.py:94"]
    assert all(lines[h] == where for h, where in named)     # each named at its `for` line
    bodies = [f for f in on.module.functions.values() if ".body." in (f.name or "")]
    assert len(bodies) == 2
    assert not any(i.opcode == "call" and ".body." in getattr(i.callee, "name", "")
                   for f in bodies for i in f.instructions())


# ---------------------------------------------------------------- with the other options

def test_split_mode_keeps_its_tape():
    """Split halves are not checkpointed: a re-run iteration would read the output C again
    in the reverse half, and the caller may write it between the halves (split mode tapes
    what it may overwrite); the gradient is the one of a single call, the tape the same."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    dA_once, dB_once = np.zeros_like(A), np.zeros_like(B)
    derive_diff(matmul_loss, None, ("dup", "dup", "dup"), checkpoint=True)(
        A, dA_once, B, dB_once, np.zeros((3, 5)), np.zeros((3, 5)))
    sizes = []
    for on in (False, True):
        fwd, rev = derive_diff(matmul_loss, None, ("dup", "dup", "dup"), mode="split",
                               checkpoint=on)
        dA, dB, C, dC = np.zeros_like(A), np.zeros_like(B), np.zeros((3, 5)), np.zeros((3, 5))
        _, tape = fwd(A, dA, B, dB, C, dC)
        sizes.append(tape.nbytes)
        C[:] = 7.0                                  # the caller's write between the halves
        rev(A, dA, B, dB, C, dC, 1.0, tape)
        np.testing.assert_allclose(dA, dA_once, rtol=1e-13)
        np.testing.assert_allclose(dB, dB_once, rtol=1e-13)
    assert sizes[0] == sizes[1]


def rows(x):
    """`filled_rows` with a float result only (for second derivatives)."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(0.3 * x[i, j])
        r = 0.0
        for j in range(d):
            r += math.sin(t[j]) * t[j]
        s += r * r
    return s


@pytest.mark.parametrize("inner, outer", [(True, False), (True, True), (False, True)])
def test_second_order(inner, outer):
    """Forward over reverse and reverse over reverse, the inner reverse and/or the outer
    derivative with checkpoint=True: each Hessian against central differences of the
    gradient, and the two against each other (forward against reverse). Where the outer
    reverse cannot call a checkpointed body (handed the inner's active arrays), its loops
    keep their tape."""
    rev = derive_diff(rows, f"rev_rows_{inner}", ("dup",), checkpoint=inner)

    @numba.njit
    def gradient(x, g):
        g[:, :] = 0.0
        rev(x, g)

    @numba.njit
    def gradient_dot(x, v):
        g = np.zeros_like(x)
        rev(x, g)
        return (g * v).sum()

    shape = (4, 3)
    n = shape[0] * shape[1]
    x = np.random.default_rng(5).uniform(-1, 1, shape)
    basis = [np.eye(n)[i].reshape(shape) for i in range(n)]

    def grad(x):
        g = np.zeros(shape)
        gradient(x, g)
        return g.ravel()
    h = 1e-6
    fd = np.stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in basis], axis=1)
    assert [st.checkpointed for st in rev.enzyme.stages.values()] != [()] or not inner
    fwd_rev = derive_diff(gradient, None, ("dup", "dup"), mode="forward", checkpoint=outer)
    rev_rev = derive_diff(gradient_dot, None, ("dup", "const"), checkpoint=outer)
    by_fwd, by_rev = np.empty((n, n)), np.empty((n, n))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", CheckpointWarning)
        for i, e in enumerate(basis):
            tg = np.zeros(shape)
            fwd_rev(x, e, np.zeros(shape), tg)
            by_fwd[:, i] = tg.ravel()
            dx = np.zeros(shape)
            rev_rev(x, dx, e)
            by_rev[i, :] = dx.ravel()
    named = [str(w.message) for w in record if w.category is CheckpointWarning]
    assert len(named) == outer and all(".gradient_dot (array" in m for m in named), named
    # the inner reverse's callee state (an owned buffer since callee states are released at a
    # raise) is a pointer live after the loop: the body may not be outlined, before the
    # synthesis would refuse it for the active arrays it is handed
    refused = any("its checkpointed reverse cannot be synthesized (call to @" in m
                  and "handed memory holding the address of an active array)" in m for m in named)
    kept = any("its body cannot be outlined: %" in m
               and "is needed after the body and is not a float" in m for m in named)
    assert (refused or kept) if inner and outer else not refused, named
    scale = np.max(np.abs(fd))
    np.testing.assert_allclose(by_fwd, fd, rtol=1e-5, atol=1e-6 * scale)
    np.testing.assert_allclose(by_rev, fd, rtol=1e-5, atol=1e-6 * scale)
    np.testing.assert_allclose(by_rev, by_fwd, rtol=1e-10, atol=1e-12 * scale)


_CACHED_KERNEL = '''
import math
import numpy as np


def rows(x):
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(0.3 * x[i, j])
        r = 0.0
        for j in range(d):
            r += math.sin(t[j]) * t[j]
        s += r * r
    return s
'''

_CACHED_CHILD = '''
import json
import numpy as np
import enzyme_py
from tests.support.gradcheck import fd_gradient
from kernel import rows

x = np.random.default_rng(0).uniform(-1, 1, (5, 3))
t = np.cos(np.arange(15.0)).reshape(5, 3)
on = enzyme_py.derive_diff(rows, "d_rows", ("dup",), cache=True, checkpoint=True)
off = enzyme_py.derive_diff(rows, "d_rows", ("dup",), cache=True)
fwd = enzyme_py.derive_diff(rows, "t_rows", ("dup",), mode="forward", cache=True)
d_on, d_off = np.zeros_like(x), np.zeros_like(x)
on(x, d_on)
off(x, d_off)
print(json.dumps({
    "on": d_on.tolist(), "off": d_off.tolist(), "fd": fd_gradient(rows, (x,))[0].tolist(),
    "tangent": fwd(x, t)[1], "t": t.tolist(),
    "checkpointed": [list(s.checkpointed) for s in on.enzyme.stages.values()],
    "hits": [sum(d._cache_hits.values()) for d in (on, off)],
    "misses": [sum(d._cache_misses.values()) for d in (on, off)]}))
'''


def test_disk_cache(tmp_path):
    """cache=True with checkpoint=True: stored apart from the derivative without it (the
    option is part of the key), loaded by a second process, same numbers; both against
    central differences, and against forward mode (<J t, 1> = <t, J^T 1>)."""
    (tmp_path / "kernel.py").write_text(_CACHED_KERNEL)
    (tmp_path / "child.py").write_text(_CACHED_CHILD)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(pathlib.Path(__file__).parents[1])])
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(tmp_path / "child.py")], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        r = json.loads(out.stdout.strip().splitlines()[-1])
        for key in ("on", "off"):
            np.testing.assert_allclose(r[key], r["fd"], rtol=1e-6, atol=1e-9)
        assert r["tangent"] == pytest.approx(float(np.sum(np.multiply(r["t"], r["on"]))),
                                             rel=1e-12)
        runs.append(r)
    first, second = runs
    assert first["misses"] == [1, 1] and first["checkpointed"] not in ([], [[]])
    assert second["hits"] == [1, 1] and second["misses"] == [0, 0]
    assert second["on"] == first["on"]


def test_one_state_buffer():
    """The iterations' augmented forwards share one state buffer, parked between them and
    between calls: a call allocates as much as without checkpointing (from Python: what
    Numba costs to pass the arrays in), not one buffer per iteration; `release()` frees it
    with the temporaries."""
    x, out = np.random.default_rng(0).uniform(-1, 1, (6, 4)), np.zeros(6)
    per_call, released = [], []
    for on in (False, True):
        df = derive_diff(filled_rows, None, ("dup", "dup"), checkpoint=on)
        df(x, np.zeros_like(x), out, np.ones(6))
        with nrt_statistics():
            before = rtsys.get_allocation_stats().alloc
            for _ in range(5):
                df(x, np.zeros_like(x), out, np.ones(6))
            per_call.append((rtsys.get_allocation_stats().alloc - before) / 5)
        released.append(frees_by(df.release, df.release))
    assert per_call[1] == per_call[0], per_call
    assert released[1] == [released[0][0] + 1, 0], released


def test_inspect_lists_the_checkpointed_loops():
    """`inspect(..., checkpoint=True)` (CLI `--checkpoint`) and a derivative's own setting
    (`@autodiff(..., checkpoint=True)`):
    the tape stage names the checkpointed loops (with vector math, GMM's prior loop streams
    its exp calls and keeps no tape: only the data-point loop is checkpointed)."""
    types, acts = _GMM
    line = "; checkpointed loops (each body outlined"
    text = inspect(gmm_objective, acts, types=types, stage="tape", checkpoint=True)
    chosen = next(l for l in text.splitlines() if l.startswith(line))
    assert chosen.endswith(": B360.endif (" + gmm_objective.__code__.co_filename + ":62)"), chosen
    assert line not in inspect(gmm_objective, acts, types=types, stage="tape")
    df = autodiff(filled_rows, args=("dup", "dup"), checkpoint=True).derivative
    x = np.ones((3, 2))
    df(x, np.zeros_like(x), np.zeros(3), np.ones(3))
    assert line in df.enzyme.inspect("tape")


def test_cli_checkpoint_flag(capsys):
    target = f"{pathlib.Path(__file__).parents[1]}/examples/benchmarks/bench_kernels.py:" \
             "gmm_objective"
    types, acts = _GMM
    assert cli_main(["inspect", target, "--types", types, "--args", ",".join(acts),
                     "--stage", "tape", "--checkpoint"]) == 0
    assert "; checkpointed loops (each body outlined" in capsys.readouterr().out
