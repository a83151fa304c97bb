"""Forward mode: time of a tangent relative to the primal, and time to derive a derivative.

Run:  python examples/benchmarks/bench_forward.py [--repeats N] [--clock cpu|wall]

Not a test: it prints two tables.

1. Run time. Each row times the primal and its forward-mode derivative (value and tangent)
   side by side in one run (interleaved, median of repeats, warm-up calls excluded), both
   compiled by Numba, and compares the ratio with the same 3.0x target as reverse mode. Every
   tangent is first checked: the loop kernel's against its derivative written by hand with
   NumPy, the ODE's against central finite differences.
2. Compile time. Time from nothing to a callable derivative (`derive_diff` + first call: the
   capture of the primal through Numba, the pass, LLVM codegen and the njit wrapper), against
   Numba's own compile time of the same function (`njit` + first call). Each sample uses a fresh
   copy of the function object so no cache can answer; one unrelated compile warms up Numba
   and LLVM first. Inputs are tiny, so run time is negligible in both.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import types

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff

from _timing import compare, fmt_time, machine_note, now, set_clock, table

TARGET = 3.0
N = 1_000_000
ODE_STEPS = 10_000


# --------------------------------------------------------------------------- kernels

def damped_wave(x, a, out):
    """out[i] = sin(a x_i) exp(-x_i^2 / 2); returns the sum of squares of out."""
    s = 0.0
    for i in range(x.shape[0]):
        v = math.sin(a * x[i]) * math.exp(-0.5 * x[i] * x[i])
        out[i] = v
        s += v * v
    return s


def ode_midpoint(k, y0, dt, steps):
    """y' = -k y + sin(y), explicit midpoint rule."""
    y = y0
    for _ in range(steps):
        k1 = -k * y + math.sin(y)
        ym = y + 0.5 * dt * k1
        k2 = -k * ym + math.sin(ym)
        y = y + dt * k2
    return y


# --------------------------------------------------------------------------- helpers

def rel_error(got, ref) -> float:
    got, ref = np.ravel(np.asarray(got, float)), np.ravel(np.asarray(ref, float))
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def fresh(fn):
    """A new function object with fn's code: a new Numba dispatcher, nothing cached."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def first_call_seconds(make_callable, call, samples: int = 3) -> float:
    """Median over `samples` of the time to build a fresh callable and call it once."""
    out = []
    for _ in range(samples):
        t0 = now()
        call(make_callable())
        out.append(now() - t0)
    return statistics.median(out)


# --------------------------------------------------------------------------- run time

def runtime_rows(repeats: int) -> list[list[str]]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3.0, 3.0, N)
    out, t_out = np.zeros(N), np.zeros(N)
    a = 1.3
    rows = []

    def row(name, primal_call, deriv_call, err):
        tp, td = compare([primal_call, deriv_call], repeats)
        ok = err < 1e-6
        status = ("PASS" if td / tp <= TARGET else "MISS") if ok else "WRONG"
        rows.append([name, fmt_time(tp), fmt_time(td), f"{td / tp:.2f}x", f"{TARGET:.1f}x",
                     status, "ok" if ok else f"err {err:.0e}"])
        print(f"  measured: {name}", file=sys.stderr)

    p = numba.njit(damped_wave)
    h = 1e-6

    # tangent w.r.t. the scalar a (out carries its tangent too)
    f = derive_diff(p, "fwd_wave_a", ("const", "dup", "dup"), mode="forward")
    _, tan = f(x, a, 1.0, out, t_out)
    v, e = np.sin(a * x) * np.exp(-0.5 * x * x), np.exp(-0.5 * x * x)
    dv_da, dv_dx = x * np.cos(a * x) * e, a * np.cos(a * x) * e - x * v   # exact, by hand
    row("loop kernel, 1e6, d/da (scalar)", lambda: p(x, a, out),
        lambda: f(x, a, 1.0, out, t_out),
        max(rel_error(tan, np.sum(2 * v * dv_da)), rel_error(t_out, dv_da)))

    # tangent w.r.t. the array x in direction t_x
    t_x = rng.standard_normal(N)
    f = derive_diff(p, "fwd_wave_x", ("dup", "const", "dup"), mode="forward")
    _, tan = f(x, t_x, a, out, t_out)
    row("loop kernel, 1e6, d/dx . t (array)", lambda: p(x, a, out),
        lambda: f(x, t_x, a, out, t_out),
        max(rel_error(tan, np.sum(2 * v * dv_dx * t_x)), rel_error(t_out, dv_dx * t_x)))

    # scalar ODE, tangent w.r.t. k; then two directions at once (width=2: k and y0)
    q = numba.njit(ode_midpoint)
    k, y0, dt = 0.5, 1.0, 1e-3
    f = derive_diff(q, "fwd_ode_k", ("dup", "const", "const", "const"), mode="forward")
    _, tan = f(k, 1.0, y0, dt, ODE_STEPS)
    fd = (q(k + h, y0, dt, ODE_STEPS) - q(k - h, y0, dt, ODE_STEPS)) / (2 * h)
    row("scalar ODE, 1e4 steps, d/dk", lambda: q(k, y0, dt, ODE_STEPS),
        lambda: f(k, 1.0, y0, dt, ODE_STEPS), rel_error(tan, fd))

    f = derive_diff(q, "fwd_ode_2", ("dup", "dup", "const", "const"), mode="forward", width=2)
    t_k, t_y0 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    _, tans = f(k, t_k, y0, t_y0, dt, ODE_STEPS)
    fd2 = np.array([fd, (q(k, y0 + h, dt, ODE_STEPS) - q(k, y0 - h, dt, ODE_STEPS)) / (2 * h)])
    row("scalar ODE, 1e4 steps, width=2", lambda: q(k, y0, dt, ODE_STEPS),
        lambda: f(k, t_k, y0, t_y0, dt, ODE_STEPS), rel_error(tans, fd2))
    return rows


# --------------------------------------------------------------------------- compile time

def compile_rows() -> list[list[str]]:
    x, out, t = np.linspace(0.0, 1.0, 16), np.zeros(16), np.zeros(16)
    numba.njit(fresh(ode_midpoint))(0.5, 1.0, 1e-3, 4)          # warm Numba and LLVM up
    cases = [
        ("loop kernel", damped_wave,
         lambda p: p(x, 1.3, out),
         ("const", "dup", "dup"), lambda d: d(x, 1.3, 1.0, out, t),
         ("const", "active", "dup"), lambda d: d(x, 1.3, out, t)),
        ("scalar ODE", ode_midpoint,
         lambda p: p(0.5, 1.0, 1e-3, 4),
         ("dup", "const", "const", "const"), lambda d: d(0.5, 1.0, 1.0, 1e-3, 4),
         ("active", "active", "const", "const"), lambda d: d(0.5, 1.0, 1e-3, 4)),
    ]
    rows = []
    for name, fn, call_p, fwd_acts, call_f, rev_acts, call_r in cases:
        tn = first_call_seconds(lambda: numba.njit(fresh(fn)), call_p)
        tf = first_call_seconds(lambda: derive_diff(fresh(fn), None, fwd_acts, mode="forward"),
                                call_f)
        tr = first_call_seconds(lambda: derive_diff(fresh(fn), None, rev_acts, mode="reverse"),
                                call_r)
        rows.append([name, fmt_time(tn), fmt_time(tf), f"{tf / tn:.1f}x", fmt_time(tr),
                     f"{tr / tn:.1f}x"])
        print(f"  measured: compile {name}", file=sys.stderr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="process CPU time (default; robust on a shared machine) or wall time")
    args = ap.parse_args()
    set_clock(args.clock)
    repeats = args.repeats
    run = runtime_rows(repeats)
    comp = compile_rows()
    print(f"forward mode / primal (median of repeats, Numba {numba.__version__}; "
          "check: tangent vs hand-derived NumPy / central differences)")
    print(f"  {machine_note()}\n")
    print(table(["kernel", "primal", "forward", "ratio", "target", "status", "check"], run))
    print("\ntime to a callable derivative (derive_diff + first call) vs Numba compiling the "
          "primal (njit + first call); median of 3 fresh functions\n")
    print(table(["function", "numba compile", "derive+compile fwd", "ratio",
                 "derive+compile rev", "ratio"], comp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
