"""Point generators for the numpy sweep: each returns a function ``rng -> tuple of args``.

Points avoid non-differentiable places: values in (0.2, 0.9) suit log, sqrt, arcsin and
friends; ``distinct`` values are pairwise >= 0.05 apart (sort, max, median, clip thresholds);
matrices for linear algebra are well conditioned (diagonally dominant or SPD).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tests.kernels._points import separated

Point = Callable[[np.random.Generator], tuple]

N = 6          # vector length
SHAPE = (3, 4)  # matrix shape for non-square matrices


def vec(rng: np.random.Generator, n: int = N, lo: float = 0.2, hi: float = 0.9
        ) -> np.ndarray:
    return rng.uniform(lo, hi, size=n)


def distinct(rng: np.random.Generator, n: int = N) -> np.ndarray:
    """n values in (0.1, 0.95), pairwise >= 0.05 apart and >= 0.02 from 0.3, 0.5, 0.7."""
    while True:
        v = separated(rng, n, 0.1, 0.95, 0.05)
        if np.min(np.abs(v[:, None] - np.array([0.3, 0.5, 0.7]))) >= 0.02:
            return v


def mat(rng: np.random.Generator, shape: tuple[int, int] = SHAPE, lo: float = 0.2,
        hi: float = 0.9) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape)


def distinct_mat(rng: np.random.Generator, shape: tuple[int, int] = SHAPE) -> np.ndarray:
    return distinct(rng, shape[0] * shape[1]).reshape(shape)


def square(rng: np.random.Generator, n: int = 3) -> np.ndarray:
    """Diagonally dominant, far from singular."""
    return rng.uniform(-0.5, 0.5, size=(n, n)) + n * np.eye(n)


def spd(rng: np.random.Generator, n: int = 3) -> np.ndarray:
    """Symmetric positive definite with well separated eigenvalues."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.arange(1.0, n + 1.0) * 1.5) @ q.T


def signed_vec(rng: np.random.Generator, n: int = N) -> np.ndarray:
    """Magnitudes in (0.2, 0.9) with random signs."""
    return rng.uniform(0.2, 0.9, size=n) * rng.choice((-1.0, 1.0), size=n)


def off_thirds(rng: np.random.Generator, n: int = N) -> np.ndarray:
    """Values in (0, 1) whose triple has a fractional part in [0.15, 0.85] (floor(3 x))."""
    return (rng.integers(0, 3, size=n) + rng.uniform(0.15, 0.85, size=n)) / 3.0


def scalar(rng: np.random.Generator, lo: float = 0.2, hi: float = 0.9) -> float:
    return float(rng.uniform(lo, hi))


# -- combinators -------------------------------------------------------------------------


def of(*makers: Callable[[np.random.Generator], object]) -> Point:
    """A point whose arguments come from ``makers`` in order."""
    return lambda rng: tuple(m(rng) for m in makers)


def v(n: int = N, lo: float = 0.2, hi: float = 0.9) -> Callable:
    return lambda rng: vec(rng, n, lo, hi)


def m(shape: tuple[int, int] = SHAPE, lo: float = 0.2, hi: float = 0.9) -> Callable:
    return lambda rng: mat(rng, shape, lo, hi)


def d(n: int = N) -> Callable:
    return lambda rng: distinct(rng, n)


def s(lo: float = 0.2, hi: float = 0.9) -> Callable:
    return lambda rng: scalar(rng, lo, hi)


def const(value: object) -> Callable:
    """A fixed (integer or boolean) argument, copied per call."""
    return lambda rng: np.array(value) if isinstance(value, np.ndarray) else value


X1 = of(v())                       # one vector
X2 = of(v(), v())                  # two vectors
XD = of(d())                       # one vector of distinct values
M1 = of(m())                       # one 3x4 matrix
MD = of(lambda r: distinct_mat(r))  # 3x4 matrix of distinct values
SQ = of(square)                    # one well-conditioned 3x3 matrix
SPD = of(spd)                      # one SPD 3x3 matrix
