"""Diagnostics of the C front end: refused constructs and bad calls name the C file:line."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from enzyme_py import ActivityError, UnsupportedError
from enzyme_py.c import ClangError
from enzyme_py.c.driver import main as clang_main

ERRORS_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "errors.c")


def _derive(fn, acts, mode="reverse"):
    from enzyme_py.c import derive
    return derive(ERRORS_C, fn, acts, mode=mode)


def test_recursion_is_differentiated():
    """errors.c's fact once was refused; recursion is differentiated now (kernels.c has the
    finite-difference tests): d/dx x**n at x = 1.3, n = 4."""
    assert _derive("fact", "active,const")(1.3, 4) == pytest.approx(4 * 1.3 ** 3, rel=1e-13)


def test_reverse_through_a_recursive_function_writing_memory():
    x, out, n = np.linspace(0.1, 1.0, 4), np.zeros(4), 4
    d_out, dx = np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(4)
    _derive("fill_squares", "dup,dup,const")(out, d_out, x, dx, n)
    np.testing.assert_allclose(dx, 2.0 * x * np.array([1.0, 2.0, 3.0, 4.0]), rtol=1e-15)
    np.testing.assert_array_equal(d_out, np.zeros(4))
    np.testing.assert_allclose(out, x * x, rtol=1e-15)


def test_reverse_refuses_a_recursive_function_reading_memory_written_after_it():
    with pytest.raises(UnsupportedError, match=r"call to @sum_rec.recursive, which is not "
                       r"inlined, reads memory \(%arg0\) written after the call(.|\n)*at .*"
                       r"tests/unit/enzyme_py/c/errors\.c:41\n  code: .*\n  fix: not supported "
                       r"yet: pass the callee memory the caller does not change afterwards"):
        _derive("sum_then_clear", "dup,const")


def test_recursion_through_a_struct_result_is_refused_at_the_recursive_call():
    with pytest.raises(UnsupportedError, match=r"recursion \(@spread -> @spread\) through a "
                       r"function taking or returning a struct or vector \(or variadic\) is not "
                       r"supported yet(.|\n)*at .*tests/unit/enzyme_py/c/errors\.c:34\n  code: "
                       r".*\n  fix: pass structs through pointers, or rewrite the recursion as a "
                       r"loop"):
        _derive("width", "active,const")


def test_call_without_derivative_names_the_line():
    with pytest.raises(UnsupportedError, match=r"no derivative rule for the external function 'mystery'"
                       r"(.|\n)*at .*tests/unit/enzyme_py/c/errors\.c:9"):
        _derive("opaque", "active")


def test_call_through_a_function_pointer():
    with pytest.raises(UnsupportedError, match=r"indirect call through the function pointer %arg0 "
                       r"with active arguments(.|\n)*errors\.c:20\n(  code: .*\n)?  fix: "
                       r"not supported yet: call the function by its name"):
        _derive("apply", "const,active")


def test_rule_registered_from_python_applies_to_c(monkeypatch):
    """An external function without a body: refused (the fix names register_rule), then
    differentiated once a rule is registered: d/dx j0(x) x = -j1(x) x + j0(x). The rule
    goes into a copy of the registry, so other tests never see it."""
    import scipy.special as sp
    from enzyme_py import register_rule
    from ir_passes.diff.rules import registry
    monkeypatch.setattr(registry, "_RULES", dict(registry._RULES))
    with pytest.raises(UnsupportedError, match=r"external function 'j0'(.|\n)*errors\.c:22\n"
                       r"(  code: .*\n)?  fix: define the function in the same source file, "
                       r".*, or register its partial derivatives: "
                       r"enzyme_py\.register_rule\('j0'"):
        _derive("bessel", "active")
    register_rule("j0", lambda m, args, res: [m.neg(m.call("j1", args[0]))])
    x = 0.8
    assert _derive("bessel", "active")(x) == pytest.approx(-sp.j1(x) * x + sp.j0(x), rel=1e-13)


def test_memory_without_shadow_suggests_malloc():
    with pytest.raises(UnsupportedError, match=r"memory returned by 'calloc'(.|\n)*at .*tests/unit/enzyme_py/c/"
                       r"errors\.c:14\n  fix: allocate the buffer with malloc"):
        _derive("zeroed", "dup,const")


@pytest.mark.parametrize("fn, acts, mode, message", [
    ("opaque", "dup", "reverse", "parameter 'arg0' is a float passed by value (double): in "
     "reverse mode mark it 'active'"),
    ("opaque", "active", "forward", "parameter 'arg0': 'active' is for reverse mode; in forward "
     "mode mark it 'dup'"),
    ("fact", "active", "reverse", "@fact has 2 parameter(s) but 1 activities were given"),
    ("fact", "active,slow", "reverse", "unknown activity 'slow'"),
    ("nothere", "active", "reverse", "the C module defines no function 'nothere' (it defines "
     "apply, bessel, fact, fill_rec, fill_squares, opaque, spread, sum_rec, sum_then_clear, "
     "width, zeroed)"),
])
def test_bad_activities(fn, acts, mode, message):
    with pytest.raises(ActivityError, match=re.escape(message)):
        _derive(fn, acts, mode)


def test_missing_clang(monkeypatch):
    monkeypatch.delenv("ENZYME_PY_CLANG", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ClangError, match=r"clang-22 is not on PATH.*apt-get install clang-22"):
        _derive("opaque", "active")
    monkeypatch.setenv("ENZYME_PY_CLANG", "/nonexistent/clang-22")
    with pytest.raises(ClangError, match=r"ENZYME_PY_CLANG=/nonexistent/clang-22 is not an "
                       "executable file"):
        _derive("opaque", "active")


PROGRAM = """\
extern int enzyme_dup, enzyme_const, enzyme_out;
typedef struct {{ double a, b; }} two;
extern double __enzyme_autodiff(void *, ...);
extern two __enzyme_autodiff2(void *, ...) __asm__("__enzyme_autodiff");
extern double __enzyme_fwddiff(void *, ...);
extern double mystery(double);
double f(double x, double y) {{ return x * y; }}
double g(double x) {{ return mystery(x); }}
double sum(const double *x, int n) {{ return n > 0 ? x[0] + x[n - 1] : 0.0; }}
int main(void) {{
  double x[2] = {{1, 2}}, dx[2] = {{0}};
  {call};
  return 0;
}}
"""


@pytest.mark.parametrize("call, message", [
    ("__enzyme_autodiff((void *)f, 1.0, 2)", "argument for parameter 1 of @f has type i32, "
     "expected double (cast it in C)"),
    ("__enzyme_autodiff((void *)f, 1.0)", "too few arguments for @f: parameter 1 is missing"),
    ("__enzyme_autodiff((void *)f, 1.0, 2.0, 3.0)", "1 argument(s) too many for @f"),
    ("__enzyme_autodiff((void *)f, 1.0, 2.0)", "2 results: declare the call as returning a "
     "struct of 2 doubles"),
    ("__enzyme_autodiff2((void *)f, enzyme_const, 1.0, 2.0)", "the call returns { double, "
     "double }, but the results are {double}"),
    ("x[0] = __enzyme_autodiff((void *)sum, x, dx, 2)", "there is no result to use"),
    ("__enzyme_fwddiff((void *)f, enzyme_out, 1.0, 2.0, 0.0)", "'active' is for reverse mode"),
    ("__enzyme_autodiff((void *)mystery, 1.0)", "the first argument must be a function defined "
     "in the same source file"),
])
def test_driver_call_errors_name_the_line(tmp_path, capsys, call, message):
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM.format(call=call))
    assert clang_main([str(src), "-c", "-o", str(tmp_path / "prog.o")]) == 1
    err = capsys.readouterr().err
    assert f"prog.c:12: __enzyme_" in err, err
    assert message in err, err


def test_driver_unsupported_call_names_the_callee_line(tmp_path, capsys):
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM.format(call="__enzyme_autodiff((void *)g, 1.0)"))
    assert clang_main([str(src), "-c", "-o", str(tmp_path / "prog.o")]) == 1
    err = capsys.readouterr().err
    assert "no derivative rule for the external function 'mystery'" in err, err
    assert "prog.c:8" in err and "fix: define the function in the same source file" in err, err
