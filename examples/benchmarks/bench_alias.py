"""Alias information: the matmul loop nest's reverse sweep, vectorised or not.

Run:  python examples/benchmarks/bench_alias.py [--n N] [--repeats N] [--clock cpu|wall]

Not a test: it prints one table. The kernel is `C[m, n] += A[m, k] * B[k, n]` (n innermost)
written with loops. The derivative's call checks guarantee that arrays it writes share no
memory with any other array argument; the derivative states it to LLVM (`noalias` on the data
pointers of its array arguments), so the reverse sweep's inner loop
(`dA[m, k] += dC[m, n] * B[k, n]`, `dB[k, n] += A[m, k] * dC[m, n]`) can be vectorised.
Printed: primal and derivative times, their ratio, and the number of lines of the optimised
derivative (`inspect("optimized")`) holding a vector type. The gradient is checked against
the analytic one first (exit 1 if wrong).
"""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff

from _timing import compare, fmt_time, machine_note, set_clock, table

VECTOR = re.compile(r"<\d+ x (double|float|i\d+|ptr)>")


def matmul(A, B, C):
    for m in range(A.shape[0]):
        for k in range(A.shape[1]):
            for n in range(B.shape[1]):
                C[m, n] += A[m, k] * B[k, n]


def vector_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if VECTOR.search(line))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = ap.parse_args()
    set_clock(args.clock)
    n = args.n
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    C = np.zeros((n, n))
    dA, dB, dC = np.zeros_like(A), np.zeros_like(B), np.ones_like(C)
    primal = numba.njit(matmul)
    d = derive_diff(matmul, "d_matmul", ("dup", "dup", "dup"))
    d(A, dA, B, dB, C, dC)
    ok = np.allclose(dA, np.ones((n, n)) @ B.T) and np.allclose(dB, A.T @ np.ones((n, n)))
    if not ok:
        print("wrong gradient of matmul", file=sys.stderr)

    def run_d():
        dC[:] = 1.0
        d(A, dA, B, dB, C, dC)

    def run_p():
        dC[:] = 1.0     # the same copy, so that both sides pay it
        primal(A, B, C)

    tp, td = compare([run_p, run_d], args.repeats)
    print(f"n = {n}; {machine_note()}")
    print(table(["kernel", "primal", "reverse", "x primal", "vector lines (primal / reverse)"],
                [["matmul loops", fmt_time(tp), fmt_time(td), f"{td / tp:.2f}",
                  f"{vector_lines(primal.inspect_llvm(primal.signatures[0]))} / "
                  f"{vector_lines(d.enzyme.inspect('optimized'))}"]]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
