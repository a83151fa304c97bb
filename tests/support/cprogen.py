"""Random C functions for the C front end's differential tier (tests/test_random_c_programs.py).

``generate(seed, features)`` returns a ``Program``: the C source of one function ``f`` and the
description of its parameters (kind, activity, whether ``f`` writes its memory), drawn from
``random.Random(seed)`` only, so a seed reproduces the program exactly. ``features`` switches
on constructs one by one (``FEATURES`` says what each adds), so a test can enable exactly the
families the pass is known to handle and a bug hunt can isolate one.

Parameter kinds and the memory each owns (``N`` doubles per array, ``ROWS`` rows):

- ``scalar`` ``double x``: active or const;
- ``array`` ``double *a``: dup or const; written (in place or pure output) only when dup;
- ``ptr2`` ``double **p``: a table of ``ROWS`` pointers to arrays (the shadow table holds the
  shadow rows, Enzyme's convention);
- ``struct`` ``struct S *s`` with ``{long n; double w; double *data}``: ``n`` is ``N``, ``w`` and
  ``data[0..N)`` are floats;
- ``vec`` ``const v2 *v`` (``v2`` is ``double __attribute__((vector_size(16)))``): ``N / 2``
  vectors;
- ``long n`` (always last, ``N``).

tests/support/cprogen_more.py adds further statement shapes (helper calls, while loops, heap
and memcpy temporaries, globals, ...), each behind its feature.

Values stay tame by construction (``log`` and ``sqrt`` of ``1 + e*e``, divisions by ``1 + e*e``,
``exp`` of ``0.5 * e``); the checker (tests/support/ccheck.py) still screens each point.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.support import cprogen_more

#: feature -> what it adds to the drawn programs
FEATURES: dict[str, str] = {
    "math": "sin, cos, tanh, exp, log and sqrt of positive values",
    "pow": "pow(1 + e*e, 0.75) and pow(e, 2.0) / pow(e, 3.0) (negative bases)",
    "fabs": "fabs(e)",
    "fmaxmin": "fmax(e1, e2), fmin(e1, e2)",
    "branches": "if/else on float comparisons, also inside loops",
    "loops": "counted loops over arrays (sums, recurrences)",
    "output": "void functions writing output arrays and arrays updated in place",
    "ptr2": "double ** parameters (pointer tables in dup memory)",
    "struct": "struct {long n; double w; double *data} * parameters (loop bound from s->n)",
    "local_array": "fixed-size local double arrays filled and read in loops",
    "local_ptrs": "local arrays of pointers and local structs holding argument pointers",
    "vector": "vector_size(16) double vectors: parameters, arithmetic, lanes, shuffles",
    "libm2": "expm1, log1p, atan, cbrt, erf, floor, hypot, atan2, copysign, fma",
    "select": "conditional expressions c ? e1 : e2",
    "calls": "static helpers (inlined or noinline) returning a value or writing a pointer",
    "while": "while loops with a data-dependent trip count",
    "heap": "malloc'd temporary arrays",
    "memcpy": "local copies of arrays made with memcpy",
    "early_return": "return from the middle of the function",
    "int_index": "array indices computed from floats",
    "accum": "several loop iterations accumulating into one array element",
    "globals": "file-scope static doubles written with active values and read back",
    "punning": "fabs through the bits of a union {double; long}",
    "ptr_arith": "pointer arithmetic: walking pointers, reads through a + 1",
    "break": "loops left by break or continue on a data-dependent test",
    "vector_out": "a v2 * parameter updated with whole-vector loads, arithmetic and stores",
    "aos": "an array of struct {double x, y} (read, or its y fields rewritten)",
    "recurrence": "in-place recurrences a[i] = a[i-1] * c + e(a[i]), two sweeps",
}
ALL_FEATURES = frozenset(FEATURES)
_LIBM2_UNARY = {"expm1": "expm1(0.5 * ({0}))", "log1p": "log1p(({0}) * ({0}))",
                "atan": "atan({0})", "cbrt": "cbrt(1.0 + ({0}) * ({0}))", "erf": "erf({0})",
                "floor": "(floor(2.0 * ({0})) * 0.25 + ({0}))"}
_LIBM2_BINARY = {"hypot": "hypot({0}, {1})", "atan2": "atan2({0}, 1.5 + ({1}) * ({1}))",
                 "copysign": "copysign({0}, {1})", "fma": "fma({0}, {1}, {2})"}
_UNARY_FEATURE = {**dict.fromkeys(("sin", "cos", "tanh", "exp", "log", "sqrt"), "math"),
                  **dict.fromkeys(("powf", "pow2", "pow3"), "pow"), "fabs": "fabs",
                  **dict.fromkeys(_LIBM2_UNARY, "libm2")}
#: doubles per array (even: vector parameters hold N / 2 vectors), rows of a ptr2 table
N, ROWS = 4, 2

PRELUDE = f"""#include <math.h>
#include <stdlib.h>
#include <string.h>
#define N {N}
#define ROWS {ROWS}
typedef double v2 __attribute__((vector_size(16)));
struct S {{ long n; double w; double *data; }};
struct P {{ double x, y; }};
"""


@dataclass(frozen=True)
class Param:
    kind: str            # scalar, array, ptr2, struct, vec, int
    name: str
    active: bool         # active scalar / dup memory
    written: bool = False

    def ctype(self) -> str:
        return {"scalar": "double", "array": "double *", "ptr2": "double **",
                "struct": "struct S *", "vec": "v2 *" if self.written else "const v2 *",
                "pts": "struct P *",
                "int": "long"}[self.kind]

    def floats(self) -> int:
        """How many floats the parameter holds (its value or its memory)."""
        return {"scalar": 1, "array": N, "ptr2": ROWS * N, "struct": 1 + N, "vec": N,
                "pts": 2 * N, "int": 0}[self.kind]


@dataclass
class Program:
    seed: int
    features: frozenset
    params: list[Param]
    returns: bool                       # double (True) or void
    source: str = ""
    body: list[str] = field(default_factory=list)
    uses: frozenset = frozenset()       # the features the drawn program actually contains

    def signature(self) -> str:
        args = ", ".join(f"{p.ctype()}{'' if p.ctype().endswith('*') else ' '}{p.name}"
                         for p in self.params)
        return f"{'double' if self.returns else 'void'} f({args})"


class _Gen:
    """The drawing state of one program: random source, features, names in scope."""

    def __init__(self, rng: random.Random, features: frozenset, params: list[Param],
                 returns: bool):
        self.rng, self.features, self.params, self.returns = rng, features, params, returns
        self.lines: list[str] = []
        self.scalars = [p.name for p in params if p.kind == "scalar"]
        self.temps: list[str] = []
        self.count = 0
        self.uses: set[str] = set()
        self.helpers: list[str] = []

    def has(self, feature: str) -> bool:
        return feature in self.features

    def fresh(self, prefix: str = "t") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self) -> str:
        return self.rng.choice(("0.5", "1.5", "2.0", "-0.75", "0.25", "3.0", "-1.25"))

    # -- expressions --------------------------------------------------------------------

    def expr(self, leaves: list[str], depth: int = 2) -> str:
        """A double expression over `leaves` (C expressions) and constants."""
        r = self.rng
        if depth == 0 or r.random() < 0.25:
            return r.choice(leaves) if r.random() < 0.85 else self.const()
        unary = ["neg", "sq"]
        unary += ["sin", "cos", "tanh", "exp", "log", "sqrt"] if self.has("math") else []
        unary += ["powf", "pow2", "pow3"] if self.has("pow") else []
        unary += ["fabs"] if self.has("fabs") else []
        unary += list(_LIBM2_UNARY) if self.has("libm2") else []
        if r.random() < 0.35:
            e = self.expr(leaves, depth - 1)
            u = r.choice(unary)
            if u in _UNARY_FEATURE:
                self.uses.add(_UNARY_FEATURE[u])
            if u in _LIBM2_UNARY:
                return _LIBM2_UNARY[u].format(e)
            return {"neg": f"-({e})", "sq": f"({e}) * ({e})", "sin": f"sin({e})",
                    "cos": f"cos({e})", "tanh": f"tanh({e})", "exp": f"exp(0.5 * ({e}))",
                    "log": f"log(1.0 + ({e}) * ({e}))", "sqrt": f"sqrt(0.5 + ({e}) * ({e}))",
                    "powf": f"pow(1.0 + ({e}) * ({e}), 0.75)", "pow2": f"pow({e}, 2.0)",
                    "pow3": f"pow({e}, 3.0)", "fabs": f"fabs({e})"}[u]
        if self.has("select") and r.random() < 0.15:
            self.uses.add("select")
            return f"({self.cond(leaves)} ? {self.expr(leaves, depth - 1)} : " \
                   f"{self.expr(leaves, depth - 1)})"
        binary = ["+", "-", "*", "/"] + (["fmax", "fmin"] if self.has("fmaxmin") else [])
        binary += list(_LIBM2_BINARY) if self.has("libm2") else []
        op = r.choice(binary)
        a, b = self.expr(leaves, depth - 1), self.expr(leaves, depth - 1)
        if op in _LIBM2_BINARY:
            self.uses.add("libm2")
            return _LIBM2_BINARY[op].format(a, b, self.rng.choice(leaves))
        if op == "/":
            return f"({a}) / (1.0 + ({b}) * ({b}))"
        if op in ("fmax", "fmin"):
            self.uses.add("fmaxmin")
            return f"{op}({a}, {b})"
        return f"({a} {op} {b})"

    def env(self) -> list[str]:
        return self.scalars + self.temps

    def cond(self, leaves: list[str]) -> str:
        return f"{self.expr(leaves, 1)} {self.rng.choice(('<', '>', '<=', '>='))} " \
               f"{self.expr(leaves, 1)}"

    def accumulate(self, t: str, leaves: list[str], indent: str) -> None:
        """`t += e`, a recurrence `t = t * c + e`, or (branches) a choice between two."""
        r = self.rng
        e = self.expr(leaves)
        if self.has("branches") and r.random() < 0.3:
            self.uses.add("branches")
            self.lines += [f"{indent}if ({self.cond(leaves)}) {t} += {e};",
                           f"{indent}else {t} -= {self.expr(leaves, 1)};"]
        elif r.random() < 0.3:
            self.lines.append(f"{indent}{t} = {t} * 0.5 + {e};")
        else:
            self.lines.append(f"{indent}{t} += {e};")

    # -- segments: each defines one new temporary ----------------------------------------

    def seg_let(self) -> None:
        t = self.fresh()
        self.lines.append(f"  double {t} = {self.expr(self.env(), 3)};")
        self.temps.append(t)

    def seg_branch(self) -> None:
        t, env = self.fresh(), self.env()
        self.uses.add("branches")
        self.lines += [f"  double {t};", f"  if ({self.cond(env)}) {{",
                       f"    {t} = {self.expr(env)};", "  } else {",
                       f"    {t} = {self.expr(env)};", "  }"]
        self.temps.append(t)

    def seg_array_loop(self) -> None:
        a = self.rng.choice([p.name for p in self.params if p.kind == "array"])
        t = self.fresh()
        self.uses.add("loops")
        self.lines += [f"  double {t} = {self.const()};", "  for (long i = 0; i < n; i++) {"]
        self.accumulate(t, self.env() + [f"{a}[i]", f"{a}[(i + 1) % n]"] * 2, "    ")
        self.lines.append("  }")
        self.temps.append(t)

    def seg_write_loop(self) -> None:
        """Writes a dup array: a pure output or an in-place update."""
        dst = self.rng.choice([p for p in self.params if p.written and p.kind == "array"])
        self.uses.add("output")
        reads = [p.name for p in self.params if p.kind == "array" and not p.written]
        leaves = self.env() + [f"{a}[i]" for a in reads] + [f"{dst.name}[i]"] * (
            dst.name.startswith("io"))
        self.lines += ["  for (long i = 0; i < n; i++) {",
                       f"    {dst.name}[i] = {self.expr(leaves)};", "  }"]

    def seg_ptr2(self) -> None:
        p = self.rng.choice([q for q in self.params if q.kind == "ptr2"])
        t = self.fresh()
        self.uses.add("ptr2")
        self.lines += [f"  double {t} = 0.0;", "  for (long r = 0; r < ROWS; r++) {",
                       f"    double *row = {p.name}[r];", "    for (long i = 0; i < n; i++) {"]
        leaves = self.env() + ["row[i]", f"{p.name}[r][i]", f"{p.name}[(r + 1) % ROWS][i]"] * 2
        if p.written and self.rng.random() < 0.5:
            self.lines.append(f"      row[i] = {self.expr(leaves, 1)};")
        self.accumulate(t, leaves, "      ")
        self.lines += ["    }", "  }"]
        self.temps.append(t)

    def seg_struct(self) -> None:
        s = self.rng.choice([q.name for q in self.params if q.kind == "struct"])
        t = self.fresh()
        self.uses.add("struct")
        self.lines += [f"  double {t} = {s}->w;", f"  for (long i = 0; i < {s}->n; i++) {{"]
        self.accumulate(t, self.env() + [f"{s}->data[i]", f"{s}->w * {s}->data[i]"] * 2, "    ")
        self.lines.append("  }")
        self.temps.append(t)

    def seg_local_array(self) -> None:
        arrays = [p.name for p in self.params if p.kind == "array"]
        loc, t = self.fresh("loc"), self.fresh()
        self.uses.add("local_array")
        src = [f"{self.rng.choice(arrays)}[i]"] if arrays else []
        self.lines += [f"  double {loc}[N];", "  for (long i = 0; i < N; i++)",
                       f"    {loc}[i] = {self.expr(self.env() + src + ['(double)i'])};",
                       f"  double {t} = {loc}[{self.rng.randrange(N)}];",
                       "  for (long i = 1; i < N; i++) {"]
        self.accumulate(t, self.env() + [f"{loc}[i]", f"{loc}[i] * {loc}[i - 1]"], "    ")
        self.lines.append("  }")
        self.temps.append(t)

    def seg_local_ptrs(self) -> None:
        arrays = [p.name for p in self.params if p.kind == "array"]
        t = self.fresh()
        self.uses.add("local_ptrs")
        if self.rng.random() < 0.5 or not self.env():
            tab = self.fresh("tab")
            pick = [self.rng.choice(arrays) for _ in range(2)]
            self.lines += [f"  double *{tab}[2] = {{{pick[0]}, {pick[1]}}};",
                           f"  double **q{tab} = {tab};", f"  double {t} = 0.0;",
                           "  for (long i = 0; i < n; i++) {"]
            self.accumulate(t, self.env() + [f"{tab}[i % 2][i]", f"q{tab}[1][(i + 1) % n]"],
                            "    ")
            self.lines.append("  }")
        else:
            ls = self.fresh("ls")
            w = self.rng.choice(self.env())
            self.lines += [f"  struct S {ls} = {{n, {w}, {self.rng.choice(arrays)}}};",
                           f"  double {t} = 0.0;", f"  for (long i = 0; i < {ls}.n; i++) {{"]
            self.accumulate(t, self.env() + [f"{ls}.w * {ls}.data[i]", f"{ls}.data[i]"], "    ")
            self.lines.append("  }")
        self.temps.append(t)

    def seg_vector(self) -> None:
        vecs = [p.name for p in self.params if p.kind == "vec" and not p.written]
        r, env = self.rng, self.env()
        v, t = self.fresh("vv"), self.fresh()
        self.uses.add("vector")
        src = r.choice(vecs) if vecs else None
        init = [f"{{{self.expr(env, 1)}, {self.expr(env, 1)}}}"]
        init += [f"{src}[0]", f"{src}[0] * {src}[1]"] if src else []
        self.lines.append(f"  v2 {v} = {r.choice(init)};")
        if src:
            terms = [f"{src}[i]", f"{src}[i] * {src}[i]",
                     f"__builtin_shufflevector({src}[i], {v}, 1, 2)",
                     f"{src}[i] / ({v} * {v} + 1.0)"]
            self.lines += ["  for (long i = 0; i < N / 2; i++) {",
                           f"    {v} = {v} * 0.5 + {r.choice(terms)};", "  }"]
        ops = [f"{v} = {v} * {v} - {r.choice(env)};",
               f"{v} = __builtin_shufflevector({v}, {v}, 1, 0) + {v};",
               f"{v}[{r.randrange(2)}] = {self.expr(env + [f'{v}[0]', f'{v}[1]'], 1)};",
               f"{v} = {v} / ({v} * {v} + 2.0);"]
        for op in r.sample(ops, 2):
            self.lines.append(f"  {op}")
        self.lines.append(f"  double {t} = {v}[0] * {self.const()} + {v}[1];")
        self.temps.append(t)

    def segments(self) -> list:
        kinds = {p.kind for p in self.params}
        segs = [self.seg_let, self.seg_let]
        if self.has("branches"):
            segs.append(self.seg_branch)
        if self.has("loops") and "array" in kinds:
            segs += [self.seg_array_loop] * 2
        if any(p.written and p.kind == "array" for p in self.params):
            segs.append(self.seg_write_loop)
        if "ptr2" in kinds:
            segs += [self.seg_ptr2] * 2
        if "struct" in kinds:
            segs += [self.seg_struct] * 2
        if self.has("local_array"):
            segs.append(self.seg_local_array)
        if self.has("local_ptrs") and "array" in kinds:
            segs.append(self.seg_local_ptrs)
        if self.has("vector"):
            segs += [self.seg_vector] * 2
        return segs + cprogen_more.segments(self, self.returns)


def _draw_params(rng: random.Random, features: frozenset) -> tuple[list[Param], bool]:
    params = [Param("scalar", f"x{i}", rng.random() < 0.7) for i in range(rng.randint(1, 3))]
    output = "output" in features
    for i in range(rng.randint(1, 2)):
        active = rng.random() < 0.75
        inplace = output and active and rng.random() < 0.3
        params.append(Param("array", f"{'io' if inplace else 'a'}{i}", active, inplace))
    returns = not output or rng.random() < 0.6
    if output and (not returns or rng.random() < 0.3):
        params.append(Param("array", "out", True, True))
    if "ptr2" in features and rng.random() < 0.6:
        active = rng.random() < 0.8
        params.append(Param("ptr2", "p", active, output and active and rng.random() < 0.3))
    if "struct" in features and rng.random() < 0.6:
        params.append(Param("struct", "s", rng.random() < 0.8))
    if "vector" in features and rng.random() < 0.6:
        params.append(Param("vec", "v", rng.random() < 0.8))
    if "vector_out" in features and rng.random() < 0.7:
        params.append(Param("vec", "vo", True, True))
    if "aos" in features and rng.random() < 0.7:
        active = rng.random() < 0.8
        params.append(Param("pts", "pts", active, active and rng.random() < 0.5))
    if not any(p.active for p in params):
        params[0] = Param("scalar", "x0", True)
    return params + [Param("int", "n", False)], returns


def generate(seed: int, features=ALL_FEATURES) -> Program:
    """The program of `seed` with the constructs of `features` (see FEATURES)."""
    features = frozenset(features)
    unknown = features - ALL_FEATURES
    assert not unknown, f"unknown features {sorted(unknown)}; known: {sorted(FEATURES)}"
    rng = random.Random(seed)
    params, returns = _draw_params(rng, features)
    g = _Gen(rng, features, params, returns)
    segs = g.segments()
    for _ in range(rng.randint(2, 5)):
        rng.choice(segs)()
    # the special segments of the drawn parameters at least once
    for seg, needed in ((g.seg_write_loop, any(p.written and p.kind == "array" for p in params)),
                        (g.seg_ptr2, any(p.kind == "ptr2" for p in params)),
                        (g.seg_struct, any(p.kind == "struct" for p in params)),
                        (g.seg_vector, any(p.kind == "vec" and not p.written for p in params)),
                        (lambda: cprogen_more.seg_vector_out(g),
                         any(p.name == "vo" for p in params)),
                        (lambda: cprogen_more.seg_aos(g), any(p.kind == "pts" for p in params))):
        if needed:
            seg()
    coeffs = [f"{g.const()} * {t}" for t in g.temps] or ["0.0"]
    total = " + ".join(coeffs)
    if returns:
        g.lines.append(f"  return {g.expr([total], 1)};")
    else:
        dst = next(p.name for p in params if p.written)
        g.lines.append(f"  {dst}[{rng.randrange(N)}] += {total};")
    if not returns:
        g.uses.add("output")
    prog = Program(seed, features, params, returns, body=g.lines, uses=frozenset(g.uses))
    prog.source = (f"/* seed {seed}, features {','.join(sorted(features))} */\n{PRELUDE}\n"
                   + "".join(g.helpers)
                   + f"{prog.signature()} {{\n" + "\n".join(g.lines) + "\n}\n")
    return prog
