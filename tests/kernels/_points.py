"""Point generators for ``make_args``: keep arguments inside valid domains and away from
points of non-differentiability (branch thresholds, |x| at 0, floor at integers), so finite
differences and derivatives agree."""
from __future__ import annotations

import numpy as np


def u(rng: np.random.Generator, lo: float, hi: float) -> float:
    """A Python float (typed float64 by Numba) uniform in [lo, hi)."""
    return float(rng.uniform(lo, hi))


def uvec(rng: np.random.Generator, lo: float, hi: float, *shape: int,
         dtype: type = np.float64) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def signed(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Magnitude in [lo, hi), random sign: stays >= lo away from 0."""
    return float(rng.uniform(lo, hi) * rng.choice((-1.0, 1.0)))


def signed_vec(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return rng.uniform(lo, hi, size=n) * rng.choice((-1.0, 1.0), size=n)


def off_integer(rng: np.random.Generator, lo: int, hi: int, margin: float = 0.15) -> float:
    """A value in [lo, hi) whose fractional part lies in [margin, 1 - margin)."""
    return float(rng.integers(lo, hi) + rng.uniform(margin, 1.0 - margin))


def separated(rng: np.random.Generator, n: int, lo: float, hi: float, gap: float
              ) -> np.ndarray:
    """n values in [lo, hi), in random order, pairwise at least ``gap`` apart."""
    while True:
        v = rng.uniform(lo, hi, size=n)
        if n < 2 or np.min(np.diff(np.sort(v))) >= gap:
            return v


def until(rng: np.random.Generator, draw, ok, tries: int = 10_000):
    """Redraw ``draw(rng)`` until ``ok(value)``; deterministic given the generator."""
    for _ in range(tries):
        v = draw(rng)
        if ok(v):
            return v
    raise RuntimeError("no acceptable point found")
