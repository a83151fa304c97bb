"""The `enzyme-py` command end to end: `python -m enzyme_py inspect ...` in subprocesses.

Each stage is checked through `enzyme_py.cli.main` in this process (cheap: the capture is
cached); the subprocesses, run concurrently, cover the interpreter boundary: every stage at
once, an IR file, --cfg to .svg and .dot, -o, and an error's exit status and message.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from enzyme_py.cli import main

from tests.support.filecheck import check
from tests.support.paths import ROOT

# without vector math the sine is taped (with it, the reverse recomputes it: nothing taped)
SIN_SUM = ["tests/unit/enzyme_py/cli/samples.py:sin_sum", "--types", "float64[::1], int64", "--args",
           "dup,const", "--no-vector-math"]

pytestmark = pytest.mark.xdist_group(name="cli-subprocess")


def run_all(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Run `python -m enzyme_py inspect <args>` per argument list, concurrently, from the root."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-m", "enzyme_py", "inspect", *args], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args in commands]
    out = []
    for args, p in zip(commands, procs):
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(args, p.returncode, stdout, stderr))
    return out


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"{result.args}: exit {result.returncode}\n{result.stderr}"
    return result.stdout


STAGE_CHECKS = {
    "raw": """
        ; CHECK: ; enzyme-py inspect sin_sum (array(float64, 1d, C), int64) -- raw
        ; CHECK: define i32 @{{.*}}sin_sum
        ; CHECK: alloca
    """,
    "canonical": """
        ; CHECK: -- canonical
        ; CHECK: define i32 @{{.*}}sin_sum
        ; CHECK-NOT: alloca
        ; CHECK: call double @llvm.sin.f64
    """,
    "activity": """
        ; CHECK: -- activity
        ; CHECK: getelementptr double, ptr %arg.x.4, {{.*}} ; shadowed pointer
        ; CHECK: call double @llvm.sin.f64({{.*}}) ; active
    """,
    "derivative": """
        ; CHECK: -- derivative
        ; CHECK: define i32 @diffe_sin_sum(
        ; CHECK: call double @llvm.cos.f64
    """,
    "optimized": """
        ; CHECK: -- optimized
        ; CHECK: define {{.*}}i32 @diffe_sin_sum(
    """,
    "tape": """
        ; CHECK: -- tape
        ; CHECK: trips = n
        ; CHECK: ; total tape per call: 8 * n = 80000 bytes
    """,
}


def test_every_stage_in_process(capsys):
    """`main()` per stage, in this process (the subprocess test below prints them all)."""
    for stage, patterns in STAGE_CHECKS.items():
        assert main(["inspect", *SIN_SUM, "--stage", stage, "--sizes", "n=10000"]) == 0
        check(capsys.readouterr().out, patterns)
    assert main(["inspect", "tests/unit/enzyme_py/cli/samples.py:square", "--args", "active"]) == 1
    assert "give the argument types" in capsys.readouterr().err
    # with --stage all, the stages before a failing one are printed, then the error
    assert main(["inspect", "tests/unit/enzyme_py/cli/samples.py:store_to_const", "--types",
                 "float64[::1], float64[::1]", "--args", "const,dup", "--stage", "all"]) == 1
    printed = capsys.readouterr()
    assert "-- activity\n" in printed.out and "-- derivative\n" not in printed.out
    assert printed.err.startswith("enzyme-py: error: cannot differentiate")
    with pytest.raises(SystemExit) as exit_:
        main(["inspect", *SIN_SUM, "--stage", "nope"])
    assert exit_.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_subprocesses(tmp_path):
    dot, svg, out = tmp_path / "g.dot", tmp_path / "g.svg", tmp_path / "tape.txt"
    results = run_all(
        [*SIN_SUM, "--stage", "all", "--sizes", "n=10000", "--cfg", str(svg)],
        ["tests/unit/enzyme_py/cli/kernels.ll", "--func", "axpy", "--args", "dup,dup,active,const",
         "--stage", "tape", "--sizes", "n=10", "-o", str(out)],
        ["tests/unit/enzyme_py/cli/kernels.ll", "--func", "dot", "--args", "dup,const,const", "--mode",
         "forward", "--stage", "derivative", "--cfg", str(dot)],
        ["tests/unit/enzyme_py/cli/samples.py:store_to_const", "--types", "float64[::1], float64[::1]",
         "--args", "const,dup"],
    )
    everything, tape, fwd, unsupported = results

    if shutil.which("dot"):
        text = ok(everything)
        for patterns in STAGE_CHECKS.values():
            check(text, patterns)
        assert f"wrote {svg}" in everything.stderr
        assert svg.read_text().lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE"))
        assert "diffe_sin_sum" in svg.read_text()
    else:
        assert everything.returncode == 1 and "install Graphviz" in everything.stderr

    assert ok(tape) == ""
    check(out.read_text(), """
        ; CHECK: ; enzyme-py inspect @axpy in kernels.ll -- tape
        ; CHECK: (C ABI through shim @axpy.enzyme_abi)
        ; CHECK: ; total tape per call: 8 * n = 80 bytes
    """)

    check(ok(fwd), """
        ; CHECK: define i32 @fwddiffe_dot(
    """)
    assert f"wrote {dot}" in fwd.stderr
    check(dot.read_text(), """
        ; CHECK: digraph "enzyme_py" {
        ; CHECK: subgraph cluster_primal {
        ; CHECK: label="primal @dot.enzyme_abi"
        ; CHECK: subgraph cluster_derivative {
        ; CHECK: label="derivative @fwddiffe_dot"
    """)

    assert unsupported.returncode == 1 and unsupported.stdout == ""
    check(unsupported.stderr, """
        ; CHECK: enzyme-py: error: cannot differentiate: active value stored into memory without a shadow (array 'out' is const)
        ; CHECK-NEXT: instruction: store double
        ; CHECK: at {{.*}}tests/unit/enzyme_py/cli/samples.py:{{[0-9]+}}
        ; CHECK-NEXT: code: out[0] = 2.0 * x[0]
        ; CHECK-NEXT: fix: mark that array 'dup'
    """)
    for r in results:
        assert "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(shutil.which("enzyme-py") is None, reason="console script not installed")
def test_console_script():
    result = subprocess.run(["enzyme-py", "inspect", "--help"], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and "--cfg FILE" in result.stdout
