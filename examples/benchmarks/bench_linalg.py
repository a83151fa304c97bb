"""Reverse mode through matrix products (`@`: Numba's BLAS gemv/gemm) and a linear solve
(np.linalg.solve: LAPACK gesv): time of the gradient relative to the primal and to the same
gradient written by hand with BLAS/LAPACK calls.

Run:  python examples/benchmarks/bench_linalg.py [--repeats N] [--sizes 64,128,256,512]

Not a test: it prints a table, one row per (function, n). "grad/primal" is the reverse-mode
derivative (`return_primal=True`: value and gradient) over the Numba primal (target <= 3x);
"grad/hand" is the derivative over a hand-written Numba gradient of the same loss whose
products are np.dot calls (BLAS), that is what the pass's BLAS rules should match (target
<= 1.3x). Every derivative is checked against the hand-written gradient before timing.

  least_squares  sum((A @ x - b)**2), A n x n, gradient for A and x (gemv)
  mlp            sum(tanh(W2 @ tanh(W1 @ x + b1) + b2)), all weights and x (gemv)
  mlp_batch      sum(tanh(W2 @ tanh(W1 @ X))), X n x n, all three (gemm)
  solve          sum(solve(A, b)**2), A n x n, gradient for A and b (gesv; the derivative
                 reuses the LU factors, the hand-written one solves with A.T again)

BLAS runs single-threaded (OPENBLAS_NUM_THREADS=1 unless set) so CPU time is run time.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

import enzyme_py  # noqa: E402,F401  (import before compiling, see README)
from enzyme_py import derive_diff  # noqa: E402

from _timing import compare, machine_note, table  # noqa: E402

TARGET_PRIMAL, TARGET_HAND = 3.0, 1.3


def least_squares(A, x, b):
    return np.sum((A @ x - b) ** 2)


def mlp(W1, b1, W2, b2, x):
    return np.sum(np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2))


def mlp_batch(W1, W2, X):
    return np.sum(np.tanh(W2 @ np.tanh(W1 @ X)))


def solve(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2)


@numba.njit
def _outer_into(d, g, x):
    """d += g x^T as a BLAS gemm with k = 1 (what np.outer would do with a loop)."""
    d += np.dot(g.reshape(-1, 1), x.reshape(1, -1))


@numba.njit
def least_squares_hand(A, dA, x, dx, b):
    r = np.dot(A, x) - b
    g = 2.0 * r
    dx += np.dot(A.T, g)
    _outer_into(dA, g, x)
    return np.sum(r * r)


@numba.njit
def mlp_hand(W1, dW1, b1, db1, W2, dW2, b2, db2, x, dx):
    h = np.tanh(np.dot(W1, x) + b1)
    o = np.tanh(np.dot(W2, h) + b2)
    g2 = 1.0 - o * o
    _outer_into(dW2, g2, h)
    db2 += g2
    g1 = np.dot(W2.T, g2) * (1.0 - h * h)
    _outer_into(dW1, g1, x)
    db1 += g1
    dx += np.dot(W1.T, g1)
    return np.sum(o)


@numba.njit
def mlp_batch_hand(W1, dW1, W2, dW2, X, dX):
    H = np.tanh(np.dot(W1, X))
    O = np.tanh(np.dot(W2, H))
    G2 = 1.0 - O * O
    dW2 += np.dot(G2, H.T)
    G1 = np.dot(W2.T, G2) * (1.0 - H * H)
    dW1 += np.dot(G1, X.T)
    dX += np.dot(W1.T, G1)
    return np.sum(O)


@numba.njit
def solve_hand(A, dA, b, db):
    x = np.linalg.solve(A, b)
    g = np.linalg.solve(A.T, 2.0 * x)
    db += g
    _outer_into(dA, -g, x)
    return np.sum(x * x)


def _problem(name, n, rng):
    """(primal, hand-written gradient, primal args, activities)."""
    s = 1.0 / np.sqrt(n)
    if name == "least_squares":
        args = (rng.standard_normal((n, n)) * s, rng.standard_normal(n), rng.standard_normal(n))
        return least_squares, least_squares_hand, args, ("dup", "dup", "const")
    if name == "mlp":
        args = (rng.standard_normal((n, n)) * s, rng.standard_normal(n),
                rng.standard_normal((n, n)) * s, rng.standard_normal(n), rng.standard_normal(n))
        return mlp, mlp_hand, args, ("dup",) * 5
    if name == "solve":
        args = (rng.standard_normal((n, n)) * s + 2.0 * np.eye(n), rng.standard_normal(n))
        return solve, solve_hand, args, ("dup", "dup")
    args = (rng.standard_normal((n, n)) * s, rng.standard_normal((n, n)) * s,
            rng.standard_normal((n, n)))
    return mlp_batch, mlp_batch_hand, args, ("dup",) * 3


def _with_shadows(args, acts):
    return [a for v, act in zip(args, acts)
            for a in ((v, np.zeros_like(v)) if act == "dup" else (v,))]


_DERIVED: dict = {}


def _row(name, n, repeats, rng):
    fn, hand, args, acts = _problem(name, n, rng)
    primal = numba.njit(fn)
    if name not in _DERIVED:
        _DERIVED[name] = derive_diff(primal, f"d_{name}", acts, return_primal=True)
    d = _DERIVED[name]
    ours, theirs = _with_shadows(args, acts), _with_shadows(args, acts)
    _check(d(*ours)[0], ours, hand(*theirs), theirs, primal(*args), name)
    t_primal, t_grad, t_hand = compare([lambda: primal(*args), lambda: d(*ours),
                                        lambda: hand(*theirs)], repeats=repeats)
    r1, r2 = t_grad / t_primal, t_grad / t_hand
    ok = "PASS" if r1 <= TARGET_PRIMAL and r2 <= TARGET_HAND else "miss"
    return [name, n, f"{t_primal * 1e6:.1f}", f"{t_grad * 1e6:.1f}", f"{t_hand * 1e6:.1f}",
            f"{r1:.2f}x", f"{r2:.2f}x", ok]


def _check(value, ours, hand_value, theirs, primal_value, name):
    """One call of ours against one of the hand-written gradient (value and shadows)."""
    assert np.isclose(value, primal_value) and np.isclose(hand_value, primal_value), name
    for got, want in zip(ours, theirs):
        assert np.allclose(got, want, rtol=1e-8, atol=1e-10), f"{name}: wrong gradient"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--sizes", default="64,128,256,512")
    opts = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = [_row(name, n, opts.repeats, rng)
            for name in ("least_squares", "mlp", "mlp_batch", "solve")
            for n in (int(s) for s in opts.sizes.split(","))]
    print(table(["function", "n", "primal us", "grad us", "hand us", "grad/primal",
                 "grad/hand", f"<= {TARGET_PRIMAL}x, {TARGET_HAND}x"], rows))
    print(machine_note())


if __name__ == "__main__":
    main()
