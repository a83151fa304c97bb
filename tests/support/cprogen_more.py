"""More statement shapes for the random C programs of tests/support/cprogen.py.

Each ``seg_*`` function appends one segment to a program being drawn (``cprogen._Gen``):
helper calls (inlined or ``noinline``, returning a value or writing through a pointer),
``while`` loops with a data-dependent exit, ``malloc``'d and ``memcpy``'d temporaries, early
returns, integer indices computed from floats, scatter accumulation into an array, file-scope
globals holding active values, type punning through a union, pointer arithmetic, loops
left by ``break`` / ``continue``, whole-vector updates of a ``v2 *`` parameter, arrays of
structs and in-place recurrences.
``segments(g)`` lists those the program's features and parameters allow; it draws nothing
from the random source, so programs without these features are unchanged.
"""
from __future__ import annotations


def _arrays(g) -> list[str]:
    return [p.name for p in g.params if p.kind == "array"]


def seg_call(g) -> None:
    """A helper `static double hK(const double *p, double y, long n)` summing over `p`, or
    `static void hK(double *dst, const double *src, double y, long n)` filling `dst`."""
    r, env, t = g.rng, g.env(), g.fresh()
    h = g.fresh("h")
    attr = "__attribute__((noinline)) " if r.random() < 0.5 else ""
    src = r.choice(_arrays(g))
    g.uses.add("calls")
    if r.random() < 0.5:
        acc = "acc = acc * 0.5 + " if r.random() < 0.4 else "acc += "
        g.helpers.append(
            f"static {attr}double {h}(const double *p, double y, long n) {{\n"
            f"  double acc = y;\n  for (long i = 0; i < n; i++)\n"
            f"    {acc}{g.expr(['p[i]', 'y', 'p[i] * y', 'acc'])};\n  return acc;\n}}\n")
        g.lines.append(f"  double {t} = {h}({src}, {g.expr(env, 1)}, n);")
    else:
        loc = g.fresh("loc")
        g.helpers.append(
            f"static {attr}void {h}(double *dst, const double *src, double y, long n) {{\n"
            f"  for (long i = 0; i < n; i++)\n"
            f"    dst[i] = {g.expr(['src[i]', 'y', 'src[i] * y'])};\n}}\n")
        g.lines += [f"  double {loc}[N];", f"  {h}({loc}, {src}, {g.expr(env, 1)}, n);",
                    f"  double {t} = {loc}[0] * {g.const()} + {loc}[N - 1];"]
    g.temps.append(t)


def seg_while(g) -> None:
    """A loop whose trip count depends on the data: t grows until it passes 3."""
    env, t, k = g.env(), g.fresh(), g.fresh("k")
    g.uses.add("while")
    e = g.expr(env, 1)
    g.lines += [f"  double {t} = ({g.expr(env, 1)}) * ({g.expr(env, 1)}) * 0.1 + 0.1;",
                f"  long {k} = 0;", f"  while ({t} < 3.0 && {k} < 12) {{",
                f"    {t} = {t} * 1.5 + ({e}) * ({e}) * 0.1 + 0.05;", f"    {k}++;", "  }"]
    g.temps.append(t)


def seg_heap(g) -> None:
    """A malloc'd temporary filled from an array, read back and freed."""
    src, hp, t = g.rng.choice(_arrays(g)), g.fresh("hp"), g.fresh()
    g.uses.add("heap")
    g.lines += [f"  double *{hp} = (double *)malloc(N * sizeof(double));",
                "  for (long i = 0; i < N; i++)",
                f"    {hp}[i] = {g.expr(g.env() + [f'{src}[i]'] * 2)};",
                f"  double {t} = 0.0;", "  for (long i = 0; i < N; i++)",
                f"    {t} += {hp}[i] * {g.expr(g.env() + [f'{hp}[i]'], 1)};", f"  free({hp});"]
    g.temps.append(t)


def seg_memcpy(g) -> None:
    """A local copy of an array made with memcpy, updated, then read."""
    src, mc, t = g.rng.choice(_arrays(g)), g.fresh("mc"), g.fresh()
    g.uses.add("memcpy")
    g.lines += [f"  double {mc}[N];", f"  memcpy({mc}, {src}, sizeof {mc});",
                "  for (long i = 0; i < N; i++)",
                f"    {mc}[i] = {g.expr(g.env() + [f'{mc}[i]'] * 2, 1)};",
                f"  double {t} = {mc}[{g.rng.randrange(4)}] + {mc}[1] * {g.const()};"]
    g.temps.append(t)


def seg_early_return(g, returns: bool) -> None:
    env = g.env()
    g.uses.add("early_return")
    value = f" {g.expr(env)}" if returns else ""
    g.lines.append(f"  if ({g.cond(env)}) return{value};")


def seg_int_index(g) -> None:
    """An array element at an index computed from a float (`(long)(fabs(e) * 3) % N`)."""
    src, k, t = g.rng.choice(_arrays(g)), g.fresh("k"), g.fresh()
    g.uses.add("int_index")
    g.lines += [f"  long {k} = (long)(fabs({g.expr(g.env(), 1)}) * 3.0) % N;",
                f"  double {t} = {src}[{k}] * {g.expr(g.env(), 1)} + {src}[(N - 1 - {k})];"]
    g.temps.append(t)


def seg_scatter(g) -> None:
    """`dst[i % 2] += e` over a loop: several iterations accumulate into one element."""
    dst = g.rng.choice([p.name for p in g.params if p.written and p.kind == "array"])
    g.uses.add("accum")
    leaves = g.env() + [f"{a}[i]" for a in _arrays(g) if a != dst] * 2
    g.lines += ["  for (long i = 0; i < n; i++)",
                f"    {dst}[i % 2] += {g.expr(leaves)};"]


def seg_global(g) -> None:
    """A file-scope `static double` written with an active value and read back (directly or
    in a noinline helper)."""
    gl, t = g.fresh("g"), g.fresh()
    g.uses.add("globals")
    g.helpers.append(f"static double {gl};\n")
    g.lines.append(f"  {gl} = {g.expr(g.env())};")
    if g.rng.random() < 0.5:
        h = g.fresh("h")
        g.helpers.append(f"static __attribute__((noinline)) double {h}(double y) "
                         f"{{ return {gl} * y + {gl}; }}\n")
        g.lines.append(f"  double {t} = {h}({g.expr(g.env(), 1)});")
    else:
        g.lines.append(f"  double {t} = {gl} * {g.expr(g.env() + [gl], 1)};")
    g.temps.append(t)


def seg_punning(g) -> None:
    """|e| through the bits of a union {double; long} (the sign bit cleared)."""
    u, t = g.fresh("u"), g.fresh()
    g.uses.add("punning")
    g.lines += [f"  union {{ double d; long l; }} {u};", f"  {u}.d = {g.expr(g.env())};",
                f"  {u}.l &= 0x7fffffffffffffffL;", f"  double {t} = {u}.d;"]
    g.temps.append(t)


def seg_ptr_arith(g) -> None:
    """A loop walking a pointer from `a` to `a + n`, or reads through `a + 1`."""
    src, t = g.rng.choice(_arrays(g)), g.fresh()
    g.uses.add("ptr_arith")
    if g.rng.random() < 0.5:
        g.lines += [f"  double {t} = 0.0;",
                    f"  for (const double *q = {src}; q < {src} + n; q++)",
                    f"    {t} += {g.expr(g.env() + ['*q', 'q[0] * q[0]'])};"]
    else:
        q = g.fresh("q")
        g.lines += [f"  const double *{q} = {src} + 1;",
                    f"  double {t} = {q}[0] * {g.expr(g.env() + [f'{q}[2]', f'{q}[-1]'])};"]
    g.temps.append(t)


def seg_break(g) -> None:
    """A loop over an array left early (break) or skipping elements (continue)."""
    src, t = g.rng.choice(_arrays(g)), g.fresh()
    g.uses.add("break")
    leaves = g.env() + [f"{src}[i]"] * 2
    jump = g.rng.choice(("break", "continue"))
    g.lines += [f"  double {t} = {g.const()};", "  for (long i = 0; i < n; i++) {",
                f"    if ({src}[i] > {g.rng.choice(('0.8', '-0.3', '0.1'))}) {jump};",
                f"    {t} += {g.expr(leaves)};", "  }"]
    g.temps.append(t)


def seg_vector_out(g) -> None:
    """`vo[i] = <whole-vector expression>`: vector loads, arithmetic with constant splats and
    stores, no lane access (the reverse pass sees only vector memory)."""
    g.uses.add("vector_out")
    srcs = ["vo[i]"] + [f"{p.name}[i]" for p in g.params if p.kind == "vec" and not p.written]
    a, b = g.rng.choice(srcs), g.rng.choice(srcs)
    e = g.rng.choice((f"{a} * {b}", f"{a} * {b} + vo[i] * 0.5", f"vo[i] / ({a} * {a} + 1.0)",
                      f"({a} - {b}) * ({a} + {b}) + vo[i]"))
    g.lines += ["  for (long i = 0; i < N / 2; i++)", f"    vo[i] = {e};"]


def seg_aos(g) -> None:
    """A loop over `struct P {double x, y;} *pts`, rewriting the y fields when written."""
    p = next(q for q in g.params if q.kind == "pts")
    t = g.fresh()
    g.uses.add("aos")
    leaves = g.env() + ["pts[i].x", "pts[i].y", "pts[i].x * pts[i].y"]
    g.lines += [f"  double {t} = 0.0;", "  for (long i = 0; i < n; i++) {"]
    if p.written:
        g.lines.append(f"    pts[i].y = {g.expr(leaves, 1)};")
    g.accumulate(t, leaves, "    ")
    g.lines.append("  }")
    g.temps.append(t)


def seg_recurrence(g) -> None:
    """Two sweeps of `a[i] = a[i - 1] * c + e(a[i])` over an array updated in place (the
    reverse pass needs values the sweeps overwrite)."""
    dst = g.rng.choice([p.name for p in g.params if p.written and p.kind == "array"])
    g.uses.add("recurrence")
    leaves = g.env() + [f"{dst}[i]"] * 3
    g.lines += ["  for (int sweep = 0; sweep < 2; sweep++)", "    for (long i = 1; i < n; i++)",
                f"      {dst}[i] = {dst}[i - 1] * {g.const()} * 0.5 + {g.expr(leaves)};"]


def segments(g, returns: bool) -> list:
    has_array = bool(_arrays(g))
    segs = []
    for feat, seg, ok in (("calls", seg_call, has_array), ("while", seg_while, True),
                          ("heap", seg_heap, has_array), ("memcpy", seg_memcpy, has_array),
                          ("int_index", seg_int_index, has_array),
                          ("accum", seg_scatter,
                           any(p.written and p.kind == "array" for p in g.params)),
                          ("globals", seg_global, True), ("punning", seg_punning, True),
                          ("ptr_arith", seg_ptr_arith, has_array),
                          ("break", seg_break, has_array),
                          ("recurrence", seg_recurrence,
                           any(p.written and p.kind == "array" for p in g.params))):
        if g.has(feat) and ok:
            segs.append(lambda seg=seg: seg(g))
    if g.has("early_return"):
        segs.append(lambda: seg_early_return(g, returns))
    return segs
