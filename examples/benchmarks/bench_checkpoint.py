"""Checkpointed loops (`derive_diff(..., checkpoint=True)`): GMM's reverse with and without.

Prints the tape report's bytes per call (the caller's tape; a checkpointed iteration's own
tape lives only during that iteration's reverse) and the reverse's time over the primal's
(best of `--repeats`), for ADBench GMM d=10, K=25 and n data points.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numba
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from bench_kernels import gmm_objective  # noqa: E402

from enzyme_py import derive_diff  # noqa: E402
from enzyme_py.inspection import inspection  # noqa: E402
from ir_passes.pipeline import Stages  # noqa: E402

_TYPES = "float64[::1], float64[:,::1], float64[:,::1], float64[:,::1], float64, int64"
_ACTS = ("dup", "dup", "dup", "const", "const", "const")


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    d, k, n = 10, 25, a.n
    args = (rng.standard_normal(k), rng.standard_normal((k, d)),
            0.1 * rng.standard_normal((k, d + d * (d - 1) // 2)), rng.standard_normal((n, d)),
            1.0, 0)
    primal = numba.njit(gmm_objective)
    primal(*args)
    t_primal = _best(lambda: primal(*args), a.repeats)
    target = inspection(gmm_objective, _ACTS, types=_TYPES).stages.target
    sizes = {"x.shape[0]": n, "alphas.shape[0]": k, "x.shape[1]": d}
    print(f"GMM d={d} K={k} n={n}; primal {t_primal * 1e3:.2f} ms")
    print(f"{'checkpoint':>10} {'tape/call':>14} {'reverse/primal':>15}")
    grads = {}
    for on in (False, True):
        text = Stages(target, vector_math=True, checkpoint=on).tape_text(sizes)  # as df
        tape = next(l for l in text.splitlines() if "total tape per call" in l)
        df = derive_diff(gmm_objective, None, _ACTS, checkpoint=on)
        shadows = [np.zeros_like(x) for x in args[:3]]
        call = lambda: df(args[0], shadows[0], args[1], shadows[1], args[2], shadows[2],  # noqa: E731
                          *args[3:])
        call()
        grads[on] = [s.copy() for s in shadows]
        t = _best(call, a.repeats)
        print(f"{str(on):>10} {tape.split(':', 1)[1].rsplit('=', 1)[-1].strip():>14} {t / t_primal:>14.2f}x")
    diff = max(float(np.max(np.abs(x - y)) / np.max(np.abs(x)))
               for x, y in zip(grads[False], grads[True]))
    print(f"gradients agree to {diff:.1e} (relative to the largest entry)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
