"""Kernels written the way real codes are written: reverse/primal, forward/primal, tape bytes,
compile time, and ours/JAX.

Run:  python examples/benchmarks/bench_kernels.py [--repeats N] [--only NAME] [--chart PNG]

Not a test: it prints one table (and saves a chart when matplotlib is installed). Each row
times the primal, its reverse-mode derivative and its forward-mode derivative interleaved in
one run (process CPU time, min of repeats, warm-up calls excluded). Before timing, every
gradient is checked against central finite differences and the forward tangent against the
reverse gradient (<J t, w> == <t, J^T w>); the script exits non-zero when a derivative is
wrong, never because of a timing.

Columns: `tape/call` is the tape report's total for the call's sizes (`enzyme-py inspect
--stage tape`, an upper bound: conditional blocks count on every iteration); `compile` is
derive + first call of the reverse derivative over Numba's compile (+ first call) of the
primal; `ours/jax` is our reverse derivative over `jax.jit(jax.grad(f))` of the JAX version
written the natural vectorised way (jax_kernels.py; its gradient is checked against ours),
when JAX is installed (`pip install .[bench]`). JAX's CPU time is the work of all its threads.

Kernels (issue 10): the ADBench GMM objective (full lower-triangular Q, temporaries from
np.empty, the inner triangular loop `range(j + 1, d)`), a 2-D heat stencil swapping its two
buffers (`a, b = b, a`), a matmul loop nest (n innermost), sum(sin(x)**2 * x), logsumexp,
ADBench BA (1000 observations) and LSTM (2 layers, hidden 10, 50 steps), adbench_kernels.py.
"""
from __future__ import annotations

import argparse
import inspect
import math
import os
import sys
import time

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff
from enzyme_py.inspection import inspection

from adbench_kernels import ba_data, ba_objective, lstm_data, lstm_objective
from _chart import save_chart
from _timing import calibrate, fmt_time, machine_note, now, table

# --------------------------------------------------------------------------- kernels


def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m):
    """ADBench GMM: icf[k] holds log-diagonal (d) then the strict lower triangle of Q_k."""
    n, d = x.shape
    K = alphas.shape[0]
    xc = np.empty(d)
    qxc = np.empty(d)
    main_term = np.empty(K)
    sum_qs = np.empty(K)
    for k in range(K):
        s = 0.0
        for j in range(d):
            s += icf[k, j]
        sum_qs[k] = s
    slse = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
            for j in range(d):
                qxc[j] = math.exp(icf[k, j]) * xc[j]
            idx = d
            for j in range(d):
                for l in range(j + 1, d):
                    qxc[l] += icf[k, idx] * xc[j]
                    idx += 1
            sqnorm = 0.0
            for j in range(d):
                sqnorm += qxc[j] * qxc[j]
            main_term[k] = alphas[k] + sum_qs[k] - 0.5 * sqnorm
        mx = main_term[0]
        for k in range(1, K):
            if main_term[k] > mx:
                mx = main_term[k]
        se = 0.0
        for k in range(K):
            se += math.exp(main_term[k] - mx)
        slse += mx + math.log(se)
    amax = alphas[0]
    for k in range(1, K):
        if alphas[k] > amax:
            amax = alphas[k]
    asum = 0.0
    for k in range(K):
        asum += math.exp(alphas[k] - amax)
    lse_alphas = amax + math.log(asum)
    prior = 0.0
    for k in range(K):
        frob = 0.0
        for j in range(d):
            e = math.exp(icf[k, j])
            frob += e * e
        for j in range(d, icf.shape[1]):
            frob += icf[k, j] * icf[k, j]
        prior += 0.5 * wishart_gamma * wishart_gamma * frob - wishart_m * sum_qs[k]
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return constant + slse - n * lse_alphas + prior


def heat_swap(u, v, r, steps):
    """`steps` explicit heat steps ping-ponging between u and v; returns sum of squares."""
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


def matmul_loss(A, B, C):
    """C = A @ B as a loop nest (n innermost); returns sum(C * C)."""
    M, Kd = A.shape
    N = B.shape[1]
    for m in range(M):
        for n in range(N):
            C[m, n] = 0.0
        for k in range(Kd):
            a = A[m, k]
            for n in range(N):
                C[m, n] += a * B[k, n]
    s = 0.0
    for m in range(M):
        for n in range(N):
            s += C[m, n] * C[m, n]
    return s


def sin2x(x):
    s = 0.0
    for i in range(x.shape[0]):
        t = math.sin(x[i])
        s += t * t * x[i]
    return s


def logsumexp(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


# --------------------------------------------------------------------------- cases

def _cases(rng):
    """(name, fn, args, differentiated args, written scratch args (dup, not checked),
    compile-time constant args of the JAX version)."""
    d, K, n = 10, 25, 1000
    gmm = (rng.standard_normal(K), rng.standard_normal((K, d)),
           0.1 * rng.standard_normal((K, d + d * (d - 1) // 2)),
           rng.standard_normal((n, d)), 1.0, 0)
    u = rng.standard_normal((200, 200))
    mm = (rng.standard_normal((64, 64)), rng.standard_normal((64, 64)), np.zeros((64, 64)))
    return [
        ("GMM d=10 K=25 n=1000", gmm_objective, gmm, (0, 1, 2), (), ()),
        ("heat swap 10x 200x200", heat_swap, (u, u.copy(), 0.1, 10), (0,), (1,), (3,)),
        ("matmul 64^3 loop nest", matmul_loss, mm, (0, 1), (2,), ()),
        ("sum(sin(x)^2 x) 1e6", sin2x, (rng.uniform(-2, 2, 1_000_000),), (0,), (), ()),
        ("logsumexp 1e6", logsumexp, (rng.standard_normal(1_000_000),), (0,), (), ()),
        ("BA 1000 observations", ba_objective, ba_data(rng), (0, 1, 2), (), ()),
        ("LSTM 2x10, 50 steps", lstm_objective, lstm_data(rng), (0, 1), (), ()),
    ]


def _with_shadows(args, diff, shadows):
    out = []
    for i, a in enumerate(args):
        out.append(a)
        if i in diff:
            out.append(shadows[i])
    return tuple(out)


def _cpu_seconds(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def build(fn, args, diff, scratch):
    """The primal, reverse and forward derivatives, and compile seconds: Numba's compile (and
    first call) of the primal, derive + first call of the reverse derivative."""
    dup = set(diff) | set(scratch)
    acts = tuple("dup" if i in dup else "const" for i in range(len(args)))
    p = numba.njit(fn)
    numba_s = _cpu_seconds(lambda: p(*_fresh(args)))
    zeros = {i: np.zeros_like(args[i]) for i in dup}
    made = {}

    def derive_and_call():
        made["rev"] = derive_diff(p, f"rev_{fn.__name__}", acts, return_primal=True)
        made["rev"](*_with_shadows(_fresh(args), dup, zeros))
    rev_s = _cpu_seconds(derive_and_call)
    fwd = derive_diff(p, f"fwd_{fn.__name__}", acts, mode="forward")
    return p, made["rev"], fwd, dup, rev_s / numba_s


def tape_bytes(p, fn, args, dup) -> int | None:
    """Bytes the reverse derivative tapes per call, from the tape report (None: unknown)."""
    acts = ",".join("dup" if i in dup else "const" for i in range(len(args)))
    report = inspection(p, acts).tape
    sizes = {}
    for name, a in zip(inspect.signature(fn).parameters, args):
        if isinstance(a, np.ndarray):
            sizes.update({f"{name}.shape[{k}]": s for k, s in enumerate(a.shape)})
        elif isinstance(a, int):
            sizes[name] = a
    total = report.total_bytes()
    return None if total is None else total.evaluate(sizes)
def check(p, rev, fwd, args, diff, dup, rng) -> float:
    """Max relative error of the gradient vs finite differences and vs forward mode."""
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    grads = {i: np.zeros_like(args[i]) for i in dup}
    rev(*_with_shadows(_fresh(args), dup, grads))
    errs = []
    for i in diff:
        a = args[i]
        for idx in [tuple(rng.integers(0, s) for s in a.shape) for _ in range(3)]:
            old, h = a[idx], 1e-6 * max(1.0, abs(a[idx]))
            a[idx] = old + h
            fp = p(*_fresh(args))
            a[idx] = old - h
            fm = p(*_fresh(args))
            a[idx] = old
            fd = (fp - fm) / (2 * h)
            errs.append(abs(fd - grads[i][idx]) / max(abs(fd), 1e-3))
    tangents = {i: (rng.standard_normal(args[i].shape) if i in diff
                    else np.zeros_like(args[i])) for i in dup}
    _, tan = fwd(*_with_shadows(_fresh(args), dup, {i: t.copy() for i, t in tangents.items()}))
    ip = sum(float(np.sum(tangents[i] * grads[i])) for i in diff)
    errs.append(abs(tan - ip) / max(abs(ip), 1e-3))
    return max(errs)


def _fresh(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def min_times(fns, repeats: int) -> list[float]:
    """Min seconds per call of each of `fns`, interleaved, after two warm-up calls."""
    for fn in fns:
        fn()
        fn()
    numbers = [calibrate(fn, 5e-3) for fn in fns]
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for k, (fn, number) in enumerate(zip(fns, numbers)):
            t0 = now()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (now() - t0) / number)
    return best


def jax_gradient(fn, diff, static):
    """`jax.jit(jax.grad)` of the JAX version of `fn`, or None without JAX."""
    try:
        from jax_kernels import jax_gradient as make
    except ImportError:
        return None
    return make(fn.__name__, diff, static)


def check_jax(jgrad, args, rev, dup, diff) -> float:
    """Max relative difference of JAX's gradient from ours."""
    grads = {i: np.zeros_like(args[i]) for i in dup}
    rev(*_with_shadows(_fresh(args), dup, grads))
    theirs = jgrad(*args)
    return max(float(np.max(np.abs(np.asarray(t) - grads[i])) / max(np.max(np.abs(grads[i])),
                                                                    1e-300))
               for i, t in zip(diff, theirs))


def measure(case, rng, repeats: int, use_jax: bool):
    """One table row (and the ratios for the chart); `wrong`: some gradient is."""
    name, fn, kargs, diff, scratch, static = case
    numba.njit(lambda x: x + 1.0)(1.0)               # Numba's one-time initialisation
    p, rev, fwd, dup, compile_x = build(fn, kargs, diff, scratch)
    err = check(p, rev, fwd, kargs, diff, dup, rng)
    jgrad = jax_gradient(fn, diff, static) if use_jax else None
    jerr = check_jax(jgrad, kargs, rev, dup, diff) if jgrad is not None else 0.0
    shadows = {i: np.zeros_like(kargs[i]) for i in dup}
    rargs = _with_shadows(kargs, dup, shadows)
    fargs = _with_shadows(kargs, dup, {i: np.ones_like(kargs[i]) for i in dup})
    fns = [lambda: p(*kargs), lambda: rev(*rargs), lambda: fwd(*fargs)]
    if jgrad is not None:
        fns.append(lambda: [t.block_until_ready() for t in jgrad(*kargs)])
    times = min_times(fns, repeats)
    tp, tr, tf = times[:3]
    vs_jax = tr / times[3] if jgrad is not None else None
    tape = tape_bytes(p, fn, kargs, dup)
    ok = err < 1e-4 and jerr < 1e-8
    verdict = "ok" if ok else f"WRONG {max(err, jerr):.1e}"
    row = [name, fmt_time(tp), f"{tr / tp:.2f}x", f"{tf / tp:.2f}x",
           "?" if tape is None else _fmt_bytes(tape), f"{compile_x:.2f}x",
           "-" if vs_jax is None else f"{vs_jax:.2f}", verdict]
    return row, (tr / tp, tf / tp, vs_jax), not ok


def _fmt_bytes(n: int) -> str:
    for unit, size in (("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--only", default=None, help="run the kernels whose name contains this")
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX column")
    ap.add_argument("--chart", default=os.path.join(os.path.dirname(__file__) or ".",
                                                    "bench_kernels.png"),
                    help="where to save the PNG chart ('' for none)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows, ratios, names, wrong = [], [], [], False
    for case in _cases(rng):
        if args.only and args.only.lower() not in case[0].lower():
            continue
        row, ratio, bad = measure(case, rng, args.repeats, not args.no_jax)
        rows.append(row)
        ratios.append(ratio)
        names.append(case[0])
        wrong |= bad
        print(f"  measured: {case[0]}", file=sys.stderr)
    geomean = math.exp(sum(math.log(r[0]) for r in ratios) / len(ratios)) if ratios else 0.0
    print(f"reverse and forward / primal (min of {args.repeats}, Numba {numba.__version__})")
    print(f"  {machine_note()}\n")
    print(table(["kernel", "primal", "reverse", "forward", "tape/call", "compile", "ours/jax",
                 "check"], rows))
    print(f"\ngeomean reverse/primal: {geomean:.2f}x")
    if args.chart and ratios:
        series = {"reverse/primal": [r[0] for r in ratios],
                  "forward/primal": [r[1] for r in ratios]}
        if any(r[2] is not None for r in ratios):
            series["ours/JAX"] = [r[2] for r in ratios]
        print(save_chart(args.chart, names, series, f"bench_kernels.py ({machine_note()})"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
