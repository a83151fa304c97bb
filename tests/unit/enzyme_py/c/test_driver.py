"""`enzyme-py clang`: the C examples built and run (each checks its derivatives against finite
differences), objects, several sources, shared libraries, optimisation levels."""
from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

from enzyme_py.c.driver import main as clang_main
from enzyme_py.cli import main as cli_main
from tests.support.paths import ROOT

EXAMPLES = os.path.join(ROOT, "examples", "c")


def _run(path) -> subprocess.CompletedProcess:
    return subprocess.run([str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("example, opt", [("scalar", "-O0"), ("arrays", "-O2"),
                                          ("heap", "-O3"), ("recursion", "-O1")])
def test_examples_build_and_pass(tmp_path, example, opt):
    exe = tmp_path / example
    assert clang_main([opt, os.path.join(EXAMPLES, f"{example}.c"), "-o", str(exe)]) == 0
    proc = _run(exe)
    assert proc.returncode == 0 and f"{example}: ok" in proc.stdout, proc.stdout


def test_objects_then_link(tmp_path):
    """-c per source (one of them with no __enzyme call), then linking the objects."""
    helper = tmp_path / "helper.c"
    helper.write_text("double scale_of(void) { return 2.0; }\n")
    main_c = tmp_path / "main.c"
    main_c.write_text(
        "#include <stdio.h>\n#include <math.h>\n"
        "extern double __enzyme_autodiff(void *, ...);\ndouble scale_of(void);\n"
        "static double f(double x) { return sin(x) * x; }\n"
        "int main(void) { double d = __enzyme_autodiff((void *)f, 0.5) * scale_of();\n"
        "  double want = 2.0 * (cos(0.5) * 0.5 + sin(0.5));\n"
        "  printf(\"%.17g %.17g\\n\", d, want); return fabs(d - want) > 1e-14; }\n")
    for src in (helper, main_c):
        assert clang_main(["-c", "-O2", str(src), "-o", str(src.with_suffix(".o"))]) == 0
    exe = tmp_path / "prog"
    assert clang_main([str(main_c.with_suffix(".o")), str(helper.with_suffix(".o")), "-o",
                       str(exe)]) == 0
    assert _run(exe).returncode == 0
    exe2 = tmp_path / "prog2"                     # both sources in one command
    assert cli_main(["clang", "-O1", str(main_c), str(helper), "-o", str(exe2)]) == 0
    assert _run(exe2).returncode == 0


def test_shared_library_from_python(tmp_path):
    """examples/c/gradlib.c as a shared library: its exported gradient, called with ctypes,
    matches central finite differences of its exported value."""
    so = tmp_path / "libgrad.so"
    assert clang_main(["-O2", "-shared", "-fPIC", os.path.join(EXAMPLES, "gradlib.c"), "-o",
                       str(so)]) == 0
    lib = ctypes.CDLL(str(so))
    lib.rosenbrock_value.restype = ctypes.c_double
    lib.rosenbrock_value.argtypes = lib.rosenbrock_grad.argtypes = None
    x = np.array([-1.2, 1.0, 0.5, 0.8])
    grad = np.zeros(4)
    lib.rosenbrock_grad(x.ctypes, grad.ctypes, ctypes.c_int(4))
    fd = np.zeros(4)
    for k in range(4):
        xp, xm = x.copy(), x.copy()
        xp[k] += 1e-6
        xm[k] -= 1e-6
        fd[k] = (lib.rosenbrock_value(xp.ctypes, ctypes.c_int(4))
                 - lib.rosenbrock_value(xm.ctypes, ctypes.c_int(4))) / 2e-6
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_pass_through(capfd):
    assert clang_main(["--version"]) == 0
    assert "clang version 22" in capfd.readouterr().out


def test_clang_errors_are_reported(tmp_path, capsys):
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undeclared; }\n")
    assert clang_main([str(bad), "-o", str(tmp_path / "bad")]) == 1
    assert "use of undeclared identifier 'undeclared'" in capsys.readouterr().err


def test_cplusplus(tmp_path):
    """A C++ source (template helper, std::vector, -fno-exceptions) linked with libstdc++."""
    src = tmp_path / "prog.cpp"
    src.write_text(
        "#include <vector>\n#include <cmath>\n"
        "extern \"C\" double __enzyme_autodiff(void *, ...);\n"
        "template <typename T> static T cube(T x) { return x * x * std::sin(x); }\n"
        "static double f(double x) { return cube(x); }\n"
        "int main() { std::vector<double> v(1); v[0] = __enzyme_autodiff((void *)f, 0.7);\n"
        "  double want = 2 * 0.7 * std::sin(0.7) + 0.49 * std::cos(0.7);\n"
        "  return std::fabs(v[0] - want) > 1e-14; }\n")
    exe = tmp_path / "prog"
    assert clang_main(["-O2", "-fno-exceptions", str(src), "-o", str(exe)]) == 0
    assert _run(exe).returncode == 0
