"""Compile time: `derive_diff` + first call against Numba's own compile of the primal.

Run:  python examples/benchmarks/bench_compile.py [--profile KERNEL]

Not a test: it prints one table (process CPU seconds; one measurement each, after a warm-up
compile so that Numba's one-time initialisation is charged to nobody). Kernels: a GMM-like
objective (log-sum-exp over components of a Mahalanobis term with a lower-triangular factor),
an RK4 integrator of a small ODE, and a plain loop. The `cached` column is the reverse derive
+ first call with `cache=True` in a second process, the first having filled a fresh cache
directory. `--profile KERNEL` prints the cProfile of that kernel's reverse derive + first
call instead (top 45 by cumulative time).
"""
from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import subprocess
import sys
import tempfile
import time

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff


def gmm_like(alphas, means, icf, x):
    n, d = x.shape
    k_count = means.shape[0]
    xc = np.empty(d)
    qxc = np.empty(d)
    total = 0.0
    for i in range(n):
        best = -1e300
        acc = 0.0
        for k in range(k_count):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
            s = 0.0
            for j in range(d):
                v = math.exp(icf[k, j]) * xc[j]
                for m in range(j):
                    v += icf[k, d + (j * (j - 1)) // 2 + m] * xc[m]
                qxc[j] = v
                s += v * v
            logit = alphas[k] - 0.5 * s
            if logit > best:
                acc = acc * math.exp(best - logit) + 1.0
                best = logit
            else:
                acc += math.exp(logit - best)
        total += best + math.log(acc)
    return total


def rk4(y0, p, dt, steps):
    y = y0.copy()
    k1 = np.empty_like(y)
    k2 = np.empty_like(y)
    k3 = np.empty_like(y)
    k4 = np.empty_like(y)
    tmp = np.empty_like(y)
    for _ in range(steps):
        rhs(y, p, k1)
        for i in range(y.shape[0]):
            tmp[i] = y[i] + 0.5 * dt * k1[i]
        rhs(tmp, p, k2)
        for i in range(y.shape[0]):
            tmp[i] = y[i] + 0.5 * dt * k2[i]
        rhs(tmp, p, k3)
        for i in range(y.shape[0]):
            tmp[i] = y[i] + dt * k3[i]
        rhs(tmp, p, k4)
        for i in range(y.shape[0]):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    s = 0.0
    for i in range(y.shape[0]):
        s += y[i] * y[i]
    return s


@numba.njit
def rhs(y, p, out):
    out[0] = p[0] * y[0] - p[1] * y[0] * y[1]
    out[1] = p[2] * y[0] * y[1] - p[3] * y[1]


def small_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    return s


def kernels():
    rng = np.random.default_rng(0)
    d, k, n = 10, 25, 100
    gmm = (rng.standard_normal(k), rng.standard_normal((k, d)),
           0.1 * rng.standard_normal((k, d + d * (d - 1) // 2)), rng.standard_normal((n, d)))
    return {
        "gmm": (gmm_like, gmm, ("dup", "dup", "dup", "const")),
        "rk4": (rk4, (np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.1, 0.4]), 0.01, 100),
                ("dup", "dup", "const", "const")),
        "loop": (small_loop, (np.linspace(0.0, 1.0, 100),), ("dup",)),
    }


def shadows(args, acts, mode):
    out = []
    for a, act in zip(args, acts):
        out.append(a)
        if act == "dup":
            out.append(np.ones_like(a) if mode == "forward" else np.zeros_like(a))
    return out


def timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def derive_and_call(f, args, acts, mode, tag, cache=False):
    d = derive_diff(f, f"d_{f.__name__}_{mode}_{tag}", acts, mode=mode, cache=cache)
    d(*shadows(args, acts, mode))


def cached_seconds(name: str) -> float:
    """Reverse derive + first call of kernel `name` with `cache=True` in a second process
    (the first one fills a fresh cache directory)."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, NUMBA_CACHE_DIR=folder)
        for _ in range(2):
            out = subprocess.run([sys.executable, __file__, "--cached-run", name], env=env,
                                 capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=("gmm", "rk4", "loop"))
    ap.add_argument("--sort", default="cumulative")
    ap.add_argument("--cached-run", help=argparse.SUPPRESS)
    args = ap.parse_args()
    numba.njit(lambda x: x + 1.0)(1.0)               # Numba's one-time initialisation
    if args.cached_run:
        f, fargs, acts = kernels()[args.cached_run]
        print(timed(lambda: derive_and_call(f, fargs, acts, "reverse", "c", cache=True)))
        return 0
    derive_and_call(small_loop, (np.ones(3),), ("dup",), "reverse", "warm")
    if args.profile:
        f, fargs, acts = kernels()[args.profile]
        prof, sort = cProfile.Profile(), args.sort
        prof.runcall(derive_and_call, f, fargs, acts, "reverse", "prof")
        pstats.Stats(prof).sort_stats(sort).print_stats(45)
        return 0
    rows = []
    for name, (f, fargs, acts) in kernels().items():
        numba_s = timed(lambda: numba.njit(f)(*fargs))
        rev = timed(lambda: derive_and_call(f, fargs, acts, "reverse", "t"))
        fwd = timed(lambda: derive_and_call(f, fargs, acts, "forward", "t"))
        rows.append((name, numba_s, rev, fwd, cached_seconds(name)))
    print(f"{'kernel':8} {'numba':>8} {'reverse':>8} {'x':>6} {'forward':>8} {'x':>6} "
          f"{'cached':>8} {'x':>6}")
    for name, numba_s, rev, fwd, hit in rows:
        print(f"{name:8} {numba_s:8.2f} {rev:8.2f} {rev / numba_s:6.2f} {fwd:8.2f} "
              f"{fwd / numba_s:6.2f} {hit:8.3f} {hit / numba_s:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
