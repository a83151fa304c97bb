"""Linking hand-written Numba-ABI IR back as njit-callable functions (numba_bridge.link)."""
import hashlib
import sys

import numpy as np
import pytest
from numba import njit, types
from numba.core import serialize

from enzyme_py.numba_bridge.link import (Built, compile_library, lazy_intrinsic, llvm_abi,
                                         njit_wrapper, raise_failed, unique_symbol)
from ir_passes.errors import ActivityError, InvalidIRError, UnsupportedError

f8 = types.float64


def _double_ir(symbol, ty="double"):
    return f"""
define i32 @{symbol}(ptr noalias %retptr, ptr noalias %excinfo, {ty} %x) {{
  %d = fmul {ty} %x, 2.0
  store {ty} %d, ptr %retptr, align 8
  ret i32 0
}}"""


def _scale_ir(symbol):
    """out[i] = 2 * a[i] for C-contiguous 1-D arrays; returns None (a null pointer)."""
    array = lambda n: (f"ptr %{n}.meminfo, ptr %{n}.parent, i64 %{n}.nitems, i64 %{n}.itemsize, "
                       f"ptr %{n}.data, i64 %{n}.shape0, i64 %{n}.stride0")
    return f"""
define i32 @{symbol}(ptr noalias %retptr, ptr noalias %excinfo, {array("a")}, {array("out")}) {{
entry:
  %empty = icmp slt i64 %a.shape0, 1
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %pa = getelementptr double, ptr %a.data, i64 %i
  %ai = load double, ptr %pa, align 8
  %two_ai = fmul double %ai, 2.0
  %po = getelementptr double, ptr %out.data, i64 %i
  store double %two_ai, ptr %po, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %a.shape0
  br i1 %done, label %exit, label %loop
exit:
  store ptr null, ptr %retptr, align 8
  ret i32 0
}}"""


def _raising_ir(symbol, exc):
    """Returns status 1 with ``excinfo`` pointing at a Numba static-exception record for ``exc``
    when x < 0 (the layout Numba's call convention emits: {pickle, len, sha1, null, 0})."""
    data = serialize.dumps((type(exc), exc.args, None))
    esc = lambda b: "".join(f"\\{c:02X}" for c in b)
    return f"""
@pickle = internal constant [{len(data)} x i8] c"{esc(data)}"
@sha1 = internal constant [20 x i8] c"{esc(hashlib.sha1(data).digest())}"
@excrecord = internal constant {{ ptr, i32, ptr, ptr, i32 }}
    {{ ptr @pickle, i32 {len(data)}, ptr @sha1, ptr null, i32 0 }}
define i32 @{symbol}(ptr noalias %retptr, ptr noalias %excinfo, double %x) {{
entry:
  %neg = fcmp olt double %x, 0.0
  br i1 %neg, label %raise, label %ok
raise:
  store ptr @excrecord, ptr %excinfo, align 8
  ret i32 1
ok:
  %d = fmul double %x, 2.0
  store double %d, ptr %retptr, align 8
  ret i32 0
}}"""


def _scalar_intrinsic(ir):
    """An intrinsic ``call(x)`` for a float ``x`` returning ``x``'s type, and its build log."""
    calls = []

    def build(argtypes):
        calls.append(argtypes)
        symbol = unique_symbol("test.fn")
        (arg_texts,), _ = llvm_abi(argtypes, argtypes[0])
        return Built(ir(symbol, *arg_texts), symbol, argtypes[0])

    return lazy_intrinsic("call_test", build), calls


def test_scalar_from_python_and_njit():
    call, calls = _scalar_intrinsic(_double_ir)
    d = njit_wrapper("def d(x):\n    return call(x)\n", "d", {"call": call})
    assert d(3.0) == 6.0 and d(-1.5) == -3.0

    @njit
    def outer(n):
        s = 0.0
        for i in range(n):
            s += d(float(i))
        return s

    assert outer(4) == 12.0
    assert calls == [(f8,)]        # built once, at typing time, for one signature
    assert d(np.float32(1.5)) == 3.0 and calls == [(f8,), (types.float32,)]


def test_literal_arguments_are_unliteral():
    call, calls = _scalar_intrinsic(_double_ir)

    @njit
    def uses_constant():
        return call(2.5)

    assert uses_constant() == 5.0 and calls == [(f8,)]


def test_array_function_writes_into_array():
    def build(argtypes):
        assert all(isinstance(t, types.Array) for t in argtypes)
        symbol = unique_symbol("test.scale")
        return Built(_scale_ir(symbol), symbol, types.none)

    call = lazy_intrinsic("call_scale", build)
    scale = njit_wrapper("def scale(a, out):\n    call(a, out)\n", "scale", {"call": call})
    a, out = np.arange(5.0), np.zeros(5)
    scale(a, out)
    np.testing.assert_array_equal(out, 2 * a)

    @njit
    def outer(a):
        out = np.empty_like(a)
        scale(a, out)
        return out.sum()

    assert outer(a) == 2 * a.sum()


def test_status_and_excinfo_propagate_as_exception():
    call, _ = _scalar_intrinsic(lambda s, ty: _raising_ir(s, ValueError("negative input")))
    d = njit_wrapper("def d(x):\n    return call(x)\n", "d", {"call": call})
    assert d(2.0) == 4.0
    with pytest.raises(ValueError, match="negative input"):
        d(-1.0)

    @njit
    def outer(x):
        return d(x) + 1.0

    assert outer(1.0) == 3.0
    with pytest.raises(ValueError, match="negative input"):
        outer(-1.0)


def test_deferred_status_is_raised_after_the_caller_releases_its_arrays():
    """``deferred=True``: the call returns (failed, code, excinfo, value) and ``raise_failed``
    leaves with the exception, releasing what it is given; the array argument, dead after
    the call, is released by Numba: its reference count is unchanged after raising calls."""
    def build(argtypes):
        symbol = unique_symbol("test.fn")
        (_, array_texts), _ = llvm_abi(argtypes, argtypes[0])
        extra = ", ".join(f"{t} %a{i}" for i, t in enumerate(array_texts))
        ir = _raising_ir(symbol, ValueError("negative input"))
        return Built(ir.replace("double %x)", f"double %x, {extra})"), symbol, argtypes[0])

    call = lazy_intrinsic("call_deferred", build, deferred=True)
    source = ("def d(x, a):\n    b = a + 1.0\n    r = call(x, a)\n"
              "    raise_failed(r, b)\n    return r[3] + b[0]\n")
    d = njit_wrapper(source, "d", {"call": call, "raise_failed": raise_failed})
    a = np.zeros(2)
    assert d(2.0, a) == 5.0
    before = sys.getrefcount(a)
    for _ in range(50):
        with pytest.raises(ValueError, match="negative input"):
            d(-1.0, a)
    assert sys.getrefcount(a) == before


@pytest.mark.parametrize("error", [UnsupportedError("fneg of a token", hint="none"),
                                   ActivityError("parameter 'x' cannot be 'dup'")])
def test_build_errors_surface_as_themselves(error):
    calls = []

    def build(argtypes):
        calls.append(argtypes)
        raise error

    call = lazy_intrinsic("call_failing", build)
    d = njit_wrapper("def d(x):\n    return call(x)\n", "d", {"call": call})
    with pytest.raises(type(error)) as info:
        d(1.0)
    assert info.value is error

    @njit
    def outer(x):
        return d(x)

    with pytest.raises(type(error)) as info:
        outer(1.0)
    assert info.value is error
    assert calls == [(f8,)]         # the failure is cached, not rebuilt


def test_njit_wrapper_options_and_namespace_isolation():
    namespace = {"k": 3.0}
    g = njit_wrapper("def g(x):\n    return k * x\n", "g", namespace, fastmath=True)
    assert g(2.0) == 6.0
    assert "g" not in namespace and g.targetoptions["fastmath"]


def test_compile_library_links_and_checks():
    symbol = unique_symbol("test.lib")
    library = compile_library(_double_ir(symbol), "test_lib")
    assert library.get_pointer_to_function(symbol)
    with pytest.raises(InvalidIRError, match="already defined"):
        compile_library(_double_ir(symbol), "test_lib_again")
    weak = _double_ir(unique_symbol("test.weak")).replace("define i32", "define linkonce_odr i32")
    with pytest.raises(InvalidIRError, match="linkage"):
        compile_library(weak, "test_weak")
    with pytest.raises(InvalidIRError, match="undefined value"):
        compile_library("define i32 @bad() {\n  ret i32 %nope\n}", "test_bad")


def test_compile_library_calls_into_linked_primal():
    @njit
    def primal(x):
        return x * x + 1.0

    primal(1.0)
    cres = primal.overloads[(f8,)]
    symbol = unique_symbol("test.caller")
    text = f"""
declare i32 @"{cres.fndesc.llvm_func_name}"(ptr, ptr, double)
define i32 @{symbol}(ptr noalias %retptr, ptr noalias %excinfo, double %x) {{
  %st = call i32 @"{cres.fndesc.llvm_func_name}"(ptr %retptr, ptr %excinfo, double %x)
  ret i32 %st
}}"""
    call = lazy_intrinsic("call_primal",
                          lambda argtypes: Built(text, symbol, f8, (cres.library,)))
    d = njit_wrapper("def d(x):\n    return call(x)\n", "d", {"call": call})
    assert d(3.0) == 10.0


def test_llvm_abi():
    assert llvm_abi((f8, types.int64), f8) == ([["double"], ["i64"]], "double")
    assert llvm_abi((), types.UniTuple(f8, 2))[1] == "[2 x double]"
    assert llvm_abi((), types.Tuple((f8, types.float32)))[1] == "{ double, float }"
    assert llvm_abi((), types.none)[1] == "ptr"
    args, ret = llvm_abi((types.float64[:, ::1],), types.float64[::1])
    assert args == [["ptr", "ptr", "i64", "i64", "ptr", "i64", "i64", "i64", "i64"]]
    assert ret == "{ ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }"
    assert llvm_abi((types.UniTuple(f8, 2),), types.none)[0] == [["double", "double"]]
