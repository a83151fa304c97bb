"""Random programs in the shapes users write with arrays (the machinery is `progen`'s).

`shape_cases()` draws a function of a 1-D array ``a`` (sometimes ``b``, a float ``s``, a 2-D
``B``, an output ``out``) made of segments, each feeding the returned float ``acc``:

  slice        a view ``a[1:]``, ``a[::2]``, ``a[::-1]``... read in a loop
  rows         ``r = B[i]`` (or ``B[i, 1:]``): a row view per outer iteration
  temp         a temporary (``np.empty_like``, ``np.zeros``, ``np.zeros_like``, ``.copy()``)
               filled in one loop and read in another (and by later segments)
  swap         ``p, q = q, p`` of two arrays (arguments or temporaries) inside a loop,
               read to write ``out``
  helper       an ``@njit`` helper returning a tuple, ``u, w = h(a[i], s)``
  struct       tuples of floats built, swapped in a branch, carried around a loop and passed
               to an ``@njit`` helper (stack structs)
  array_tuple  a tuple of two arrays, swapped in a branch, indexed ``pair[0][i]``

`kernel_cases()` draws the benchmark kernels' loop shapes instead (`KERNEL_SEGMENTS`):

  refill       a temporary refilled each round of an outer loop (or on some rounds), a
               triangular loop with a packed counter adding into it, then read (GMM)
  stencil      a three-point stencil into ``out``, or between two buffers swapped each step
  nest         ``C[m, j] += B[m, k] * W[k, j]`` over a temporary ``W`` (matmul)

Shapes the pass does not handle yet are drawn only when asked for (off by default):
``reshapes`` (``a.reshape(2, -1)``, ``B.ravel()``), ``tuple_returns`` (the function returns
``(acc, e)``) and ``buffer_swaps`` (double buffering: ``q[i] = f(p[i])``, then
``p, q = q, p``, with two temporaries).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from hypothesis import strategies as st

from tests.support.progen import (CONSTS, Bin, Case, Cmp, Const, Emitter, Leaf, _make_1d,
                                  _make_2d, _namer, draw_cmp, draw_expr, scalar_values)

#: reshapes (the array struct goes through a stack slot and Numba's reshape helper)
INCLUDE_RESHAPES = True
#: functions returning tuples (checked through d_ret and the tangent tuple)
INCLUDE_TUPLE_RETURNS = True
#: writing through swapped temporaries (double buffering: a phi of two allocations) is still
#: refused in some drawn shapes (never wrong: 6 of 30 refused with ENZYME_PROGEN_SEED=11), so
#: it is off by default; reading swapped temporaries works and is drawn
INCLUDE_BUFFER_SWAPS = False

SEGMENTS = ("slice", "rows", "temp", "swap", "helper", "struct", "array_tuple")
#: loop nests shaped like the benchmark kernels (GMM, heat, matmul), drawn by `kernel_cases`
KERNEL_SEGMENTS = ("refill", "stencil", "nest", "temp", "rows")
_VIEWS = ("a[1:]", "a[:-1]", "a[::2]", "a[::-1]", "a[1::2]")
_TEMPS = ("np.empty_like(a)", "np.zeros({n})", "np.zeros_like(a)", "a.copy()")


class _Program:
    """What the segments share: the emitter, names, helpers, and which inputs are used."""

    def __init__(self, draw: Callable, n: int, buffer_swaps: bool) -> None:
        self.draw, self.n, self.buffer_swaps = draw, n, buffer_swaps
        self.em = Emitter()
        self.fresh = _namer("t")
        self.helpers: list[tuple[str, str]] = []
        self.scalars = ["s"] if draw(st.booleans()) else []
        self.arrays = ["a"]             # 1-D arrays of length n that later segments may read
        self.temps: list[str] = []
        self.uses = {"a"} | set(self.scalars)

    def expr(self, env: list[str], depth: int = 1):
        return draw_expr(self.draw, env + self.scalars, depth)

    def pick_array(self) -> str:
        return self.draw(st.sampled_from(self.arrays))

    def second_array(self, first: str) -> str:
        pool = [x for x in self.arrays if x != first]
        if not pool:
            self.uses.add("b")
            self.arrays.append("b")
            return "b"
        return self.draw(st.sampled_from(pool))

    def helper(self, params: list[str], bodies: list) -> str:
        """Define ``@njit def h<k>(params): return body, ...`` (a tuple when there are
        several bodies); its name."""
        name = f"h{len(self.helpers)}"
        head = f"@njit\ndef {name}({', '.join(params)}):\n    return "
        plain = ", ".join(e.src(False) for e in bodies)
        traced = ", ".join(f"_T.v({e.src(True)})" for e in bodies)
        self.helpers.append((head + plain + "\n", head + traced + "\n"))
        return name


def _slice(p: _Program) -> None:
    v = p.fresh().replace("t", "v")
    p.em.line(f"{v} = {p.draw(st.sampled_from(_VIEWS))}")
    p.em.block(f"for i in range({v}.shape[0]):")
    p.em.assign("acc", p.expr([f"{v}[i]", "a[i]", "acc"], 2), op="+")
    p.em.end()


def _rows(p: _Program) -> None:
    p.uses.add("B")
    row = p.draw(st.sampled_from(("B[i]", "B[i, 1:]")))
    p.em.block("for i in range(B.shape[0]):")
    p.em.line(f"r = {row}")
    p.em.block("for j in range(r.shape[0]):")
    p.em.assign("acc", p.expr(["r[j]", "a[j]", "(i * 0.5)"], 2), op="+")
    p.em.end()
    p.em.end()


def _temp(p: _Program) -> None:
    t = p.fresh()
    make = p.draw(st.sampled_from(_TEMPS)).format(n=p.n)
    p.em.line(f"{t} = {make}")
    # from 1: t[0] keeps its initial value (but never read np.empty's uninitialised memory)
    start = 0 if "empty" in make else p.draw(st.sampled_from((0, 1)))
    src = p.pick_array()
    p.em.block(f"for i in range({start}, {p.n}):")
    p.em.assign(f"{t}[i]", p.expr([f"{src}[i]", "(i * 0.25)"], 2))
    p.em.end()
    p.em.block(f"for i in range({p.n}):")
    p.em.assign("acc", p.expr([f"{t}[i]", "acc"], 2), op="+")
    p.em.end()
    p.arrays.append(t)
    p.temps.append(t)


def _swap(p: _Program) -> None:
    k = p.draw(st.integers(2, 3))
    if p.buffer_swaps and p.draw(st.booleans()):
        _ping_pong(p, k)
        return
    p.uses.add("out")
    x = p.pick_array()
    y = p.second_array(x)
    p.em.line(f"p, q = {x}, {y}")
    p.em.block(f"for k in range({k}):")
    p.em.block(f"for i in range({p.n}):")
    p.em.assign("out[i]", p.expr(["p[i]", "q[i]", "out[i]"], 2), op="+")
    p.em.end()
    p.em.line("p, q = q, p")
    p.em.end()
    p.em.assign("acc", p.expr(["p[0]", "q[1]", "acc"], 1), op="+")


def _ping_pong(p: _Program, k: int) -> None:
    """Double buffering: write ``q`` from ``p``, then swap the two temporaries."""
    while len(p.temps) < 2:
        _temp(p)
    p.em.line(f"p, q = {p.temps[-2]}, {p.temps[-1]}")
    p.em.block(f"for k in range({k}):")
    p.em.block(f"for i in range({p.n}):")
    c = p.draw(st.sampled_from((0.5, -0.75)))
    p.em.assign("q[i]", Bin("+", Bin("*", Const(c), Leaf("q[i]")), p.expr(["p[i]"], 1)))
    p.em.end()
    p.em.line("p, q = q, p")
    p.em.end()
    p.em.assign("acc", p.expr(["p[0]", "q[1]", "acc"], 1), op="+")


def _helper(p: _Program) -> None:
    env = ["u", "v"]
    h = p.helper(env, [draw_expr(p.draw, env, 2), draw_expr(p.draw, env, 2)])
    src = p.pick_array()
    other = p.draw(st.sampled_from(p.scalars + ["acc", "0.5", f"{src}[0]"]))
    p.em.block(f"for i in range({p.n}):")
    p.em.line(f"u, w = {h}({src}[i], {other})")
    p.em.assign("acc", p.expr(["u", "w", "acc"], 2), op="+")
    p.em.end()


def _struct(p: _Program) -> None:
    src = p.pick_array()
    e0, e1 = p.expr([f"{src}[0]", "acc"]), p.expr([f"{src}[1]", "acc"])
    p.em.line(f"st = ({e0.src(False)}, {e1.src(False)})",
              f"st = (_T.v({e0.src(True)}), _T.v({e1.src(True)}))")
    if p.draw(st.booleans()):
        p.em.if_(draw_cmp(p.draw, ["st[0]", "st[1]"]))
        p.em.line("st = (st[1], st[0])")
        p.em.end()
    if p.draw(st.booleans()):                    # a tuple carried around a loop
        p.em.block(f"for i in range({p.n}):")
        a0 = p.expr(["st[1]", f"{src}[i]"])
        c = p.draw(st.sampled_from((0.5, -0.75)))
        p.em.line(f"st = ({a0.src(False)}, {c!r} * st[0])",
                  f"st = (_T.v({a0.src(True)}), _T.v({c!r} * st[0]))")
        p.em.end()
    g = p.helper(["pr"], [draw_expr(p.draw, ["pr[0]", "pr[1]"], 2)])
    p.em.line(f"acc += {g}(st)", f"acc = _T.v(acc + {g}(st))")


def _array_tuple(p: _Program) -> None:
    x = p.pick_array()
    y = p.second_array(x)
    p.em.line(f"pair = ({x}, {y})")
    if p.draw(st.booleans()):
        p.em.if_(Cmp(p.draw(st.sampled_from(("<", ">"))), Leaf(f"{x}[0]"),
                     Const(p.draw(st.sampled_from(CONSTS)))))
        p.em.line("pair = (pair[1], pair[0])")
        p.em.end()
    p.em.block(f"for i in range({p.n}):")
    p.em.assign("acc", p.expr(["pair[0][i]", "pair[1][i]"], 2), op="+")
    p.em.end()


def _reshape(p: _Program) -> None:
    form = p.draw(st.sampled_from(("a.reshape(2, -1)", f"a.reshape(({p.n // 2}, 2))",
                                   "B.ravel()", "a.ravel()")))
    if form.startswith("B"):
        p.uses.add("B")
        p.em.line(f"m = {form}")
        p.em.block("for i in range(m.shape[0]):")
        p.em.assign("acc", p.expr(["m[i]", "(i * 0.25)", "acc"], 2), op="+")
        p.em.end()
        return
    p.em.line(f"m = {form}" if "ravel" not in form else f"m = {form}.reshape(2, -1)")
    p.em.block("for i in range(m.shape[0]):")
    p.em.block("for j in range(m.shape[1]):")
    p.em.assign("acc", p.expr(["m[i, j]", "(i * 0.5)", "acc"], 2), op="+")
    p.em.end()
    p.em.end()


def _refill(p: _Program) -> None:
    """ADBench GMM's temporaries: a temporary filled every round of an outer loop (or on some
    rounds only), maybe accumulated into by a triangular loop with a packed counter, then
    read (what tape placement reloads, forwards or rebuilds)."""
    t, n = p.fresh(), p.n
    src = p.pick_array()
    p.em.line(f"{t} = np.empty({n})")
    some_rounds = p.draw(st.booleans())
    p.em.block(f"for k in range({p.draw(st.integers(2, 3))}):")
    if some_rounds:                  # round 0 always fills: np.empty is never read
        p.em.block("if k != 1:")
    p.em.block(f"for j in range({n}):")
    p.em.assign(f"{t}[j]", p.expr([f"{src}[j]", "(k * 0.5)"], 2))
    p.em.end()
    if some_rounds:
        p.em.end()
    if p.draw(st.booleans()):
        other = p.pick_array()
        c = Const(p.draw(st.sampled_from((0.5, -0.75, 0.25))))
        p.em.line("idx = 0")
        p.em.block(f"for j in range({n}):")
        p.em.block(f"for l in range(j + 1, {n}):")
        p.em.assign(f"{t}[l]", Bin("*", Bin("*", c, Leaf(f"{other}[idx % {n}]")),
                                   Leaf(f"{t}[j]")), op="+")
        p.em.line("idx += 1")
        p.em.end()
        p.em.end()
    p.em.block(f"for j in range({n}):")
    p.em.assign("acc", p.expr([f"{t}[j]", "acc"], 2), op="+")
    p.em.end()
    p.em.end()


def _stencil(p: _Program) -> None:
    """A three-point stencil (constant index offsets), into ``out`` or, over a few steps,
    between two buffers swapped each step (the heat kernel's shape)."""
    n, src = p.n, p.pick_array()
    c0, c1 = (Const(p.draw(st.sampled_from((0.5, -0.75, 0.25)))) for _ in range(2))
    if p.draw(st.booleans()):
        p.uses.add("out")
        p.em.block(f"for i in range(1, {n - 1}):")
        centre = p.expr([f"{src}[i]"], 1)
        p.em.assign("out[i]", Bin("+", Bin("+", Bin("*", c0, Leaf(f"{src}[i - 1]")), centre),
                                  Bin("*", c1, Leaf(f"{src}[i + 1]"))), op="+")
        p.em.end()
        p.em.assign("acc", p.expr(["out[1]", f"out[{n - 2}]", "acc"], 1), op="+")
        return
    p.em.line(f"p, q = {src}.copy(), {src}.copy()")
    p.em.block(f"for k in range({p.draw(st.integers(2, 3))}):")
    p.em.block(f"for i in range(1, {n - 1}):")
    p.em.assign("q[i]", Bin("+", Leaf("p[i]"), Bin("*", c0, Bin(
        "+", Bin("-", Leaf("p[i - 1]"), Bin("*", Const(2.0), Leaf("p[i]"))), Leaf("p[i + 1]")))))
    p.em.end()
    p.em.line("p, q = q, p")
    p.em.end()
    p.em.block(f"for i in range({n}):")
    p.em.assign("acc", p.expr(["p[i]", "acc"], 1), op="+")
    p.em.end()


def _nest(p: _Program) -> None:
    """A matrix product written as a loop nest, ``C[m, j] += B[m, k] * W[k, j]`` with ``W``
    built from the 1-D inputs, then a sum of squares of ``C``."""
    p.uses.add("B")
    n, x = p.n, p.pick_array()
    y = p.second_array(x)
    p.em.line(f"W = np.empty(({n}, {n}))")
    p.em.block(f"for k in range({n}):")
    p.em.block(f"for j in range({n}):")
    p.em.assign("W[k, j]", p.expr([f"{x}[k]", f"{y}[j]"], 1))
    p.em.end()
    p.em.end()
    p.em.line(f"C = np.zeros((B.shape[0], {n}))")
    p.em.block("for m in range(B.shape[0]):")
    p.em.block(f"for k in range({n}):")
    p.em.block(f"for j in range({n}):")
    p.em.assign("C[m, j]", Bin("*", Leaf("B[m, k]"), Leaf("W[k, j]")), op="+")
    p.em.end()
    p.em.end()
    p.em.end()
    p.em.block("for m in range(B.shape[0]):")
    p.em.block(f"for j in range({n}):")
    p.em.assign("acc", Bin("*", Leaf("C[m, j]"), Leaf("C[m, j]")), op="+")
    p.em.end()
    p.em.end()


_SEGMENT = {"slice": _slice, "rows": _rows, "temp": _temp, "swap": _swap, "helper": _helper,
            "struct": _struct, "array_tuple": _array_tuple, "reshape": _reshape,
            "refill": _refill, "stencil": _stencil, "nest": _nest}


@st.composite
def shape_cases(draw: Callable, reshapes: bool = INCLUDE_RESHAPES,
                tuple_returns: bool = INCLUDE_TUPLE_RETURNS,
                buffer_swaps: bool = INCLUDE_BUFFER_SWAPS, kinds: tuple = SEGMENTS) -> Case:
    """A program of 2-3 segments of `kinds` (module docstring) and a point to check it at."""
    kinds = kinds + (("reshape",) if reshapes else ())
    segments = draw(st.lists(st.sampled_from(kinds), min_size=2, max_size=3))
    n = draw(st.sampled_from((4, 6)))
    p = _Program(draw, n, buffer_swaps)
    p.em.assign("acc", Const(0.0) if draw(st.booleans()) else p.expr(["a[0]"]))
    for seg in segments:
        _SEGMENT[seg](p)
    if tuple_returns and draw(st.booleans()):
        e = p.expr(["acc", "a[1]"], 2)
        p.em.line(f"return acc, {e.src(False)}", f"return _T.v(acc), _T.v({e.src(True)})")
    else:
        p.em.line("return acc", "return _T.v(acc)")
    returns_tuple = p.em.plain[-1].startswith("    return acc,")
    contiguous = "reshape" in segments      # Numba reshapes contiguous arrays only
    params = [x for x in ("a", "b", "s", "B", "out") if x in p.uses]
    args, arg_src, outputs = [], [], []
    for idx, name in enumerate(params):
        if name in ("a", "b", "out"):
            value, src = _make_1d(draw, n)
            if contiguous:
                value, src = np.ascontiguousarray(value), f"np.ascontiguousarray({src})"
            if name == "out":
                outputs.append(idx)
        elif name == "s":
            value = draw(scalar_values)
            src = repr(value)
        else:
            value, src = _make_2d(draw, draw(st.integers(1, 3)), n)
            if contiguous:
                value, src = np.ascontiguousarray(value), f"np.ascontiguousarray({src})"
        args.append(value)
        arg_src.append(src)
    return Case("shape", params, p.em, tuple(args), tuple(outputs), arg_src,
                helpers=p.helpers, returns_tuple=returns_tuple)


def kernel_cases():
    """Programs of the benchmark kernels' loop shapes (`KERNEL_SEGMENTS`)."""
    return shape_cases(reshapes=False, tuple_returns=False, kinds=KERNEL_SEGMENTS)


__all__ = ["INCLUDE_BUFFER_SWAPS", "INCLUDE_RESHAPES", "INCLUDE_TUPLE_RETURNS", "KERNEL_SEGMENTS",
           "SEGMENTS", "kernel_cases", "shape_cases"]
