"""Bad input to `enzyme-py inspect`: one line `enzyme-py: error: ...` on stderr, exit 1 (2 for
a bad command line), never a traceback. Each case runs `main(argv)` in this process; one
subprocess checks the exit status and stderr across the interpreter boundary.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from enzyme_py import cli
from enzyme_py.cli import main
from tests.support.paths import ROOT

KERNELS_LL = os.path.join(ROOT, "tests", "unit", "enzyme_py", "cli", "kernels.ll")
SAMPLES = os.path.join(ROOT, "tests", "unit", "enzyme_py", "cli", "samples.py")
SIN_SUM = [f"{SAMPLES}:sin_sum", "--types", "float64[::1], int64", "--args", "dup,const"]
NOT_IR = ("not valid LLVM IR (fix the file, or produce it again with clang -S -emit-llvm)")
FORMS = "expected MODULE:FUNC or path/file.py:FUNC (or an LLVM file.ll --func NAME)"

pytestmark = pytest.mark.xdist_group(name="cli-inspection")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Bad inputs a user may hand the tool, written once."""
    d = tmp_path_factory.mktemp("bad_inputs")
    contents = {
        "garbage.ll": b"\x00\x01\xff\xfe binary",
        "text.bc": b"; ModuleID = 'x'\n",
        "damaged.bc": b"BC\xc0\xde" + bytes(range(40)),
        "typo.ll": b"define double @f(double %x) {\n  %y = fmul double %x, %z\n"
                    b"  ret double %y\n}\n",
        "syntax_err.py": b"def f(x):\n    return x *\n",
        "raises_at_import.py": b"import math\n\nraise RuntimeError('no config found')\n",
        "imports_missing.py": b"import no_such_package_xyz\n",
        "data.txt": b"1 2 3\n",
        "kernels_ok.py": b"LIMIT = 3\n\n\ndef g(x):\n    return undefined_name + x\n\n\n"
                         b"def h(x):\n    return x.foo()\n",
    }
    for name, data in contents.items():
        (d / name).write_bytes(data)
    (d / "folder.ll").mkdir()
    return {name: str(d / name) for name in [*contents, "folder.ll"]} | {"dir": str(d)}


def fails(capsys, argv: list[str], status: int = 1) -> str:
    """Run `main(argv)`; assert it fails with `status` and one line on stderr; that line."""
    if status == 2:
        with pytest.raises(SystemExit) as exit_:
            main(["inspect", *argv])
        code = exit_.value.code
    else:
        code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    assert code == status, err
    last = err.splitlines()[-1]
    if status == 1:
        assert out == "" and err.count("\n") == 1, err
        assert err.startswith("enzyme-py: error: "), err
        return last[len("enzyme-py: error: "):]
    assert last.startswith("enzyme-py inspect: error: "), err     # argparse's usage error
    return last[len("enzyme-py inspect: error: "):]


# ---------------------------------------------------------------- IR files

def test_ir_files(files, capsys):
    ir = ["--func", "f", "--args", "active"]
    assert fails(capsys, [files["garbage.ll"], *ir]) == (
        f"{files['garbage.ll']} is neither LLVM IR text nor bitcode (byte 0xff at offset 2 is "
        "not text): give a .ll file (clang -S -emit-llvm) or a .bc file (clang -c -emit-llvm)")
    assert fails(capsys, [files["text.bc"], *ir]) == (
        f"{files['text.bc']} is not LLVM bitcode (no bitcode header): produce it with clang -c "
        "-emit-llvm, or give LLVM IR text as a .ll file")
    damaged = fails(capsys, [files["damaged.bc"], *ir])
    assert damaged.startswith(f"{files['damaged.bc']}: damaged LLVM bitcode (")
    assert damaged.endswith("); produce it again (clang -c -emit-llvm)")
    assert fails(capsys, [files["typo.ll"], *ir]) == (
        f"{files['typo.ll']}:2:24: use of undefined value '%z': {NOT_IR}")
    assert fails(capsys, [files["folder.ll"], *ir]) == (
        f"{files['folder.ll']} is a folder: give an LLVM IR file (.ll or .bc)")
    missing = os.path.join(files["dir"], "missing.ll")
    assert fails(capsys, [missing, *ir]) == f"{missing}: no such file (check the path)"


def test_ir_function_and_activities(capsys):
    assert fails(capsys, [KERNELS_LL, "--func", "nope", "--args", "active"]) == (
        f"{KERNELS_LL} defines no function @nope; it defines @poly, @dot, @axpy")
    assert fails(capsys, [KERNELS_LL, "--func", "dot", "--args", "dup,const,cnst"]) == (
        "unknown activity 'cnst' (expected one of const, dup, active, dupnoneed)")
    assert fails(capsys, [KERNELS_LL, "--func", "dot", "--args", "dup"]) == (
        "@dot has 3 parameter(s) but 1 activities were given")
    assert fails(capsys, [KERNELS_LL, "--func", "dot", "--args", "dup,const,const", "--abi",
                          "numba"]) == (
        "@dot does not have Numba's calling convention (i32 (ptr %retptr, ptr %excinfo, ...)): "
        "use --abi c or auto")
    assert fails(capsys, [KERNELS_LL, "--func", "poly", "--args", "active,active",
                          "--mode", "forward"]) == (
        "parameter 'x': 'active' is for reverse mode; in forward mode mark it 'dup' and pass "
        "its tangent")


# ---------------------------------------------------------------- Python targets

def test_python_files_and_modules(files, capsys):
    py = ["--types", "float64", "--args", "active"]
    d = files["dir"]
    assert fails(capsys, [f"{d}/missing.py:f", *py]) == (
        f"{d}/missing.py: no such file (check the path; {FORMS})")
    assert fails(capsys, [f"{files['syntax_err.py']}:f", *py]) == (
        f"{files['syntax_err.py']}:2: syntax error: invalid syntax; fix the file and run again")
    assert fails(capsys, [f"{files['raises_at_import.py']}:f", *py]) == (
        f"importing {files['raises_at_import.py']} raised RuntimeError: no config found at "
        f"{files['raises_at_import.py']}:3; fix the module (or what it imports) and run again")
    assert fails(capsys, [f"{files['imports_missing.py']}:f", *py]) == (
        f"importing {files['imports_missing.py']} raised ModuleNotFoundError: No module named "
        f"'no_such_package_xyz' at {files['imports_missing.py']}:1; fix the module (or what it "
        "imports) and run again")
    assert fails(capsys, [f"{files['data.txt']}:f", *py]) == (
        f"{files['data.txt']} is not a Python file (.py): {FORMS}")
    assert fails(capsys, ["no_such_module_xyz.sub:f", *py]) == (
        "no module named 'no_such_module_xyz' (searched the current folder and PYTHONPATH): "
        "give the file instead, path/to/no_such_module_xyz/sub.py:FUNC, or add its folder to "
        "PYTHONPATH")
    assert fails(capsys, [f"{d}:f", *py]) == (
        f"{d} is a folder: give a Python file, path/file.py:FUNC")
    assert fails(capsys, [files["kernels_ok.py"], *py]) == f"{files['kernels_ok.py']!r}: {FORMS}"


def test_missing_function_in_module(files, capsys):
    py = ["--types", "float64", "--args", "active"]
    target = files["kernels_ok.py"]
    assert fails(capsys, [f"{target}:f", *py]) == (
        f"{target} has no function 'f'; it defines g, h: give one of them after the ':'")
    assert fails(capsys, [f"{target}:LIMIT", *py]) == (
        f"{target}:LIMIT: LIMIT is not a function (int); it defines g, h: give one of them "
        "after the ':'")
    assert fails(capsys, ["tests.unit.enzyme_py.cli.samples:nope", *py]) == (
        "tests.unit.enzyme_py.cli.samples has no function 'nope'; it defines branchy, scale, sin_grid, "
        "sin_sum, square, store_to_const, until_small: give one of them after the ':'")


def test_numba_cannot_compile(files, capsys):
    target = files["kernels_ok.py"]
    assert fails(capsys, [f"{target}:g", "--types", "float64", "--args", "active"]) == (
        f"{target}:5: Numba cannot compile g(float64): NameError: name 'undefined_name' is not "
        "defined; fix the function or --types so that numba.njit compiles it")
    assert fails(capsys, [f"{SAMPLES}:sin_sum", "--types", "float64, int64", "--args",
                          "active,const"]) == (
        f"{SAMPLES}:12: Numba cannot compile sin_sum(float64, int64): No implementation of "
        "function Function(<built-in function getitem>) found for signature: getitem(float64, "
        "int64); fix the function or --types so that numba.njit compiles it")


def test_generator_refused_before_numba_lowers_it(files, capsys):
    """Numba's lowering of a generator aborts the process (LLVM ERROR) in capture."""
    target = os.path.join(files["dir"], "gen.py")
    with open(target, "w") as f:
        f.write("def gen(x):\n    yield x\n")
    code = main(["inspect", f"{target}:gen", "--types", "float64", "--args", "active"])
    assert code == 1 and capsys.readouterr().err == (
        "enzyme-py: error: cannot differentiate: gen is a generator (it uses yield)\n"
        f"  at {target}:1\n"
        "  fix: generators are not supported; return the result, or write it into an output "
        "array argument marked 'dup'\n")


def test_types_and_activities(capsys):
    target = [f"{SAMPLES}:sin_sum"]
    assert fails(capsys, [*target, "--types", "float64[::1, int64", "--args", "dup,const"]) == (
        "cannot parse types 'float64[::1, int64': '[' was never closed")
    assert fails(capsys, [*target, "--types", "float65[::1], int64", "--args", "dup,const"]) \
        == "types 'float65[::1], int64': unknown Numba type 'float65'"
    assert fails(capsys, [*target, "--types", "float64[::1]", "--args", "dup,const"]) == (
        "sin_sum has 2 parameter(s) (x, n) but 1 type(s) were given: give one --types entry "
        "per parameter")
    assert fails(capsys, [*target, "--types", "float64[::1], int64", "--args", "dup,cnst"]) == (
        "parameter 'n': unknown activity 'cnst' (expected one of const, dup, active, dupnoneed)")
    assert fails(capsys, [*target, "--types", "float64[::1], int64", "--args", "dup"]) == (
        "sin_sum has 2 parameter(s) (x, n) but 1 activities were given")
    assert fails(capsys, [*target, "--types", "float64[::1], int64"]) == (
        "sin_sum(x, n): give one activity per parameter (args=/--args, e.g. --args dup,const)")
    assert fails(capsys, [*SIN_SUM, "--sizes", "n"]) == (
        "--sizes 'n': expected NAME=INTEGER, e.g. n=1000")


# ---------------------------------------------------------------- command line and outputs

def test_usage_errors_exit_2(capsys):
    for width in ("0", "-2", "two"):
        assert fails(capsys, [*SIN_SUM, "--mode", "forward", "--width", width], 2) == (
            f"argument --width: expected a positive integer (1, 2, ...), not '{width}'")
    assert fails(capsys, [*SIN_SUM, "--stage", "nope"], 2) == (
        "argument --stage/-s: invalid choice: 'nope' (choose from 'raw', 'canonical', "
        "'activity', 'derivative', 'optimized', 'tape', 'primal', 'preprocessed', 'all')")


def test_outputs_checked_before_any_work(files, capsys, monkeypatch):
    monkeypatch.setattr(cli, "inspection", _no_work)
    missing = os.path.join(files["dir"], "out", "missing")
    for flag, name in (("--cfg", "x.svg"), ("--cfg", "x.dot"), ("-o", "x.txt")):
        path = os.path.join(missing, name)
        assert fails(capsys, [*SIN_SUM, flag, path]) == (
            f"{flag} {path}: the folder {missing} does not exist; create it (mkdir -p "
            f"{missing}) or write somewhere else")
    assert fails(capsys, [*SIN_SUM, "-o", files["dir"]]) == (
        f"-o {files['dir']} is a folder: give a file name in it")
    pdf = os.path.join(files["dir"], "g.pdf")
    assert fails(capsys, [*SIN_SUM, "--cfg", pdf]) == (
        f"--cfg {pdf}: expected a .dot, .svg or .png file name")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_write_fails(capsys):
    assert fails(capsys, [f"{SAMPLES}:square", "--types", "float64", "--args", "active",
                          "-o", "/dev/full"]) == "cannot write /dev/full: No space left on device"


def test_closed_pipe_is_quiet(capsys, monkeypatch):
    """`enzyme-py inspect ... | head -1`: the reader left; no message, no traceback."""
    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["inspect", f"{SAMPLES}:square", "--types", "float64", "--args", "active"]) == 1
    assert capsys.readouterr().err == ""


def _no_work(*args, **kwargs):
    raise AssertionError("the output path must be refused before the inspection starts")


def test_internal_error_is_one_line_unless_traceback(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("slot")
    monkeypatch.setattr(cli, "inspection", broken)
    line = fails(capsys, SIN_SUM)
    assert line.startswith("internal error: KeyError: 'slot' (at ")
    assert line.endswith("); this is a bug in enzyme_py: please report it with the command "
                         "line (--traceback shows the details)")
    with pytest.raises(KeyError):
        main(["inspect", *SIN_SUM, "--traceback"])


def test_subprocess_exit_status_and_stderr(files):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "enzyme_py", "inspect",
                             f"{files['syntax_err.py']}:f", "--args", "active"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"enzyme-py: error: {files['syntax_err.py']}:2: syntax error: "
                             "invalid syntax; fix the file and run again\n")
