"""Vector math: derivative time / primal time with and without glibc's libmvec.

Run:  python examples/benchmarks/bench_vector_math.py [--n N] [--repeats N] [--clock cpu|wall]

Not a test: it prints a table. Per kernel (n = 1e6) and mode, the primal (Numba, which never
calls libmvec), the derivative as compiled by default (`vector_math=True`: loops LLVM
vectorises call `_ZGV...` variants) and with `vector_math=False` (scalar libm) are timed side
by side in one run (interleaved, median of repeats). The last column lists the libmvec
variants the optimised derivative calls: a loop that is not vectorised (a strict floating-point
reduction, a tape push with a capacity check) keeps its scalar calls, so vector math only
speeds up the loops LLVM can vectorise. Before timing, both derivatives are checked against
the analytic gradient / directional derivative (normwise relative error <= 1e-9); the
script exits 1 if one is wrong.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff
from ir_passes.vector_math import libmvec_variants, vector_calls

from _timing import compare, fmt_time, machine_note, set_clock, table
from bench_kernels import logsumexp, sin2x as sinsum


def sinsum_grad(x):
    return 2.0 * np.sin(x) * np.cos(x) * x + np.sin(x) ** 2


def logsumexp_grad(x):
    e = np.exp(x - x.max())
    return e / e.sum()


KERNELS = [("sum(sin(x)**2*x)", sinsum, sinsum_grad), ("logsumexp", logsumexp, logsumexp_grad)]


def calls(mode: str, fn, x, grad, vm: bool):
    """A zero-argument call of the derivative, its gradient error, and its libmvec calls."""
    d = derive_diff(fn, f"{mode}_{fn.__name__}_{vm}", ("dup",), mode=mode, vector_math=vm)
    exact = grad(x)
    if mode == "reverse":
        dx = np.zeros_like(x)
        d(x, dx)
        err = np.linalg.norm(dx - exact) / np.linalg.norm(exact)      # normwise
        call = (lambda: d(x, dx))
    else:
        t = np.linspace(-1.0, 1.0, x.shape[0])
        err = abs(d(x, t)[1] - exact @ t) / np.sum(np.abs(exact * t))   # sums cancel
        call = (lambda: d(x, t))
    return call, float(err), vector_calls(d.enzyme.inspect("optimized"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = ap.parse_args()
    set_clock(args.clock)
    x = np.random.default_rng(0).uniform(-3.0, 3.0, args.n)
    rows, wrong = [], []
    for label, fn, grad in KERNELS:
        primal = numba.njit(fn)
        for mode in ("reverse", "forward"):
            on, err_on, used = calls(mode, fn, x, grad, True)
            off, err_off, _ = calls(mode, fn, x, grad, False)
            for err, what in ((err_on, "vector_math"), (err_off, "scalar")):
                if not err <= 1e-9:
                    wrong.append(f"{label} {mode} ({what}): relative error {err:.2e}")
            tp, t_on, t_off = compare([lambda: primal(x), on, off], repeats=args.repeats)
            rows.append([label, mode, fmt_time(tp), f"{t_off / tp:.2f}", f"{t_on / tp:.2f}",
                         f"{t_off / t_on:.2f}x", " ".join(used) or "-"])
    print(f"n = {args.n}; {machine_note()}; libmvec: "
          f"{'yes' if libmvec_variants() else 'not available (vector math is a no-op)'}")
    print("primal: Numba without libmvec; ratios = derivative time / primal time\n")
    print(table(["kernel", "mode", "primal", "scalar libm", "vector_math", "speed-up",
                 "libmvec calls"], rows))
    for line in wrong:
        print("WRONG GRADIENT:", line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
