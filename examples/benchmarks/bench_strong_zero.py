"""What `strong_zero=True` costs: derivative time with it over without, on bench_kernels' kernels.

Run:  python examples/benchmarks/bench_strong_zero.py [--repeats N] [--only NAME]

Not a test: it prints one table. Each row times the reverse and the forward derivative of one
kernel with and without `strong_zero` interleaved in one run (min of repeats, warm-up calls
excluded; the same timing as bench_kernels.py) and prints with/without for each mode. Before
timing, the gradients and tangents with and without the option are compared (these kernels
never multiply a zero by an infinite partial, so they must agree to rounding); the script
exits non-zero when they do not, never because of a timing.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff

from bench_kernels import _cases, _fresh, _with_shadows, min_times
from _timing import machine_note, table


def derivatives(p, name: str, acts: tuple, strong_zero: bool):
    """(reverse, forward) derivatives of `p`."""
    tag = "sz" if strong_zero else "plain"
    rev = derive_diff(p, f"rev_{tag}_{name}", acts, return_primal=True, strong_zero=strong_zero)
    fwd = derive_diff(p, f"fwd_{tag}_{name}", acts, mode="forward", strong_zero=strong_zero)
    return rev, fwd


def results(rev, fwd, args, dup, tangents) -> list[np.ndarray]:
    """The gradients and the forward tangent, flattened."""
    grads = {i: np.zeros_like(args[i]) for i in dup}
    rev(*_with_shadows(_fresh(args), dup, grads))
    _, tan = fwd(*_with_shadows(_fresh(args), dup, {i: t.copy() for i, t in tangents.items()}))
    return [grads[i].ravel() for i in sorted(dup)] + [np.atleast_1d(tan)]


def measure(case, rng, repeats: int):
    name, fn, args, diff, scratch, _ = case
    dup = set(diff) | set(scratch)
    acts = tuple("dup" if i in dup else "const" for i in range(len(args)))
    p = numba.njit(fn)
    plain, strong = (derivatives(p, fn.__name__, acts, s) for s in (False, True))
    tangents = {i: (rng.standard_normal(args[i].shape) if i in diff
                    else np.zeros_like(args[i])) for i in dup}
    a, b = (results(*d, args, dup, tangents) for d in (plain, strong))
    diff_rel = max(float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(x))), 1e-300)
                   for x, y in zip(a, b))
    rargs = _with_shadows(args, dup, {i: np.zeros_like(args[i]) for i in dup})
    fargs = _with_shadows(args, dup, {i: np.ones_like(args[i]) for i in dup})
    fns = [lambda: plain[0](*rargs), lambda: strong[0](*rargs),
           lambda: plain[1](*fargs), lambda: strong[1](*fargs)]
    rp, rs, fp, fs = min_times(fns, repeats)
    ok = diff_rel < 1e-12
    row = [name, f"{rs / rp:.3f}x", f"{fs / fp:.3f}x",
           "ok" if ok else f"DIFFERENT {diff_rel:.1e}"]
    return row, (rs / rp, fs / fp), not ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", default=None, help="run the kernels whose name contains this")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows, ratios, wrong = [], [], False
    for case in _cases(rng):
        if args.only and args.only.lower() not in case[0].lower():
            continue
        row, ratio, bad = measure(case, rng, args.repeats)
        rows.append(row)
        ratios.append(ratio)
        wrong |= bad
        print(f"  measured: {case[0]}", file=sys.stderr)
    print(f"strong_zero=True / strong_zero=False, derivative time (min of {args.repeats})")
    print(f"  {machine_note()}\n")
    print(table(["kernel", "reverse", "forward", "same result"], rows))
    if ratios:
        for k, mode in enumerate(("reverse", "forward")):
            g = math.exp(sum(math.log(r[k]) for r in ratios) / len(ratios))
            print(f"geomean {mode}: {g:.3f}x")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
