"""C front end: derivative time relative to the primal for C kernels, beside the same kernels
written in Numba (bench_reverse.py's softplus reduction and RK4 pendulum).

Run:  python examples/benchmarks/bench_c.py [--repeats N] [--clock cpu|wall]   (needs clang-22)

Not a test: it prints a table. The C primal is `clang-22 -O2` in a shared library called with
ctypes; the C derivative is `enzyme_py.c.derive` (clang-22 -O1 IR, our pass, LLVM O3), also
called with ctypes (~1 us per call, negligible at these sizes). The Numba columns time
`derive_diff` against the njit primal. Each derivative is checked against central finite
differences before it is timed.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees)
import numba
from enzyme_py import derive_diff
from enzyme_py.c import derive

from _timing import compare, fmt_time, machine_note, set_clock, table
from bench_reverse import reduce_softplus, rk4_pendulum

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_C = os.path.join(HERE, "kernels.c")
N, STEPS = 1_000_000, 10_000


def c_primals() -> ctypes.CDLL:
    so = os.path.join(tempfile.mkdtemp(prefix="bench_c_"), "libkernels.so")
    subprocess.run(["clang-22", "-O2", "-shared", "-fPIC", KERNELS_C, "-o", so, "-lm"],
                   check=True)
    lib = ctypes.CDLL(so)
    lib.reduce_softplus.restype = lib.rk4_pendulum.restype = ctypes.c_double
    lib.reduce_softplus.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    lib.rk4_pendulum.argtypes = [ctypes.c_double] * 5 + [ctypes.c_long]
    return lib


def check(name: str, got, fd) -> None:
    err = np.max(np.abs(np.asarray(got) - np.asarray(fd)) / np.maximum(1, np.abs(fd)))
    if not err < 1e-5:
        sys.exit(f"{name}: derivative {got} differs from finite differences {fd}")


def softplus_row(lib, repeats: int) -> list[str]:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=N), rng.uniform(size=N)
    dx, dw = np.zeros(N), np.zeros(N)
    d_c = derive(KERNELS_C, "reduce_softplus", "dup,dup,const")
    d_nb = derive_diff(reduce_softplus, "d_softplus", ("dup", "dup"))
    primal_nb = numba.njit(reduce_softplus)
    d_c(x, dx, w, dw, N)
    h, k = 1e-6, 7
    xp, xm = x.copy(), x.copy()
    xp[k] += h
    xm[k] -= h
    fd = (lib.reduce_softplus(xp.ctypes, w.ctypes, N)
          - lib.reduce_softplus(xm.ctypes, w.ctypes, N)) / (2 * h)
    check("C softplus", dx[k], fd)
    times = compare([lambda: lib.reduce_softplus(x.ctypes, w.ctypes, N),
                     lambda: d_c(x, dx, w, dw, N), lambda: primal_nb(x, w),
                     lambda: d_nb(x, dx, w, dw)], repeats)
    return _row(f"softplus reduction, n={N:,}", times)


def rk4_row(lib, repeats: int) -> list[str]:
    args = (0.3, 0.1, 2.0, 0.05, 1e-3, STEPS)
    d_c = derive(KERNELS_C, "rk4_pendulum", "active,active,active,active,const,const")
    d_nb = derive_diff(rk4_pendulum, "d_rk4",
                       ("active", "active", "active", "active", "const", "const"))
    primal_nb = numba.njit(rk4_pendulum)
    grads, h = d_c(*args), 1e-6
    fd = [(lib.rk4_pendulum(*args[:i], args[i] + h, *args[i + 1:])
           - lib.rk4_pendulum(*args[:i], args[i] - h, *args[i + 1:])) / (2 * h)
          for i in range(4)]
    check("C rk4", grads, fd)
    times = compare([lambda: lib.rk4_pendulum(*args), lambda: d_c(*args),
                     lambda: primal_nb(*args), lambda: d_nb(*args)], repeats)
    return _row(f"RK4 pendulum, {STEPS:,} steps, 4 active", times)


def _row(name: str, t: list[float]) -> list[str]:
    return [name, fmt_time(t[0]), fmt_time(t[1]), f"{t[1] / t[0]:.2f}x", fmt_time(t[2]),
            fmt_time(t[3]), f"{t[3] / t[2]:.2f}x"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    set_clock(args.clock)
    lib = c_primals()
    rows = [softplus_row(lib, args.repeats), rk4_row(lib, args.repeats)]
    print(table(["kernel", "C primal", "C deriv", "C ratio", "Numba primal", "Numba deriv",
                 "Numba ratio"], rows))
    print(machine_note())
    return 0


if __name__ == "__main__":
    sys.exit(main())
