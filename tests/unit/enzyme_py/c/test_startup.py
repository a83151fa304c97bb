"""C++ static constructors (dynamic initialisers) and derivatives (issue 24, item 6).

`enzyme-py clang`: a constructor folded away (an empty `@llvm.global_ctors`) and one that
stays both build, and the derivative reads what the constructor set (the program checks
`__enzyme_autodiff` against central differences of the function and `__enzyme_fwddiff`
against it: <J t, w> = <t, J^T w> for a scalar). `enzyme_py.c.derive` runs no constructors:
a function reading a global one sets is refused by name; other functions of the file work.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from enzyme_py.c import derive
from enzyme_py.c.driver import main as clang_main
from ir_passes.errors import UnsupportedError

PROGRAM = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
extern "C" double __enzyme_autodiff(void *, ...);
extern "C" double __enzyme_fwddiff(void *, ...);
static double folded = std::sqrt(2.0);               // folded into a constant at -O1
static double kept = std::strtod("1.5", nullptr);    // a constructor that stays
static const double weights[3] = {0.5, 1.0, 2.0};
static double f(double x) { return std::sin(x) * x * kept + folded * x * x; }
extern "C" double weighted(const double *x) {
  double s = 0; for (int i = 0; i < 3; i++) s += weights[i] * x[i] * x[i] * x[i]; return s; }
int main() {
  double x = 0.7, h = 1e-6;
  double d = __enzyme_autodiff((void *)f, x);
  double t = __enzyme_fwddiff((void *)f, x, 1.0);
  double fd = (f(x + h) - f(x - h)) / (2 * h);
  std::printf("%.17g %.17g %.17g\n", d, t, fd);
  return !(std::fabs(d - fd) < 1e-7 * std::fabs(fd) && std::fabs(d - t) < 1e-13 * std::fabs(d)
           && kept == 1.5 && std::fabs(fd) > 1.0);
}
"""


@pytest.fixture
def program(tmp_path):
    src = tmp_path / "startup.cpp"
    src.write_text(PROGRAM)
    return src


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_constructors_run_before_the_derivative(tmp_path, program, opt):
    exe = tmp_path / "startup"
    assert clang_main([opt, str(program), "-o", str(exe)]) == 0
    proc = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_derive_refuses_a_global_a_constructor_sets(program):
    with pytest.raises(UnsupportedError, match=r"@_ZL1fd reads @_ZL4kept.*static constructor "
                                               r"@_GLOBAL__sub_I_startup\.cpp"):
        derive(str(program), "_ZL1fd", "active")


def test_derive_of_a_function_no_constructor_touches(program):
    """`weighted` reads only a constant table: reverse and forward against central
    differences, and forward against reverse."""
    x, h = np.array([0.3, -0.4, 0.5]), 1e-6
    w = np.array([0.5, 1.0, 2.0])
    grad = np.zeros(3)
    derive(str(program), "weighted", "dup")(x, grad)
    value = lambda x: float(np.sum(w * x ** 3))
    fd = np.array([(value(x + h * e) - value(x - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(grad, fd, rtol=1e-7)
    t = np.array([0.2, 1.0, -0.7])
    tangent = derive(str(program), "weighted", "dup", mode="forward")(x, t)
    assert tangent == pytest.approx(grad @ t, rel=1e-13)


def test_empty_constructor_list(tmp_path):
    """A dynamic initialiser clang folds away at -O1 leaves `@llvm.global_ctors` empty."""
    src = tmp_path / "folded.cpp"
    src.write_text(PROGRAM.replace('std::strtod("1.5", nullptr)', "1.5"))
    assert "[0 x { i32, ptr, ptr }] zeroinitializer" in subprocess.run(
        ["clang-22", "-O1", "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True,
        text=True, check=True).stdout
    exe = tmp_path / "folded"
    assert clang_main(["-O1", str(src), "-o", str(exe)]) == 0
    proc = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
    grad = derive(str(src), "_ZL1fd", "active")(0.7)
    h = 1e-6
    f = lambda x: np.sin(x) * x * 1.5 + np.sqrt(2.0) * x * x
    assert grad == pytest.approx((f(0.7 + h) - f(0.7 - h)) / (2 * h), rel=1e-7)
