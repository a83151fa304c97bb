"""Checking one random C program (tests/support/cprogen.py) at one clang optimisation level.

The program ``f`` is viewed as a map ``F: x -> y`` on its float state, as
tests/support/gradcheck.py does for Python kernels: ``x`` holds the active scalars and the
entry contents of every dup parameter's memory (array elements, ``ptr2`` rows, a struct's
``w`` and ``data``), ``y`` the float result (if any) and the exit contents of that memory.
The primal is the program compiled by clang-22 itself (a shared library, ctypes); shadows
follow Enzyme's convention (the shadow of a pointer table holds the shadow rows, a shadow
struct the shadow ``data`` pointer and the primal's ``n``).

``check(program, opt_level)`` picks a point (screened: finite, not huge, and central
differences at steps h and 10h agree, else another point), then derives ``f`` in reverse and
forward mode with ``enzyme_py.c.derive`` and checks

- reverse (return seed 1, memory seeds w) against the FD gradient of ``F_ret + <w, F_mem>``,
- forward (random tangent t) against the central difference of ``F`` along ``t``,
- forward against reverse: ``<J t, (1, w)> == <t, J^T (1, w)>``,
- the primal memory each derivative leaves against the primal's.

It returns an ``Outcome``: "ok", "refused" (UnsupportedError / ActivityError, with the
message), "wrong" (a mismatch, with the report), "crash" (any other exception) or "skipped" (no
screened point); with the two modes' outcomes differing, the more severe (SEVERITY). Segfaults
and aborts are caught one level up (tests/support/crandom.py).
"""
from __future__ import annotations

import ctypes
import math
import os
import subprocess
import tempfile
import traceback
from dataclasses import dataclass

import numpy as np

from tests.support.cprogen import N, ROWS, Param, Program
from tests.support.gradcheck import DEFAULTS, NORM_FRACTION, assert_close

FD = DEFAULTS[np.dtype(np.float64)]
#: values above this (or non-finite) reject a point; so do FD at h and 10h disagreeing
MAX_VALUE = 1e4
POINTS = 5


@dataclass
class Outcome:
    status: str          # ok, refused, wrong, crash, skipped
    mode: str = ""       # the mode that failed (reverse, forward, inner, primal)
    message: str = ""


class S(ctypes.Structure):
    _fields_ = [("n", ctypes.c_long), ("w", ctypes.c_double), ("data", ctypes.c_void_p)]


def _aligned(values: np.ndarray) -> np.ndarray:
    """A 16-byte aligned copy (v2 loads and stores at -O2 assume it)."""
    raw = np.empty(values.size + 2)
    off = (-raw.ctypes.data % 16) // 8
    out = raw[off:off + values.size]
    out[:] = values
    return out


class Memory:
    """The C arguments of one call built from flat float values per parameter; `read()` gives
    the flat values back after the call. Pointer parameters only (scalars are passed as is)."""

    def __init__(self, p: Param, flat: np.ndarray) -> None:
        self.p, self.keep = p, []
        if p.kind in ("array", "vec", "pts"):
            self.bufs = [_aligned(flat)]
            self.arg = self.bufs[0].ctypes.data
        elif p.kind == "ptr2":
            self.bufs = [_aligned(flat[r * N:(r + 1) * N]) for r in range(ROWS)]
            self.table = (ctypes.c_void_p * ROWS)(*[b.ctypes.data for b in self.bufs])
            self.arg = ctypes.addressof(self.table)
        else:
            self.bufs = [_aligned(flat[1:])]
            self.struct = S(N, float(flat[0]), self.bufs[0].ctypes.data)
            self.arg = ctypes.addressof(self.struct)

    def read(self) -> np.ndarray:
        head = [np.array([self.struct.w])] if self.p.kind == "struct" else []
        return np.concatenate(head + [b.copy() for b in self.bufs])


class Harness:
    """The program's primal (a clang-built shared library) and its state layout."""

    def __init__(self, prog: Program, opt_level: str, tmp: str) -> None:
        self.prog, self.opt = prog, opt_level
        self.path = os.path.join(tmp, f"prog{prog.seed}.c")
        with open(self.path, "w") as f:
            f.write(prog.source)
        lib = os.path.join(tmp, f"libprog{prog.seed}{opt_level}.so")
        subprocess.run(["clang-22", opt_level, "-shared", "-fPIC", self.path, "-o", lib, "-lm"],
                       check=True, capture_output=True)
        self.lib = ctypes.CDLL(lib)
        self.fn = self.lib.f
        self.fn.restype = ctypes.c_double if prog.returns else None
        self.fn.argtypes = [_ctype(p) for p in prog.params]
        self.state = [p for p in prog.params if p.active]          # the parameters x holds
        self.memory = [p for p in self.state if p.kind != "scalar"]  # ... and y holds

    def point(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {p.name: rng.uniform(-1.2, 1.2, p.floats()).round(3) for p in self.prog.params
                if p.kind != "int"}

    def args(self, vals: dict, shadows: dict | None = None, mode: str = "") -> tuple[list, dict]:
        """The C call for `vals`; with `shadows`, the derivative's (shadow after each dup)."""
        call, mem = [], {}
        for p in self.prog.params:
            if p.kind == "int":
                call.append(N)
            elif p.kind == "scalar":
                call.append(float(vals[p.name][0]))
                if shadows is not None and p.active and mode == "forward":
                    call.append(float(shadows[p.name][0]))
            else:
                mem[p.name] = Memory(p, vals[p.name])
                call.append(mem[p.name].arg)
                if shadows is not None and p.active:
                    mem["d" + p.name] = Memory(p, shadows[p.name])
                    call.append(mem["d" + p.name].arg)
        return call, mem

    def primal(self, vals: dict) -> tuple[float, dict]:
        call, mem = self.args(vals)
        ret = self.fn(*call)
        return (float(ret) if self.prog.returns else 0.0), {
            p.name: mem[p.name].read() for p in self.prog.params if p.name in mem}

    # x <-> values
    def flatten(self, vals: dict) -> np.ndarray:
        return np.concatenate([vals[p.name] for p in self.state])

    def with_x(self, vals: dict, x: np.ndarray) -> dict:
        out, k = dict(vals), 0
        for p in self.state:
            out[p.name] = x[k:k + p.floats()].copy()
            k += p.floats()
        return out

    def weighted(self, vals: dict, w: dict) -> float:
        """F_ret + <w, F_mem> at `vals`."""
        ret, mem = self.primal(vals)
        return ret + math.fsum(float(np.dot(w[p.name], mem[p.name])) for p in self.memory)

    def fd_gradient(self, vals: dict, w: dict, step: float) -> np.ndarray:
        x = self.flatten(vals)
        g = np.empty_like(x)
        for j in range(x.size):
            h = step * max(1.0, abs(x[j]))
            xp, xm = x.copy(), x.copy()
            xp[j] += h
            xm[j] -= h
            g[j] = (self.weighted(self.with_x(vals, xp), w)
                    - self.weighted(self.with_x(vals, xm), w)) / (2 * h)
        return g

    def fd_jvp(self, vals: dict, t: np.ndarray, step: float) -> np.ndarray:
        x = self.flatten(vals)
        h = step * max(1.0, float(np.max(np.abs(x))))
        (rp, mp), (rm, mm) = (self.primal(self.with_x(vals, x + s * h * t)) for s in (1, -1))
        plus = np.concatenate([[rp]] + [mp[p.name] for p in self.memory])
        minus = np.concatenate([[rm]] + [mm[p.name] for p in self.memory])
        return (plus - minus) / (2 * h)


def _ctype(p: Param):
    return {"scalar": ctypes.c_double, "int": ctypes.c_long}.get(p.kind, ctypes.c_void_p)


def activities(prog: Program, mode: str) -> str:
    act = {"scalar": "dup" if mode == "forward" else "active"}
    return ",".join((act.get(p.kind, "dup") if p.active else "const") for p in prog.params)


def _agree(a: np.ndarray, b: np.ndarray) -> bool:
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    return bool(np.all(np.abs(a - b) <= 0.2 * (FD.atol + FD.rtol * (np.abs(a)
                                                                    + NORM_FRACTION * scale))))


def screened_point(h: Harness, seed: int):
    """(values, memory seeds w, tangent t, FD gradient, FD jvp) at the first of POINTS
    random points that passes the screen, else None."""
    rng = np.random.default_rng(seed)
    for _ in range(POINTS):
        vals = h.point(rng)
        w = {p.name: rng.uniform(-1, 1, p.floats()).round(3) for p in h.memory}
        t = rng.uniform(-1, 1, h.flatten(vals).size)
        ret, mem = h.primal(vals)
        values = np.concatenate([[ret]] + list(mem.values()))
        if not np.all(np.isfinite(values)) or np.max(np.abs(values)) > MAX_VALUE:
            continue
        g, g10 = h.fd_gradient(vals, w, FD.step), h.fd_gradient(vals, w, 10 * FD.step)
        j, j10 = h.fd_jvp(vals, t, FD.step), h.fd_jvp(vals, t, 10 * FD.step)
        if np.max(np.abs(g), initial=0.0) > MAX_VALUE or not (_agree(g, g10) and _agree(j, j10)):
            continue
        return vals, w, t, g, j
    return None


def check(prog: Program, opt_level: str) -> Outcome:
    """The outcome of `prog` at `opt_level` (see module docstring). A mode that is refused
    does not stop the other: its derivative is still checked against FD."""
    from enzyme_py import ActivityError, UnsupportedError
    from enzyme_py.c import derive
    from enzyme_py.c.clang import load_ir
    with tempfile.TemporaryDirectory(prefix="enzyme_py_ctier_") as tmp:
        h = Harness(prog, opt_level, tmp)
        found = screened_point(h, prog.seed)
        if found is None:
            return Outcome("skipped", message="no point passed the screen")
        outcomes, derived = [], {}
        ir = load_ir(h.path, opt_level)                   # once for both modes
        for mode in ("reverse", "forward"):
            try:
                derived[mode] = derive(ir, "f", activities(prog, mode), mode)
            except (UnsupportedError, ActivityError) as e:
                outcomes.append(Outcome("refused", mode, f"{type(e).__name__}: {e}"))
            except Exception as e:   # noqa: BLE001 -- every other exception is a crash to report
                outcomes.append(_crash(mode, e))
        try:
            outcomes.append(compare(h, derived.get("reverse"), derived.get("forward"), *found))
        except Exception as e:       # noqa: BLE001
            outcomes.append(_crash("check", e))
        return min(outcomes, key=lambda o: SEVERITY.index(o.status))


#: the outcome of a program is the first of these its modes reach
SEVERITY = ("crash", "wrong", "refused", "ok")


def _crash(mode: str, e: Exception) -> Outcome:
    return Outcome("crash", mode, f"{type(e).__name__}: {e}\n{traceback.format_exc()}")


def compare(h: Harness, rev, fwd, vals, w, t, g_fd, j_fd) -> Outcome:
    """The derivatives against FD and against each other (module docstring); `rev` or `fwd`
    None skips that mode and the inner product."""
    ret, mem = h.primal(vals)
    floor = max(FD.atol, 10 * np.finfo(float).eps * (1 + abs(ret)) / FD.step)
    problems = []
    if rev is not None:
        call, m = h.args(vals, w)
        grads = rev(*call)
        grads = () if grads is None else grads if isinstance(grads, tuple) else (grads,)
        scalars = [p for p in h.state if p.kind == "scalar"]
        if len(grads) != len(scalars):
            return Outcome("wrong", "reverse", f"{len(grads)} gradients for {len(scalars)} "
                                               "scalars")
        by_name = dict(zip((p.name for p in scalars), grads))
        got = np.concatenate([np.array([by_name[p.name]]) if p.kind == "scalar"
                              else m["d" + p.name].read() for p in h.state])
        problems += _problems(m, mem, "reverse") + _close(got, g_fd, floor, "reverse gradient")
    if fwd is not None:
        tangents, k = {}, 0
        for p in h.state:
            tangents[p.name] = t[k:k + p.floats()]
            k += p.floats()
        call, m = h.args(vals, tangents, "forward")
        dret = fwd(*call)
        jt = np.concatenate([[dret if h.prog.returns else 0.0]]
                            + [m["d" + p.name].read() for p in h.memory])
        problems += _problems(m, mem, "forward") + _close(jt, j_fd, floor, "forward tangent")
    if rev is not None and fwd is not None:     # <J t, (1, w)> == <t, J^T (1, w)>
        lhs_terms = [float(jt[0])] + list(jt[1:] * np.concatenate(
            [w[p.name] for p in h.memory] or [np.zeros(0)]))
        rhs_terms = list(t * got)
        lhs, rhs = math.fsum(lhs_terms), math.fsum(rhs_terms)
        tol = 1e-8 * math.fsum(abs(v) for v in lhs_terms + rhs_terms) + 1e-13
        if not abs(lhs - rhs) <= tol:
            problems.append(f"inner product: <J t, w> = {lhs!r} but <t, J^T w> = {rhs!r}")
    if problems:
        return Outcome("wrong", problems[0].split(":")[0].split()[0], "\n".join(problems))
    return Outcome("ok")


def _close(got, expected, atol: float, what: str) -> list[str]:
    try:
        assert_close(got, expected, FD.rtol, atol, what)
    except AssertionError as e:
        return [str(e)]
    return []


def _problems(m: dict, mem: dict, mode: str) -> list[str]:
    """The primal memory a derivative call left, against the primal's exit memory."""
    out = []
    for name, exit_values in mem.items():
        if not np.allclose(m[name].read(), exit_values, rtol=FD.value_rtol, atol=1e-12):
            out.append(f"{mode} primal memory: {name} = {m[name].read()} after the derivative, "
                       f"{exit_values} after the primal")
    return out
