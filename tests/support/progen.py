"""Random Numba programs as Python source, for property-based derivative tests.

A hypothesis strategy here draws a small program (scalar straight-line code, loops, array
code) together with a point to evaluate it at, and returns a ``Case``. Every program is
printed twice from the same tree:

- the *plain* source, which is what gets ``numba.njit``-ed and differentiated;
- the *traced* source, run by the Python interpreter, where every branch condition,
  ``min``/``max``, division, ``abs`` kink and assigned value goes through a ``Tracer`` that
  records the decision taken, how close it came to flipping (margin) and how large values
  get.

``screen(case)`` uses the traced program to reject points where a derivative check would be
meaningless rather than wrong: a branch within 1e-3 of flipping, a decision that changes
within the finite-difference stencil, huge values, or a Jacobian whose central differences at
steps h and 2h disagree (FD noise). Only screened cases are compiled, so rejections are cheap.
"""
from __future__ import annotations

import itertools
import linecache
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np
from hypothesis import strategies as st

from tests.support.arrays import copy_args, is_float_array, is_float_scalar

# --------------------------------------------------------------------------------------------
# Screening thresholds

#: A comparison / min / max / abs kink whose two sides are closer than this (relative to
#: max(1, |sides|)) is "about to flip": the point is rejected.
MARGIN = 1e-3
#: Denominators closer to zero than this are rejected (the derivative is huge and FD noisy).
MIN_DENOM = 0.05
#: Any intermediate value larger than this rejects the point.
MAX_VALUE = 1e4
#: Any Jacobian entry larger than this rejects the point.
MAX_DERIV = 1e4
#: The checkers' FD settings for float64 (tests.support.gradcheck.DEFAULTS).
FD_STEP, FD_RTOL, FD_ATOL = 1e-6, 1e-5, 1e-8
#: FD at step h and 2h must agree to this fraction of the checkers' tolerance.
FD_AGREEMENT = 0.2


class Reject(Exception):
    """The traced program hit a point we do not want to test at (singular, huge, tie)."""


class Tracer:
    """Records the decisions of one traced run (see module docstring)."""

    def __init__(self) -> None:
        self.decisions: list[Any] = []
        self.margin = math.inf
        self.maxabs = 0.0

    def _near(self, a: float, b: float) -> float:
        return abs(a - b) / max(1.0, abs(a), abs(b))

    def v(self, x: Any) -> Any:
        x = float(x)
        if not math.isfinite(x) or abs(x) > MAX_VALUE:
            raise Reject(f"value {x!r}")
        self.maxabs = max(self.maxabs, abs(x))
        return x

    def cmp(self, op: str, a: Any, b: Any) -> bool:
        a, b = self.v(a), self.v(b)
        self.margin = min(self.margin, self._near(a, b))
        r = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
        self.decisions.append(r)
        return r

    def min(self, a: Any, b: Any) -> float:
        a, b = self.v(a), self.v(b)
        self.margin = min(self.margin, self._near(a, b))
        self.decisions.append(("min", a <= b))
        return min(a, b)

    def max(self, a: Any, b: Any) -> float:
        a, b = self.v(a), self.v(b)
        self.margin = min(self.margin, self._near(a, b))
        self.decisions.append(("max", a >= b))
        return max(a, b)

    def div(self, a: Any, b: Any) -> float:
        a, b = self.v(a), self.v(b)
        if abs(b) < MIN_DENOM:
            raise Reject(f"denominator {b!r}")
        return self.v(a / b)

    def exp(self, a: Any) -> float:
        a = self.v(a)
        if a > math.log(MAX_VALUE):
            raise Reject(f"exp({a!r})")
        return math.exp(a)

    def log1abs(self, a: Any) -> float:
        a = self.v(a)
        self.margin = min(self.margin, abs(a))
        self.decisions.append(("abs", a >= 0))
        return math.log(abs(a) + 1.0)


# --------------------------------------------------------------------------------------------
# Expression trees, printed plain (for Numba) or traced (for screening)


class Expr:
    def src(self, traced: bool) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Leaf(Expr):
    text: str

    def src(self, traced: bool) -> str:
        return self.text


@dataclass(frozen=True)
class Const(Expr):
    value: float

    def src(self, traced: bool) -> str:
        return repr(self.value) if self.value >= 0 else f"({self.value!r})"


@dataclass(frozen=True)
class Bin(Expr):
    op: str
    a: Expr
    b: Expr

    def src(self, traced: bool) -> str:
        a, b = self.a.src(traced), self.b.src(traced)
        if self.op in ("min", "max"):
            return f"_T.{self.op}({a}, {b})" if traced else f"{self.op}({a}, {b})"
        if self.op == "/" and traced:
            return f"_T.div({a}, {b})"
        return f"({a} {self.op} {b})"


@dataclass(frozen=True)
class Un(Expr):
    fn: str
    a: Expr

    def src(self, traced: bool) -> str:
        a = self.a.src(traced)
        if self.fn == "neg":
            return f"(-{a})"
        if self.fn == "sq":
            return f"({a} ** 2)"
        if self.fn == "cube":
            return f"({a} ** 3)"
        if self.fn == "sqrt1":
            return f"math.sqrt({a} * {a} + 1.0)"
        if self.fn == "log1abs":
            return f"_T.log1abs({a})" if traced else f"math.log(abs({a}) + 1.0)"
        if self.fn == "exp" and traced:
            return f"_T.exp({a})"
        return f"math.{self.fn}({a})"


@dataclass(frozen=True)
class Cmp:
    op: str
    a: Expr
    b: Expr

    def src(self, traced: bool) -> str:
        a, b = self.a.src(traced), self.b.src(traced)
        return f"_T.cmp({self.op!r}, {a}, {b})" if traced else f"{a} {self.op} {b}"


BINARY = ("+", "*", "-", "/", "min", "max")
UNARY = ("sin", "neg", "sq", "cos", "tanh", "exp", "log1abs", "sqrt1", "cube")
CMPS = ("<", ">", "<=", ">=")
CONSTS = (0.5, 1.5, 2.0, -0.75, 0.25, 3.0, -1.25)


def draw_leaf(draw: Callable, env: list[str], consts: bool = True) -> Expr:
    """A variable from ``env`` (shrinks toward env[0]) or, sometimes, a constant."""
    k = draw(st.integers(0, len(env) - 1 + (1 if consts else 0)))
    if k < len(env):
        return Leaf(env[k])
    return Const(draw(st.sampled_from(CONSTS)))


def has_var(e: Expr) -> bool:
    if isinstance(e, Leaf):
        return True
    if isinstance(e, Bin):
        return has_var(e.a) or has_var(e.b)
    if isinstance(e, Un):
        return has_var(e.a)
    return False


def draw_expr(draw: Callable, env: list[str], depth: int) -> Expr:
    """A random float expression over ``env``, at most ``depth`` operators deep, that reads
    at least one variable."""
    e = _draw_expr(draw, env, depth)
    if not has_var(e):
        e = Bin(draw(st.sampled_from(("+", "*"))), e, draw_leaf(draw, env, consts=False))
    return e


def _draw_expr(draw: Callable, env: list[str], depth: int) -> Expr:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return draw_leaf(draw, env)
    if draw(st.booleans()):
        op = draw(st.sampled_from(BINARY))
        a = _draw_expr(draw, env, depth - 1)
        b = _draw_expr(draw, env, depth - 1)
        return Bin(op, a, b)
    fn = draw(st.sampled_from(UNARY))
    return Un(fn, _draw_expr(draw, env, depth - 1))


def draw_cmp(draw: Callable, env: list[str]) -> Cmp:
    op = draw(st.sampled_from(CMPS))
    a = draw_expr(draw, env, 1)
    b = draw_expr(draw, env, 1)
    return Cmp(op, a, b)


# --------------------------------------------------------------------------------------------
# Printing statements


class Emitter:
    """Accumulates the plain and traced source of one function body in lockstep."""

    def __init__(self) -> None:
        self.plain: list[str] = []
        self.traced: list[str] = []
        self.indent = 1

    def line(self, plain: str, traced: str | None = None) -> None:
        pad = "    " * self.indent
        self.plain.append(pad + plain)
        self.traced.append(pad + (plain if traced is None else traced))

    def assign(self, target: str, e: Expr, op: str = "=") -> None:
        if op == "=":
            self.line(f"{target} = {e.src(False)}", f"{target} = _T.v({e.src(True)})")
        else:  # augmented: target = target <op> e
            self.line(f"{target} {op}= {e.src(False)}",
                      f"{target} = _T.v({target} {op} {e.src(True)})")

    def if_(self, c: Cmp) -> None:
        self.line(f"if {c.src(False)}:", f"if {c.src(True)}:")
        self.indent += 1

    def else_(self) -> None:
        self.indent -= 1
        self.line("else:")
        self.indent += 1

    def block(self, header: str, traced: str | None = None) -> None:
        self.line(header, traced)
        self.indent += 1

    def end(self) -> None:
        self.indent -= 1


# --------------------------------------------------------------------------------------------
# Cases


_COUNTER = itertools.count()


@dataclass
class Case:
    """A generated program and the point to check it at."""

    kind: str
    params: list[str]
    emitter: Emitter
    args: tuple
    outputs: tuple[int, ...] = ()
    arg_src: list[str] = field(default_factory=list)
    #: ``@njit`` helper functions the program calls, as (plain, traced) source pairs
    helpers: list[tuple[str, str]] = field(default_factory=list)
    #: the program returns a tuple of floats (checked element-wise)
    returns_tuple: bool = False
    name: str = ""
    value_scale: float = 1.0  # set by screen()
    deriv_scale: float = 1.0  # set by screen()

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"gen_{self.kind}_{next(_COUNTER)}"

    def _text(self, lines: list[str], helpers: list[str]) -> str:
        main = "\n".join([f"def {self.name}({', '.join(self.params)}):"] + lines) + "\n"
        return "\n".join(helpers + [main])

    @property
    def source(self) -> str:
        return self._text(self.emitter.plain, [plain for plain, _ in self.helpers])

    @property
    def traced_source(self) -> str:
        return self._text(self.emitter.traced, [traced for _, traced in self.helpers])

    def describe(self) -> str:
        """The program and a Python expression for its arguments (for failure messages)."""
        args = ", ".join(self.arg_src) if self.arg_src else repr(self.args)
        return f"{self.source}\nargs = ({args},)\noutputs = {self.outputs}\n"

    def function(self) -> Callable:
        """The plain function (not jitted), with its source registered in ``linecache``."""
        filename = f"<progen {self.name}>"
        src = self.source
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        ns: dict = {"math": math, "np": np, "njit": numba.njit}
        exec(compile(src, filename, "exec"), ns)
        return ns[self.name]

    def traced_function(self) -> tuple[Callable, Tracer]:
        holder = Tracer()
        ns: dict = {"math": math, "np": np, "_T": holder, "njit": lambda f: f}
        exec(compile(self.traced_source, f"<progen traced {self.name}>", "exec"), ns)
        return ns[self.name], ns


# --------------------------------------------------------------------------------------------
# Screening (Python interpreter only, no compilation)


def _diff_slots(args: tuple) -> list[tuple[int, Any]]:
    """(arg index, element index or None) for every differentiable float."""
    slots: list[tuple[int, Any]] = []
    for i, a in enumerate(args):
        if is_float_scalar(a):
            slots.append((i, None))
        elif is_float_array(a):
            slots.extend((i, idx) for idx in np.ndindex(a.shape))
    return slots


class Screen:
    """Runs the traced program at (perturbations of) the case's point."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.fn, self.ns = case.traced_function()
        self.slots = _diff_slots(case.args)
        self.x0 = np.array([case.args[i] if idx is None else case.args[i][idx]
                            for i, idx in self.slots], dtype=np.float64)

    def run(self, x: np.ndarray) -> tuple[np.ndarray, list, float]:
        """Outputs (return value, then exit contents of every float array), the decisions
        and the smallest margin, at differentiable inputs ``x``. Records the largest value
        seen in ``self.value_scale``."""
        args = list(copy_args(self.case.args))
        for (i, idx), v in zip(self.slots, x):
            if idx is None:
                args[i] = float(v)
            else:
                args[i][idx] = v
        tracer = Tracer()
        self.ns["_T"] = tracer
        with np.errstate(all="raise"):
            try:
                ret = self.fn(*args)
            except (ZeroDivisionError, OverflowError, FloatingPointError, ValueError) as e:
                raise Reject(f"{type(e).__name__}: {e}") from None
        rets = () if ret is None else ret if isinstance(ret, tuple) else (ret,)
        ys = [tracer.v(r) for r in rets]
        for a in args:
            if is_float_array(a):
                ys.extend(tracer.v(v) for v in np.asarray(a).ravel(order="C"))
        self.value_scale = max(getattr(self, "value_scale", 0.0), tracer.maxabs,
                               float(np.max(np.abs(x), initial=0.0)))
        return np.array(ys, dtype=np.float64), tracer.decisions, tracer.margin


def screen(case: Case, rng_seed: int = 0) -> str | None:
    """None if the case is fit for derivative checks, else why not. Sets
    ``case.value_scale`` (largest |value| seen) and ``case.deriv_scale`` (largest |FD
    Jacobian entry|), which bound rounding error in derivative comparisons."""
    try:
        s = Screen(case)
        y0, dec0, margin = s.run(s.x0)
        if margin < MARGIN:
            return f"a decision is within {margin:.2g} of flipping"
        if y0.size == 0:
            return "no outputs"
        n = s.x0.size
        hs = FD_STEP * np.maximum(1.0, np.abs(s.x0))
        cols1, cols2 = [], []
        for k in range(n):
            e = np.zeros(n)
            e[k] = hs[k]
            ys = {}
            for m in (-2, -1, 1, 2):
                ys[m], dec, _ = s.run(s.x0 + m * e)
                if dec != dec0:
                    return f"a decision flips within the FD stencil of input {k}"
            cols1.append((ys[1] - ys[-1]) / (2 * hs[k]))
            cols2.append((ys[2] - ys[-2]) / (4 * hs[k]))
        # Random directions scaled like the forward checker's tangents.
        rng = np.random.default_rng(rng_seed)
        for _ in range(3):
            d = rng.choice([-1.0, 1.0], size=n) * hs
            for m in (-2, 2):
                if s.run(s.x0 + m * d)[1] != dec0:
                    return "a decision flips within the FD stencil along a diagonal"
        J1, J2 = np.array(cols1).T, np.array(cols2).T
        if not np.all(np.isfinite(J1)) or np.max(np.abs(J1), initial=0.0) > MAX_DERIV:
            return "huge derivative"
        scale = np.max(np.abs(J1), initial=0.0)
        tol = FD_ATOL + FD_RTOL * (np.abs(J1) + 1e-2 * scale)
        if np.any(np.abs(J1 - J2) > FD_AGREEMENT * tol):
            return "finite differences are noisy (steps h and 2h disagree)"
        case.value_scale, case.deriv_scale = s.value_scale, float(scale)
        return None
    except Reject as e:
        return f"rejected: {e}"


def python_outputs(case: Case) -> np.ndarray:
    """The traced program's outputs at the case's point (to compare with the Numba primal)."""
    s = Screen(case)
    return s.run(s.x0)[0]


# --------------------------------------------------------------------------------------------
# Input values

#: Scalar inputs: rounded so a failing example prints nicely.
scalar_values = st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3))


# --------------------------------------------------------------------------------------------
# Program shapes


def _scalar_params(draw: Callable) -> list[str]:
    return ["x", "y", "z"][: draw(st.integers(2, 3))]


def _straight_line(draw: Callable, em: Emitter, env: list[str], temps: list[str],
                   n_stmts: int, depth: int, fresh: Callable[[], str],
                   reassignable: list[str]) -> None:
    """``n_stmts`` statements: assignments, if/else, one-armed if, conditional expressions.
    New temps are appended to ``env``, ``temps`` and ``reassignable``."""
    def new(t: str) -> None:
        env.append(t)
        temps.append(t)
        if reassignable is not temps:
            reassignable.append(t)

    for _ in range(n_stmts):
        kind = draw(st.sampled_from(("assign", "ifelse", "assign", "if", "ternary", "reassign")))
        if kind == "assign":
            t = fresh()
            em.assign(t, draw_expr(draw, env, depth))
            new(t)
        elif kind == "reassign" and reassignable:
            t = draw(st.sampled_from(reassignable))
            em.assign(t, draw_expr(draw, env, depth))
        elif kind == "ifelse":
            t = fresh()
            em.if_(draw_cmp(draw, env))
            em.assign(t, draw_expr(draw, env, depth))
            if reassignable and draw(st.booleans()):
                em.assign(draw(st.sampled_from(reassignable)), draw_expr(draw, env, depth))
            em.else_()
            em.assign(t, draw_expr(draw, env, depth))
            em.end()
            new(t)
        elif kind == "if" and reassignable:
            em.if_(draw_cmp(draw, env))
            em.assign(draw(st.sampled_from(reassignable)), draw_expr(draw, env, depth))
            em.end()
        else:  # ternary (or a fallback when nothing is reassignable)
            t = fresh()
            c = draw_cmp(draw, env)
            a, b = draw_expr(draw, env, depth), draw_expr(draw, env, depth)
            em.line(f"{t} = {a.src(False)} if {c.src(False)} else {b.src(False)}",
                    f"{t} = _T.v({a.src(True)} if {c.src(True)} else {b.src(True)})")
            new(t)


def _namer(prefix: str = "t") -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"{prefix}{next(counter)}"


def _return(draw: Callable, em: Emitter, env: list[str], last: str) -> None:
    if draw(st.booleans()):
        em.line(f"return {last}", f"return _T.v({last})")
    else:
        e = Bin(draw(st.sampled_from(("+", "*", "-"))), Leaf(last), draw_expr(draw, env, 1))
        em.line(f"return {e.src(False)}", f"return _T.v({e.src(True)})")


@st.composite
def scalar_cases(draw: Callable) -> Case:
    """Straight-line scalar code over 2-3 float inputs, with branches and min/max."""
    params = _scalar_params(draw)
    em = Emitter()
    env, temps = list(params), []
    fresh = _namer()
    _straight_line(draw, em, env, temps, draw(st.integers(1, 6)), 3, fresh,
                   reassignable=list(params) if draw(st.booleans()) else temps)
    # every input should reach the result sometimes: the return mixes the last temp
    _return(draw, em, env, temps[-1] if temps else params[0])
    args = tuple(draw(scalar_values) for _ in params)
    return Case("scalar", params, em, args, arg_src=[repr(a) for a in args])


def _loop_segment(draw: Callable, em: Emitter, env: list[str], fresh: Callable[[], str],
                  acc: str) -> None:
    """for i in range(n): a few statements, ending with an update of ``acc`` and sometimes
    a data-dependent ``break``."""
    n = draw(st.integers(1, 6))
    em.block(f"for i in range({n}):")
    inner = env + ["(i * 0.25)"] + ([acc] if draw(st.booleans()) else [])
    temps: list[str] = []
    _straight_line(draw, em, inner, temps, draw(st.integers(0, 3)), 2, fresh,
                   reassignable=[acc])
    c = draw(st.sampled_from((0.5, 1.0, -0.8, 0.9)))
    em.assign(acc, Bin("+", Bin("*", Const(c), Leaf(acc)), draw_expr(draw, inner, 2)))
    if draw(st.integers(0, 3)) == 3:
        em.if_(Cmp(draw(st.sampled_from(CMPS)), Leaf(acc), Const(draw(st.sampled_from(CONSTS)))))
        em.line("break")
        em.end()
    em.end()


def _nested_segment(draw: Callable, em: Emitter, env: list[str], fresh: Callable[[], str],
                    acc: str) -> None:
    """Two nested loops (sometimes triangular) with an inner accumulator."""
    n1 = draw(st.integers(1, 4))
    inner_range = draw(st.sampled_from((str(draw(st.integers(1, 4))), "i + 1", "i")))
    s = fresh()
    em.block(f"for i in range({n1}):")
    em.assign(s, draw_expr(draw, env, 1) if draw(st.booleans()) else Const(0.0))
    em.block(f"for j in range({inner_range}):")
    inner = env + [s, "(i * 0.5)", "(j * 0.25)"]
    if draw(st.booleans()):
        em.if_(draw_cmp(draw, inner))
        em.assign(s, draw_expr(draw, inner, 2), op="+")
        em.else_()
        em.assign(s, draw_expr(draw, inner, 2), op="-")
        em.end()
    else:
        em.assign(s, draw_expr(draw, inner, 2), op=draw(st.sampled_from(("+", "*"))))
    em.end()
    em.assign(acc, Bin("+", Leaf(acc), draw_expr(draw, env + [s], 2)))
    em.end()


def _while_segment(draw: Callable, em: Emitter, env: list[str], fresh: Callable[[], str],
                   acc: str) -> None:
    """A while loop with a data-dependent exit, bounded by an iteration counter."""
    w, k = fresh(), fresh().replace("t", "k")
    limit = draw(st.integers(2, 8))
    cap = draw(st.sampled_from((1.0, 2.5, 4.0, -0.5)))
    em.assign(w, draw_expr(draw, env, 1))
    em.line(f"{k} = 0")
    # w grows by at least 0.3 per step, so the exit is data-dependent but bounded anyway
    step = Bin("+", Un("sq", draw_expr(draw, env + [acc], 1)), Const(0.3))
    if draw(st.booleans()):
        em.block(f"while {w} < {cap!r} and {k} < {limit}:",
                 f"while _T.cmp('<', {w}, {cap!r}) and {k} < {limit}:")
        em.assign(w, step, op="+")
        em.assign(acc, draw_expr(draw, env + [acc, w], 2), op=draw(st.sampled_from(("+", "-"))))
        em.line(f"{k} += 1")
        em.end()
    else:
        em.block(f"while {k} < {limit}:")
        em.line(f"{k} += 1")
        em.assign(acc, draw_expr(draw, env + [acc, w], 2), op="+")
        em.if_(Cmp(">", Leaf(w), Const(cap)))
        em.line("break")
        em.end()
        em.assign(w, step, op="+")
        em.end()


def _for_while_segment(draw: Callable, em: Emitter, env: list[str], fresh: Callable[[], str],
                       acc: str) -> None:
    """A counted loop around a while loop whose trip count depends on the data (a
    different count per outer iteration)."""
    w, k = fresh(), fresh().replace("t", "k")
    n = draw(st.integers(1, 4))
    limit = draw(st.integers(2, 5))
    cap = draw(st.sampled_from((1.0, 2.5, -0.5)))
    em.block(f"for i in range({n}):")
    inner = env + ["(i * 0.25)"]
    em.assign(w, draw_expr(draw, inner + [acc], 1))
    em.line(f"{k} = 0")
    em.block(f"while {w} < {cap!r} and {k} < {limit}:",
             f"while _T.cmp('<', {w}, {cap!r}) and {k} < {limit}:")
    em.assign(w, Bin("+", Un("sq", draw_expr(draw, inner, 1)), Const(0.4)), op="+")
    em.assign(acc, draw_expr(draw, inner + [acc, w], 2), op="+")
    em.line(f"{k} += 1")
    em.end()
    em.assign(acc, Bin("*", Const(0.5), Leaf(acc)))
    em.end()


@st.composite
def loop_cases(draw: Callable) -> Case:
    """Scalar code with counted loops, nested loops and while loops over a float carry."""
    params = _scalar_params(draw)
    em = Emitter()
    env = list(params)
    fresh = _namer()
    acc = "acc"
    em.assign(acc, draw_expr(draw, env, 2))
    segments = draw(st.lists(st.sampled_from(("for", "nested", "while", "for-while")),
                             min_size=1, max_size=2))
    for seg in segments:
        {"for": _loop_segment, "nested": _nested_segment, "while": _while_segment,
         "for-while": _for_while_segment}[seg](draw, em, env, fresh, acc)
    _return(draw, em, env + [acc], acc)
    args = tuple(draw(scalar_values) for _ in params)
    return Case("loop", params, em, args, arg_src=[repr(a) for a in args])


# -- arrays ------------------------------------------------------------------------------------

_VIEWS_1D = ("contiguous", "step2", "reversed")
_VIEWS_2D = ("contiguous", "transposed", "colstep2")


def _make_1d(draw: Callable, n: int) -> tuple[np.ndarray, str]:
    vals = [draw(scalar_values) for _ in range(n)]
    view = draw(st.sampled_from(_VIEWS_1D))
    if view == "contiguous":
        return np.array(vals), f"np.array({vals!r})"
    if view == "reversed":
        return np.array(vals[::-1])[::-1], f"np.array({vals[::-1]!r})[::-1]"
    base = np.zeros(2 * n)
    base[::2] = vals
    return base[::2], f"np.repeat(np.array({vals!r}), 2)[::2]"


def _make_2d(draw: Callable, m: int, n: int) -> tuple[np.ndarray, str]:
    vals = [[draw(scalar_values) for _ in range(n)] for _ in range(m)]
    view = draw(st.sampled_from(_VIEWS_2D))
    a = np.array(vals)
    if view == "contiguous":
        return a, f"np.array({vals!r})"
    if view == "transposed":
        return np.asfortranarray(a), f"np.asfortranarray(np.array({vals!r}))"
    base = np.repeat(a, 2, axis=1)
    return base[:, ::2], f"np.repeat(np.array({vals!r}), 2, axis=1)[:, ::2]"


@st.composite
def array_cases(draw: Callable) -> Case:
    """Loops over a 1-D array ``a`` (sometimes a 2-D ``B``, sometimes strided views) reading
    a[i] and a guarded a[i - 1], writing ``out[i]``, updating ``a`` or ``B`` in place,
    and/or reducing into a returned float."""
    n = draw(st.integers(2, 5))
    segments = draw(st.lists(st.sampled_from(("map", "reduce", "inplace", "matvec", "scan",
                                              "inplace2d", "stencil")), min_size=1,
                             max_size=3))
    if "stencil" in segments:
        n = max(n, 3)
    has_s = draw(st.booleans())
    params = ["a"] + (["s"] if has_s else [])
    if "map" in segments or "stencil" in segments:
        params.append("out")
    if "matvec" in segments or "inplace2d" in segments:
        params.append("B")
    m = draw(st.integers(1, 3))
    extra = ["s"] if has_s else []
    em = Emitter()
    fresh = _namer()
    returns = any(seg in ("reduce", "matvec", "scan") for seg in segments)
    if returns:
        em.assign("acc", Const(0.0) if draw(st.booleans()) else draw_expr(draw, extra or
                                                                         ["0.5"], 1))
    length = draw(st.sampled_from(("a.shape[0]", "len(a)", str(n))))
    inplace_a = "inplace" in segments
    for seg in segments:
        if seg == "map":
            # out[i] = f(a[i], a[i-1] guarded, s[, out[i]])
            p = fresh()
            em.block(f"for i in range({length}):")
            em.assign(p, draw_expr(draw, extra + ["(i * 0.5)"], 1))
            em.block("if i > 0:")
            em.assign(p, draw_expr(draw, ["a[i - 1]", p] + extra, 1))
            em.end()
            if draw(st.booleans()):  # recurrence through the output
                em.block("if i > 0:")
                em.assign(p, draw_expr(draw, ["out[i - 1]", p] + extra, 1))
                em.end()
            env = ["a[i]", p] + extra + (["out[i]"] if draw(st.booleans()) else [])
            em.assign("out[i]", draw_expr(draw, env, 2))
            em.end()
        elif seg == "stencil":
            # out[i] = f(a[i - 1], a[i], a[i + 1]) on the interior, overwritten boundary
            em.block(f"for i in range(1, {length} - 1):")
            em.assign("out[i]", draw_expr(draw, ["a[i - 1]", "a[i]", "a[i + 1]"] + extra, 2))
            em.end()
            em.assign(f"out[{length} - 1]", draw_expr(draw, [f"a[{length} - 1]"] + extra, 1))
            if draw(st.booleans()):
                em.assign("out[0]", draw_expr(draw, ["a[0]", "out[1]"] + extra, 1))
        elif seg == "reduce":
            em.block(f"for i in range({length}):")
            env = ["a[i]", "acc"] + extra
            if draw(st.booleans()):
                em.if_(draw_cmp(draw, ["a[i]"] + extra + ["(i * 0.5)"]))
                em.assign("acc", draw_expr(draw, env, 2), op="+")
                em.else_()
                em.assign("acc", draw_expr(draw, env, 2), op="-")
                em.end()
            else:
                em.assign("acc", draw_expr(draw, env, 2), op="+")
            em.end()
        elif seg == "inplace":
            if draw(st.booleans()):
                em.block(f"for i in range(1, {length}):")
            else:
                em.block(f"for i in range({length}):")
                em.block("if i == 0:")
                em.line("continue")
                em.end()
            env = ["a[i]", "a[i - 1]"] + extra
            if draw(st.booleans()):
                em.if_(draw_cmp(draw, env))
                em.assign("a[i]", draw_expr(draw, env, 2))
                em.else_()
                em.assign("a[i]", draw_expr(draw, env, 2))
                em.end()
            else:
                em.assign("a[i]", draw_expr(draw, env, 2))
            em.end()
        elif seg == "matvec":
            r = fresh()
            em.block("for i in range(B.shape[0]):")
            em.assign(r, Const(0.0))
            em.block("for j in range(B.shape[1]):")
            em.assign(r, Bin("*", Leaf("B[i, j]"), draw_expr(draw, ["a[j]", "B[i, j]"] + extra,
                                                                  1)), op="+")
            em.end()
            em.assign("acc", draw_expr(draw, [r, "acc"] + extra, 2), op="+")
            em.end()
        elif seg == "inplace2d":
            em.block("for i in range(B.shape[0]):")
            if draw(st.booleans()):
                em.block("for j in range(B.shape[1]):")
                em.assign("B[i, j]", draw_expr(draw, ["B[i, j]", "a[j]"] + extra, 2))
            else:  # sweep along a row, reading the updated left neighbour
                em.block("for j in range(1, B.shape[1]):")
                em.assign("B[i, j]", draw_expr(draw, ["B[i, j]", "B[i, j - 1]", "a[j]"] + extra,
                                               2))
            em.end()
            em.end()
        elif seg == "scan":
            # data-dependent exit: walk a while the running value stays below a cap
            k = fresh().replace("t", "k")
            cap = draw(st.sampled_from((0.5, 1.5, 3.0)))
            em.line(f"{k} = 0")
            em.block(f"while {k} < {length} and acc < {cap!r}:",
                     f"while {k} < {length} and _T.cmp('<', acc, {cap!r}):")
            if draw(st.booleans()):  # and overwrite the visited elements in place
                em.assign(f"a[{k}]", draw_expr(draw, [f"a[{k}]", "acc"] + extra, 2))
                inplace_a = True
            em.assign("acc", Bin("+", Un("sq", draw_expr(draw, [f"a[{k}]"] + extra, 1)),
                                 Const(0.2)), op="+")
            em.line(f"{k} += 1")
            em.end()
    if returns:
        _return(draw, em, ["acc"] + extra, "acc")

    args: list = []
    arg_src: list[str] = []
    outputs: list[int] = []
    for idx, p in enumerate(params):
        if p == "a":
            a, src = _make_1d(draw, n)
            if inplace_a:
                outputs.append(idx)
        elif p == "s":
            a = draw(scalar_values)
            src = repr(a)
        elif p == "out":
            a, src = _make_1d(draw, n)
            outputs.append(idx)
        else:  # B
            a, src = _make_2d(draw, m, n)
            if "inplace2d" in segments:
                outputs.append(idx)
        args.append(a)
        arg_src.append(src)
    return Case("array", params, em, tuple(args), tuple(outputs), arg_src)
