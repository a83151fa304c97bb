"""Tape placement (issue 10): values are taped at the loop level where they change.

Each kernel is checked against finite differences and the inner product identity, and its
tape report shows where the moved slot went: out of the innermost loop (to the exit of the
loop it is invariant in), or gone (recomputed). The report must agree with the slots the
real derivative pushes.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from enzyme_py import derive_diff
from ir_passes.diff.reverse.retained import Need, Retention
from ir_passes.diff.reverse.tape_report import taped_bytes
from ir_passes.vector_math import libmvec_variants

from tests.unit.enzyme_py.cli.test_tape_report import observed_counts, report_counts
from tests.support.gradcheck import check_all
from tests.support.inspected import inspected
from tests.support.kernel import Kernel


def heat_swap(u, v, r, steps):
    """Heat steps ping-ponging between u and v (`a, b = b, a`): pointer phis."""
    ny, nx = u.shape
    a, b = u, v
    for _ in range(steps):
        for i in range(1, ny - 1):
            for j in range(1, nx - 1):
                b[i, j] = a[i, j] + r * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                         + a[i, j + 1] - 4.0 * a[i, j])
        a, b = b, a
    s = 0.0
    for i in range(ny):
        for j in range(nx):
            s += a[i, j] * a[i, j]
    return s


def packed_triangle(icf, x, qx):
    """ADBench-style |Q x_i|^2 with Q's strict lower triangle packed in icf[d:] and read
    through an affine counter in the triangular loop `range(j + 1, d)`."""
    n, d = x.shape
    total = 0.0
    for i in range(n):
        for j in range(d):
            qx[j] = math.exp(icf[j]) * x[i, j]
        idx = d
        for j in range(d):
            for l in range(j + 1, d):
                qx[l] += icf[idx] * x[i, j]
                idx += 1
        for j in range(d):
            total += qx[j] * qx[j]
    return total


def temporaries_triangle(icf, means, x):
    """packed_triangle on centred rows kept in temporaries from np.empty, as ADBench's GMM
    writes it: the triangular loop reads xc[j] while it writes qxc[l]."""
    n, d = x.shape
    xc = np.empty(d)
    qxc = np.empty(d)
    total = 0.0
    for i in range(n):
        for j in range(d):
            xc[j] = x[i, j] - means[j]
        for j in range(d):
            qxc[j] = math.exp(icf[j]) * xc[j]
        idx = d
        for j in range(d):
            for l in range(j + 1, d):
                qxc[l] += icf[idx] * xc[j]
                idx += 1
        for j in range(d):
            total += qxc[j] * qxc[j]
    return total


def sin_squared(x):
    """t = sin(x[i]) and t * t, both needed by the reverse: t * t is recomputed from t."""
    s = 0.0
    for i in range(x.shape[0]):
        t = math.sin(x[i])
        s += t * t * x[i]
    return s


def stale_temporary(x, reps):
    """t is refilled on some rounds only: round 1 reads round 0's t. Rebuilding t[i] from
    its fill expression (with round 1's factor) would be wrong."""
    n = x.shape[0]
    t = np.empty(n)
    s = 0.0
    for r in range(reps):
        if r != 1:
            for i in range(n):
                t[i] = x[i] * (r + 1)
        for i in range(n):
            s += math.sin(t[i])
    return s


def packed_rows(icf, w, x, qx):
    """packed_triangle's rows weighed as GMM's components are: exp(w[i] - |Q x_i|^2 / 2).
    Past the row's loops, the block computing the weight is entered from the first guard
    (d <= 0: LLVM jumps past all of the row's loops), from the guard of the squared norm's
    loop, or from that loop's exit."""
    n, d = x.shape
    total = 0.0
    for i in range(n):
        for j in range(d):
            qx[j] = math.exp(icf[j]) * x[i, j]
        idx = d
        for j in range(d):
            for l in range(j + 1, d):
                qx[l] += icf[idx] * x[i, j]
                idx += 1
        sqnorm = 0.0
        for j in range(d):
            sqnorm += qx[j] * qx[j]
        total += math.exp(w[i] - 0.5 * sqnorm)
    return total


def growing_rows(w, x):
    """Row j of a packed triangle has j entries (row 0 none: its inner loop is skipped);
    idx walks the packing across rows. LLVM ends the inner loop by comparing idx itself
    with its end, so idx is no recurrence of the row loop (recurrences.py): taped per row."""
    n = x.shape[0]
    idx = 0
    s = 0.0
    for j in range(n):
        for l in range(j, 2 * j):
            s += w[idx] * math.sin(x[l - j] * x[j])
            idx += 1
    return s


def row_weights(A, w):
    """A value computed in the outer loop (exp) and used by every inner iteration."""
    s = 0.0
    for i in range(A.shape[0]):
        e = math.exp(w[i])
        for j in range(A.shape[1]):
            s += e * math.sin(A[i, j])
    return s


def matmul_loss(A, B, C):
    """C = A @ B as a loop nest, then sum(C * C): the sum reads C after its last write."""
    M, Kd = A.shape
    for m in range(M):
        for n in range(B.shape[1]):
            C[m, n] = 0.0
        for k in range(Kd):
            a = A[m, k]
            for n in range(B.shape[1]):
                C[m, n] += a * B[k, n]
    s = 0.0
    for m in range(M):
        for n in range(B.shape[1]):
            s += C[m, n] * C[m, n]
    return s


def read_then_overwrite(x, y):
    """y is read (nonlinearly) and then overwritten: its loads must be taped."""
    s = 0.0
    for i in range(y.shape[0]):
        s += math.sin(y[i]) * x[i]
    for i in range(y.shape[0]):
        y[i] = 2.0 * x[i]
    return s


def gathered_rows(cams, X, obs):
    """BA-shaped: each observation gathers a camera row and a point row through indices read
    from `obs` (with Numba's negative-index wraparound): reprojection-like terms of both."""
    total = 0.0
    for i in range(obs.shape[0]):
        c = obs[i, 0]
        p = obs[i, 1]
        y0 = X[p, 0] - cams[c, 1]
        y1 = X[p, 1] - cams[c, 2]
        if p % 2 == 0:
            y0 = y0 * cams[c, 0]
        total += math.sin(y0) * y1 + cams[c, 0] * y0 * y1
    return total


def gated_cells(w, x):
    """LSTM-shaped: each division gets Numba's zero-division branch, splitting one step into
    several blocks, and a and g are read by the reverses of more than one of them."""
    total = 0.0
    for i in range(x.shape[0]):
        a = x[i] * w[0] + w[1]
        g = 1.0 / (1.0 + math.exp(-a))
        h = math.tanh(a) / (1.5 + g * a)
        total += a * g + h * a * g
    return total


def hidden_layer(W, x):
    """An MLP's hidden layer: a temporary filled once, then read per (k, i)."""
    h = np.empty(W.shape[1])
    for i in range(W.shape[1]):
        h[i] = math.tanh(x[i])
    loss = 0.0
    for k in range(W.shape[0]):
        o = 0.0
        for i in range(W.shape[1]):
            o += W[k, i] * h[i]
        loss += o * o
    return loss


def refilled_temporary(x, w):
    """A temporary read (by sin) before it is filled again, and read again after."""
    t = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        t[i] = x[i] * w[0]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(t[i])
    for i in range(x.shape[0]):
        t[i] = t[i] * t[i] + w[1]
    for i in range(x.shape[0]):
        s += t[i] * t[i]
    return s


KERNELS = {
    "heat_swap": Kernel(
        "heat_swap", heat_swap,
        lambda rng: (rng.standard_normal((6, 5)), rng.standard_normal((6, 5)), 0.15, 3),
        outputs=(0, 1), tags=frozenset({"nested-loop", "array2d", "output", "int-arg"})),
    "packed_triangle": Kernel(
        "packed_triangle", packed_triangle,
        lambda rng: (0.3 * rng.standard_normal(4 + 6), rng.standard_normal((3, 4)),
                     np.zeros(4)),
        outputs=(2,), tags=frozenset({"nested-loop", "array2d", "math", "output"})),
    "matmul_loss": Kernel(
        "matmul_loss", matmul_loss,
        lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), np.zeros((3, 5))),
        outputs=(2,), tags=frozenset({"nested-loop", "array2d", "output"})),
    "read_then_overwrite": Kernel(
        "read_then_overwrite", read_then_overwrite,
        lambda rng: (rng.standard_normal(6), rng.standard_normal(6)),
        outputs=(1,), tags=frozenset({"loop", "math", "output"})),
    "temporaries_triangle": Kernel(
        "temporaries_triangle", temporaries_triangle,
        lambda rng: (0.3 * rng.standard_normal(4 + 6), rng.standard_normal(4),
                     rng.standard_normal((3, 4))),
        tags=frozenset({"nested-loop", "array2d", "math", "alloc"})),
    "sin_squared": Kernel(
        "sin_squared", sin_squared, lambda rng: (rng.uniform(-2, 2, 7),),
        tags=frozenset({"loop", "math"})),
    "stale_temporary": Kernel(
        "stale_temporary", stale_temporary, lambda rng: (rng.standard_normal(5), 3),
        tags=frozenset({"nested-loop", "branch", "math", "alloc", "int-arg"})),
    "packed_rows": Kernel(
        "packed_rows", packed_rows,
        lambda rng: (0.3 * rng.standard_normal(4 + 6), rng.standard_normal(3),
                     0.5 * rng.standard_normal((3, 4)), np.zeros(4)),
        outputs=(3,), tags=frozenset({"nested-loop", "array2d", "math", "output"})),
    "packed_rows_empty": Kernel(
        "packed_rows_empty", packed_rows,
        lambda rng: (np.zeros(0), rng.standard_normal(3), np.zeros((3, 0)), np.zeros(0)),
        outputs=(3,), tags=frozenset({"nested-loop", "array2d", "math", "output"})),
    "growing_rows": Kernel(
        "growing_rows", growing_rows,
        lambda rng: (rng.standard_normal(10), rng.standard_normal(5)),
        tags=frozenset({"nested-loop", "math"})),
    "gathered_rows": Kernel(
        "gathered_rows", gathered_rows,
        lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal((4, 2)),
                     np.array([[0, 1], [2, 3], [-2, 0], [1, -1], [0, 2]])),
        tags=frozenset({"loop", "array2d", "math", "branch"})),
    "gated_cells": Kernel(
        "gated_cells", gated_cells,
        lambda rng: (0.5 * rng.standard_normal(2), rng.standard_normal(6)),
        tags=frozenset({"loop", "math"})),
    "hidden_layer": Kernel(
        "hidden_layer", hidden_layer,
        lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal(4)),
        tags=frozenset({"nested-loop", "array2d", "math", "alloc"})),
    "refilled_temporary": Kernel(
        "refilled_temporary", refilled_temporary,
        lambda rng: (rng.standard_normal(5), rng.standard_normal(2)),
        tags=frozenset({"loop", "math", "alloc"})),
    "row_weights": Kernel(
        "row_weights", row_weights,
        lambda rng: (rng.standard_normal((3, 4)), 0.5 * rng.standard_normal(3)),
        tags=frozenset({"nested-loop", "array2d", "math"})),
}

TYPES = {"heat_swap": ("dup,dup,const,const", "float64[:, ::1], float64[:, ::1], float64, int64"),
         "packed_triangle": ("dup,const,dup", "float64[::1], float64[:, ::1], float64[::1]"),
         "row_weights": ("dup,dup", "float64[:, ::1], float64[::1]"),
         "hidden_layer": ("dup,dup", "float64[:, ::1], float64[::1]"),
         "refilled_temporary": ("dup,dup", "float64[::1], float64[::1]"),
         "gated_cells": ("dup,dup", "float64[::1], float64[::1]"),
         "gathered_rows": ("dup,dup,const", "float64[:, ::1], float64[:, ::1], int64[:, ::1]"),
         "temporaries_triangle": ("dup,dup,const",
                                  "float64[::1], float64[::1], float64[:, ::1]"),
         "sin_squared": ("dup", "float64[::1]"),
         "stale_temporary": ("dup,const", "float64[::1], int64"),
         "growing_rows": ("dup,dup", "float64[::1], float64[::1]"),
         "packed_rows": ("dup,dup,const,dup",
                         "float64[::1], float64[::1], float64[:, ::1], float64[::1]"),
         "packed_rows_empty": ("dup,dup,const,dup",
                               "float64[::1], float64[::1], float64[:, ::1], float64[::1]"),
         "matmul_loss": ("dup,dup,dup", "float64[:, ::1], float64[:, ::1], float64[:, ::1]"),
         "read_then_overwrite": ("dup,dup", "float64[::1], float64[::1]")}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_derivatives_match_finite_differences(name):
    check_all(KERNELS[name], width=0)


def inspection_of(name):
    return inspected(KERNELS[name].fn, *TYPES[name])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_report_is_what_the_derivative_pushes(name):
    ins = inspection_of(name)
    assert report_counts(ins.tape) == observed_counts(ins.text("canonical"), ins.spec)
    assert taped_bytes(ins.derivative) == ins.tape.bytes_by_block()


def test_swapped_buffers_tape_their_shadows_once_per_time_step():
    """Nothing is pushed per grid point: the shadows of the swapped pointers (and their
    row strides) are taped at the exit of the row loop, once per step; indices are
    recomputed from the induction variables."""
    report = inspection_of("heat_swap").tape
    stencil = [l.header for l in report.loops if l.depth == 3]
    assert len(stencil) == 1 and not any(e.loops[-1:] == (stencil[0],) for e in report.taped)
    hoisted = [e for e in report.taped if e.reason.startswith("invariant in loop")]
    assert {e.what for e in hoisted} == {Need.SHADOW, Need.VALUE}
    assert all(len(e.loops) == 1 for e in hoisted)           # in the time loop only
    text = inspection_of("heat_swap").text("tape")
    assert "invariant in loop" in text
    assert "; placement (cheapest first):\n;   1. direct: " in text       # the cost model
    assert ";   5. hoist: values invariant in the loops around the use" in text


def test_triangular_loop_pushes_nothing_per_inner_iteration():
    """The packed-triangle read icf[idx] is reloaded (icf is never written); idx is rebuilt
    from the triangular loop's counter and its start, which the row loop's reverse rebuilds
    backwards (each row adds the triangular loop's trip count): one slot per run of the row
    loop, its value after the last row."""
    report = inspection_of("packed_triangle").tape
    inner = [l for l in report.loops if l.depth == 3]
    assert len(inner) == 1 and not any(inner[0].header in e.loops for e in report.taped)
    rows = inner[0].parent
    [after] = [e for e in report.taped if e.reason.endswith("rebuilt backwards by its reverse")]
    assert after.loops[-1] != rows and f"after loop {rows}," in after.reason
    assert any(e.kind is Retention.RECURRENCE and e.loops[-1] == inner[0].header
               for e in report.recomputed)


def test_reads_of_a_filled_temporary_are_rebuilt_from_its_fill():
    """xc[j] is read after the loop that filled it with x[i, j] - means[j]: the reads become
    that expression again (x and means are never written, so the reverse reloads them), and
    xc's stores, read by nobody now, go. What is left per row: qxc[j] (accumulated in the
    triangular loop) for the squared norm; the packed index once per row i (rebuilt
    backwards over j). exp(icf[j]), the same for every row, is kept in a table of d slots
    (`tables.py`). Nothing per (j, l)."""
    ins = inspection_of("temporaries_triangle")
    report = ins.tape
    [triangular] = [l for l in report.loops if l.depth == 3]
    assert not any(triangular.header in e.loops for e in report.taped)
    assert sorted(e.reason.split(" ")[1 if e.type == "i64" else 0] for e in report.taped) == [
        "after", "operands"]
    [tabled] = report.tabled
    assert tabled.reason.startswith("result of llvm.exp")
    assert str(report.table_bytes(tabled)) == "8 * x.shape[1]"
    assert len([line for line in ins.text("canonical").splitlines()
                if line.lstrip().startswith("store double")]) == 3   # qxc's two, the result


def test_a_product_of_taped_values_is_recomputed():
    """Without vector math t = sin(x[i]) is taped; the reverse reads t for the adjoint of
    t * t anyway: t * t costs a multiply, not a second slot per element."""
    report = inspected(sin_squared, *TYPES["sin_squared"], vector_math=False).tape
    [taped] = report.taped
    [product] = [e for e in report.recomputed if e.reason.startswith("operand 1 of fmul")]
    assert taped.reason == f"operand of recomputed {product.value}"


@pytest.mark.skipif(not libmvec_variants(), reason="no libmvec on this host")
def test_streamed_math_is_recomputed_with_vector_math():
    """With vector math sin(x[i]) is recomputed in the reverse loop (vectorised, libmvec):
    nothing is taped. In row_weights sin(A[i, j]) is recomputed too (it varies with both
    loops); exp(w[i]), computed outside the inner loop, is what stays taped, per row."""
    assert not inspection_of("sin_squared").tape.taped
    taped = inspection_of("row_weights").tape.taped
    assert len({e.value for e in taped}) == 1 and "llvm.exp" in taped[0].reason


@pytest.mark.parametrize("name", ["heat_swap", "temporaries_triangle", "matmul_loss"])
def test_the_merge_after_a_guarded_loop_is_decided_by_the_guard(name):
    """A loop that may run zero times is guarded; the block after it is entered from the
    guard or from the loop's exit. The reverse asks the guard's condition again instead of
    taping which way it went (one slot per run of the enclosing loop before)."""
    report = inspection_of(name).tape
    assert not [e for e in report.taped if e.what is Need.CHOICE]
    assert any(e.block.endswith("loopexit") for e in report.choices)


def test_a_merge_of_three_predecessors_is_decided_by_the_guards():
    """The block after two guarded loops is entered from the first guard (d <= 0), the
    second guard or the second loop's exit: the reverse asks the two guards' conditions
    (GMM's per-(i, k) choice slot)."""
    report = inspection_of("packed_rows").tape
    assert not [e for e in report.taped + report.spilled if e.what is Need.CHOICE]
    merges = {e.block for e in report.choices}
    three = [m for m in merges if sum(e.block == m for e in report.choices) == 2]
    assert three, report.choices


def test_outer_loop_value_taped_once_per_outer_iteration():
    """exp(w[i]) is taped at the inner loop's exit (once per i), not per (i, j)."""
    report = inspection_of("row_weights").tape
    exp_entries = [e for e in report.taped if e.type == "double"
                   and e.reason.startswith("invariant in loop")]
    assert len(exp_entries) == 1
    assert all(len(e.loops) == 1 for e in report.taped if e.value == exp_entries[0].value)


def test_gathered_rows_are_reloaded_through_their_indices():
    """cams[c, :] and X[p, :] are never written: the reverse loads them again through the
    index chain from obs[i, 0] (wraparound and stride: ~10 integer instructions), so only
    one value per observation is taped (y0 after the branch, for sin's derivative)."""
    ins = inspection_of("gathered_rows")
    defined = {line.split(" = ")[0].strip(): line.split(" = ")[1]
               for line in ins.text("canonical").splitlines() if " = " in line}
    [kept] = ins.tape.taped
    assert not defined[kept.value].startswith("load"), kept


def test_values_several_blocks_of_an_iteration_need_are_taped_once():
    """The blocks between the divisions' checks would each tape g = 1 / (1 + exp(-a)) for
    their own reverses; the loop's latch tapes it once and its reverse keeps it in a slot."""
    report = inspection_of("gated_cells").tape
    names = [e.value for e in report.taped if e.type == "double"]
    assert len(names) == len(set(names)) == 5, names


def test_a_sigmoid_keeps_the_exponential_not_its_denominator():
    """g = 1 / (1 + exp(-a)): the reverse keeps exp(-a) for exp's own derivative and rebuilds
    1 + exp(-a), the division's, from it (one slot per element instead of two)."""
    [kept] = [e for e in inspection_of("gated_cells").tape.taped
              if "result of llvm.exp" in e.reason]
    assert "operand of recomputed" in kept.reason


def test_stencil_row_trip_count_recomputed():
    """The stencil's column loop runs max(nx - 2, 0) times (Numba clamps with smax, a pure
    intrinsic): its reverse counter is rebuilt from nx, not taped per row."""
    report = inspection_of("heat_swap").tape
    stencil = [l.header for l in report.loops if l.depth == 3]
    assert len(stencil) == 1
    assert not [e for e in report.taped if e.value == f"{stencil[0]}.iter"]
    assert f"{stencil[0]}.iter" in inspection_of("heat_swap").text("tape")


@pytest.mark.parametrize("name", ["matmul_loss", "heat_swap"])
def test_reads_after_the_last_write_are_reloaded(name):
    """The final sum reads the output (C; for heat, a phi of the swapped buffers) after its
    last write: the reverse reloads it instead of taping one double per element."""
    report = inspection_of(name).tape
    assert not [e for e in report.taped if e.type == "double"]
    assert any(e.kind is Retention.RECOMPUTE and e.type == "double" for e in report.recomputed)


def test_reads_before_a_later_write_are_taped():
    """sin(y[i]) needs y[i] in the reverse, but y is overwritten after the read."""
    report = inspection_of("read_then_overwrite").tape
    assert [e.reason.split(" %")[0] for e in report.taped if e.type == "double"
            and "llvm.sin" in e.reason] == ["operand 0 of llvm.sin"]


def test_a_temporary_alive_until_its_reverse_is_reloaded():
    """h lives until the reverse of its allocation (kept between calls), and nothing writes
    it after the reads: the reverse of o += W[k, i] * h[i] reloads h[i]; only o is taped."""
    report = inspection_of("hidden_layer").tape
    assert [(e.type, len(e.loops)) for e in report.taped] == [("double", 1)]   # o, per k
    assert report.taped[0].reason.startswith("operands 0, 1 of fmul")            # o * o


def test_reads_of_a_temporary_before_its_refill_are_taped():
    """sin(t[i]) and the refill's t[i] * t[i] read t before it is written again: taped; the
    last loop's t[i] * t[i] reads it after its last write: reloaded."""
    report = inspection_of("refilled_temporary").tape
    lines, first = inspect.getsourcelines(refilled_temporary)
    sin, refill, last = (first + next(i for i, src in enumerate(lines) if code in src)
                         for code in ("math.sin(t[i])", "t[i] = t[i] *", "s += t[i] *"))
    taped = sorted(int(e.source.rsplit(":", 1)[1]) for e in report.taped if e.type == "double")
    assert taped == [sin, refill] and last not in taped


def test_split_halves_tape_what_the_caller_may_overwrite():
    """Between the two halves the caller may write C: the split derivative keeps the values
    the reverse needs instead of reloading them."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    fwd, rev = derive_diff(matmul_loss, "d_matmul_split", ("dup", "dup", "dup"), mode="split")
    once = derive_diff(matmul_loss, "d_matmul_once", ("dup", "dup", "dup"))
    grads = []
    for split in (True, False):
        dA, dB, C, dC = np.zeros_like(A), np.zeros_like(B), np.zeros((3, 5)), np.zeros((3, 5))
        if split:
            _, tape = fwd(A, dA, B, dB, C, dC)
            C[:] = 7.0
            rev(A, dA, B, dB, C, dC, 1.0, tape)
        else:
            once(A, dA, B, dB, C, dC)
        grads.append((dA, dB))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-13)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-13)
    np.testing.assert_allclose(grads[1][0], 2 * (A @ B) @ B.T, rtol=1e-12)
