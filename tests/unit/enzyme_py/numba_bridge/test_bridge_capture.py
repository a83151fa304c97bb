"""Capturing canonical, self-contained primal IR from Numba (enzyme_py.numba_bridge.capture)."""
import inspect
import math
import re
import warnings

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit, types

from enzyme_py.numba_bridge import capture as cap
from enzyme_py.numba_bridge.capture import LOC_METADATA, capture
from ir_passes.canonicalize import verify
from ir_passes.errors import UnsupportedError

f8 = types.float64
C1, A1, C2 = types.float64[::1], types.float64[:], types.float64[:, ::1]
LIBM = {"sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "hypot", "atan2", "erf", "floor"}


@njit
def helper(x):
    return x * x + 1.0


@njit
def scalar(x, y):
    return x * y + math.sin(x)


@njit
def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


@njit
def sum2d(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
    return s


@njit
def scale_into(a, out):
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i]) * 2.0


@njit
def shrink(x):
    n = 0
    while x > 1e-3 and n < 1000:
        x = math.cos(x) * x * 0.5
        n += 1
    return x


@njit
def calls_helper(x, y):
    return helper(x) * helper(y)


@njit
def powers(x):
    return x ** 2 + x ** 5


@njit
def minmax(x, y):
    return min(x, y) + max(x * 2.0, y) + x % y + math.hypot(x, y)


@njit
def libm(x, y):
    return math.tanh(x) + math.erf(y) + math.gamma(x) + math.sqrt(y) + math.atan2(x, y)


@njit
def pair(x):
    return x * 2.0, x + 1.0


@njit
def allocates(a, b):
    t = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        t[i] = a[i] * 2.0
    return (t * (a + b)).sum()


def _line_of(dispatcher, snippet):
    lines, first = inspect.getsourcelines(dispatcher.py_func)
    return first + next(i for i, line in enumerate(lines) if snippet in line)


def _primal(captured):
    return llvm.parse_assembly(captured.module_text).get_function(captured.func_name)


def _body(captured):
    return str(_primal(captured))


def _callees(captured):
    return set(re.findall(r'call [^@]*@"?([\w.$]+)"?\(', _body(captured)))


def _check_self_contained(captured):
    """One definition (the primal), declarations only for runtime/libm/intrinsics, verifies."""
    verify(captured.module_text)
    module = llvm.parse_assembly(captured.module_text)
    defined = [f.name for f in module.functions if not f.is_declaration]
    assert defined == [captured.func_name]
    for fn in module.functions:
        if fn.is_declaration:
            assert (fn.name.startswith(("NRT_", "llvm.", "numba_")) or fn.name in LIBM), fn.name
    assert "cpython." not in captured.module_text and "cfunc." not in captured.module_text
    assert "!dbg" not in captured.module_text and "DISubprogram" not in captured.module_text
    return module


CASES = [(scalar, (f8, f8)), (sumsq, (C1,)), (sumsq, (A1,)), (sum2d, (C2,)),
         (scale_into, (C1, C1)), (shrink, (f8,)), (calls_helper, (f8, f8)), (powers, (f8,)),
         (minmax, (f8, f8)), (libm, (f8, f8)), (pair, (f8,)), (allocates, (C1, C1))]


@pytest.mark.parametrize("dispatcher, argtypes", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_capture_is_self_contained_canonical_and_cached(dispatcher, argtypes):
    captured = capture(dispatcher, argtypes)
    _check_self_contained(captured)
    assert captured.argtypes == argtypes and capture(dispatcher, argtypes) is captured
    assert " alloca " not in _body(captured)      # SROA'd
    assert captured.func_name in captured.raw_text and captured.library is not None
    verify(captured.raw_text)


def test_param_layout_matches_llvm_signature():
    expect = {(scalar, (f8, f8)): [("x", (2,)), ("y", (3,))],
              (sumsq, (C1,)): [("a", tuple(range(2, 9)))],
              (sum2d, (C2,)): [("a", tuple(range(2, 11)))],
              (scale_into, (C1, C1)): [("a", tuple(range(2, 9))), ("out", tuple(range(9, 16)))]}
    for (dispatcher, argtypes), layout in expect.items():
        captured = capture(dispatcher, argtypes)
        assert [(p.name, p.llvm_args) for p in captured.params] == layout
        assert [p.numba_type for p in captured.params] == list(argtypes)
        args = list(_primal(captured).arguments)
        assert len(args) == layout[-1][1][-1] + 1
        assert (args[0].name, args[1].name) == ("retptr", "excinfo")
        for param in captured.params:  # Numba names exploded args arg.<name>.<field>
            assert all(args[i].name.startswith(f"arg.{param.name}") for i in param.llvm_args)


def test_return_types():
    assert capture(scalar, (f8, f8)).return_llvm_type == "double"
    captured = capture(pair, (f8,))
    assert captured.restype == types.UniTuple(f8, 2)
    assert captured.return_llvm_type == "[2 x double]"
    assert capture(scale_into, (C1, C1)).return_llvm_type == "ptr"
    assert "store ptr null, ptr %retptr" in _body(capture(scale_into, (C1, C1)))


def test_loops_are_canonical():
    body = _body(capture(sumsq, (C1,)))
    assert re.search(r"phi i64 \[ %[\w.]+, %\w+ \], \[ 0, %[\w.]+preheader \]", body)
    assert "NRT_" not in body                       # refprune removed the refcounting
    assert len(re.findall(r"phi i64 .*\[ 0, ", _body(capture(sum2d, (C2,))))) == 2
    strided = _body(capture(sumsq, (A1,)))         # byte strides on an 'A' array
    assert re.search(r"mul (nsw )?i64 %[\w.]+, %arg\.a\.6\.0", strided)
    assert "getelementptr i8" in strided
    assert "@llvm.cos.f64" in _body(capture(shrink, (f8,)))


def test_callee_bodies_are_inlined():
    assert _callees(capture(calls_helper, (f8, f8))) == set()
    powered = capture(powers, (f8,))
    assert _callees(powered) == set() and "phi" not in _body(powered)  # x**n fully unrolled
    assert _callees(capture(minmax, (f8, f8))) == {"hypot"}
    body = _body(capture(minmax, (f8, f8)))
    assert "select" in body and "frem double" in body
    assert _callees(capture(libm, (f8, f8))) == {"tanh", "erf", "numba_gamma", "sqrt", "atan2"}
    allocating = _callees(capture(allocates, (C1, C1)))
    assert {"NRT_MemInfo_alloc_aligned", "NRT_decref"} <= allocating
    assert not any(c.startswith("_ZN") for c in allocating)


def _loc_of(captured, instruction):
    """The ``file:line`` tag of the first instruction containing ``instruction``."""
    line = next(l for l in captured.module_text.splitlines() if instruction in l)
    node = re.search(rf"!{re.escape(LOC_METADATA)} (!\d+)", line).group(1)
    return re.search(rf'^{node} = !{{!"(.*)"}}$', captured.module_text, re.M).group(1)


def test_source_locations():
    assert _loc_of(capture(scalar, (f8, f8)), "fmul double %arg.x, %arg.y") == \
        f"{__file__}:{_line_of(scalar, 'x * y')}"
    sumsq_line = f"{__file__}:{_line_of(sumsq, 's += a[i] * a[i]')}"
    assert _loc_of(capture(sumsq, (C1,)), "load double") == sumsq_line
    assert _loc_of(capture(sumsq, (C1,)), "fadd double") == sumsq_line
    assert _loc_of(capture(libm, (f8, f8)), "call double @tanh") == \
        f"{__file__}:{_line_of(libm, 'math.tanh')}"
    # inlined helper code gets the line of the call
    assert _loc_of(capture(calls_helper, (f8, f8)), "fmul double %arg.y, %arg.y") == \
        f"{__file__}:{_line_of(calls_helper, 'helper(x)')}"
    assert LOC_METADATA in capture(sumsq, (C1,)).raw_text


def test_statements_inlined_from_another_file_keep_their_file():
    namespace = {"njit": njit}
    exec(compile("@njit(inline='always')\ndef sq(x):\n    return x * x\n",
                 "/virtual/helpers.py", "exec"), namespace)
    sq = namespace["sq"]

    @njit
    def uses_sq(x, t):
        return sq(x) * t[0] + t[1]

    captured = capture(uses_sq, (f8, types.UniTuple(f8, 2)))
    assert [p.llvm_args for p in captured.params] == [(2,), (3, 4)]
    assert _loc_of(captured, "fmul double %arg.x, %arg.x") == "/virtual/helpers.py:3"
    assert _loc_of(captured, "fadd double") == f"{__file__}:{_line_of(uses_sq, 'sq(x)')}"


def _normalised(text, name):
    keep = []
    for line in text.splitlines():
        if line.startswith(("  ", "define", "declare")) or re.match(r"^[\w.]+:", line):
            line = re.sub(r",? !(dbg|enzyme\.loc) !\d+", "", line.replace(name, "PRIMAL"))
            keep.append(re.sub(r"!\d+", "!N", re.sub(r"\s*;.*", "", line)))
    return keep


@pytest.mark.parametrize("dispatcher, argtypes", CASES[:9],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_location_tracking_does_not_change_code(dispatcher, argtypes):
    captured = capture(dispatcher, argtypes)
    dispatcher.compile(argtypes)                   # Numba's own pipeline, no debug info
    cres = dispatcher.overloads[argtypes]
    plain, _ = cap._canonical_module(cres.library, cres.fndesc.llvm_func_name)
    assert (_normalised(captured.module_text, captured.func_name)
            == _normalised(str(plain), cres.fndesc.llvm_func_name))


def _unnumbered(captured):
    """The module text without the primal's name and the compile counters in symbols."""
    text = captured.module_text.replace(captured.func_name, "PRIMAL")
    return re.sub(r"B\d+v\d+B", "BvB", text)


@pytest.mark.parametrize("dispatcher, argtypes", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_compiled_signature_is_lowered_again_not_compiled_twice(dispatcher, argtypes):
    """A dispatcher that compiled the types itself: its typed IR is lowered again (the twin
    compiles nothing), into the module a twin's compile gives, source locations included."""
    compiled, fresh = njit(dispatcher.py_func), njit(dispatcher.py_func)
    compiled.compile(argtypes)
    again, twin_made = capture(compiled, argtypes), capture(fresh, argtypes)
    assert not cap._twins[compiled].overloads and cap._twins[fresh].overloads
    assert again.func_name != compiled.overloads[argtypes].fndesc.llvm_func_name
    assert _unnumbered(again) == _unnumbered(twin_made)
    assert again.raw_text.count(LOC_METADATA) == twin_made.raw_text.count(LOC_METADATA) > 0


@pytest.mark.parametrize("dispatcher, argtypes", CASES[:9],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_capture_without_lines_is_the_same_code_and_typed_once(dispatcher, argtypes):
    """located=False: a plain twin lowers the function (no lines); a located capture asked
    for later lowers that twin's typed IR again (the locating twin compiles nothing)."""
    fresh = njit(dispatcher.py_func)
    plain = capture(fresh, argtypes, located=False)
    assert not plain.located and LOC_METADATA not in plain.module_text
    located = capture(fresh, argtypes)
    assert located.located and not cap._twins[fresh].overloads
    assert capture(fresh, argtypes, located=False) is plain
    assert (_normalised(plain.module_text, plain.func_name)
            == _normalised(located.module_text, located.func_name))
    compiled = njit(dispatcher.py_func)
    compiled.compile(argtypes)
    recorded = capture(compiled, argtypes, located=False)
    assert not recorded.located and compiled not in cap._plain_twins
    assert recorded.func_name == compiled.overloads[argtypes].fndesc.llvm_func_name
    assert (_normalised(recorded.module_text, recorded.func_name)
            == _normalised(located.module_text, located.func_name))


def test_target_options_are_respected():
    def div(x, y):
        return x / y + x * y

    assert "fmul fast" in _body(capture(njit(fastmath=True)(div), (f8, f8)))
    assert "ZeroDivisionError" in capture(njit(div), (f8, f8)).module_text
    assert "ZeroDivisionError" not in capture(njit(error_model="numpy")(div),
                                             (f8, f8)).module_text

    def get(a, i):
        return a[i]

    assert "IndexError" in capture(njit(boundscheck=True)(get), (C1, types.int64)).module_text
    assert "IndexError" not in capture(njit(get), (C1, types.int64)).module_text


def test_recursive_callee_stays_a_function():
    @njit
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    fib(3)

    @njit
    def uses_fib(x):
        return fib(int(x)) * x

    captured = capture(uses_fib, (f8,))
    assert len(_callees(captured)) == 1 and "fib" in _callees(captured).pop()
    assert "define internal" in captured.module_text


def test_unresolved_recursive_call_becomes_a_direct_call():
    @njit
    def half_sum(a, lo, hi):            # the literal 0 below gives a second specialisation
        if hi - lo == 1:
            return a[lo]
        mid = (lo + hi) // 2
        return half_sum(a, lo, mid) + half_sum(a, mid, hi)

    @njit
    def total(a):
        return half_sum(a, 0, a.shape[0])

    captured = capture(total, (C1,))
    assert ".numba.unresolved" not in captured.module_text
    assert len([line for line in captured.module_text.splitlines()
                if line.startswith("define internal")]) == 2


def test_callee_without_recorded_ir_is_compiled_again_and_inlined():
    @njit
    def inner(x):
        return x + 1.0

    @njit
    def outer(x):
        return inner(x) * 2.0

    inner.compile((f8,))
    del cap._raw_modules[inner.overloads[(f8,)].library]   # as if compiled before import
    captured = capture(outer, (f8,))
    assert _callees(captured) == set()


def test_rejects_non_dispatchers_and_parallel():
    with pytest.raises(TypeError):
        capture(lambda x: x, (f8,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel = njit(parallel=True)(lambda a: a.sum())
    with pytest.raises(UnsupportedError, match="parallel"):
        capture(parallel, (C1,))
