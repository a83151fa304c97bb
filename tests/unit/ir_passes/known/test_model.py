"""The registry of known calls (`ir_passes.known.model`): lookup by exact name or longest
prefix, the records the Numba front end registers, known problems naming their callee, and
the layer map (which package may import which)."""
from __future__ import annotations

import ast
import pathlib

import pytest

from ir_passes.known.calls import known_problem
from ir_passes.known.model import KnownCall, Role, known_call, register, runtime_call
from tests.support.paths import ROOT

_ROOT = pathlib.Path(ROOT)


def test_exact_name_beats_prefix_and_longest_prefix_wins() -> None:
    short = KnownCall("test_model.lib", prefix=True, inert=True)
    long = KnownCall("test_model.lib_v2", prefix=True, pointer_neutral=True)
    exact = KnownCall("test_model.lib_v2_fast", fresh=True)
    register(short, long, exact)
    assert known_call("test_model.lib_v1") is short
    assert known_call("test_model.lib_v2_slow") is long
    assert known_call("test_model.lib_v2_fast") is exact
    assert known_call("test_model.other") is None
    assert known_call(None) is None


def test_numba_front_end_registers_its_runtime() -> None:
    assert known_call("NRT_MemInfo_data_fast").role is Role.HANDLE_DATA
    assert known_call("NRT_MemInfo_alloc_safe_aligned").role is Role.HANDLE_ALLOC
    assert known_call("NRT_MemInfo_new_varsize").role is Role.HANDLE_NEW
    assert known_call("NRT_MemInfo_new_varsize_dtor").role is Role.HANDLE_VARSIZE
    assert known_call("NRT_MemInfo_varsize_realloc").role is Role.VARSIZE_REALLOC
    assert runtime_call(Role.HANDLE_VARSIZE).name == "NRT_MemInfo_new_varsize_dtor"
    assert runtime_call(Role.HANDLE_ALLOC).name == "NRT_MemInfo_alloc_aligned"
    assert runtime_call(Role.RAW_FREE).name == "NRT_Free"
    dot = known_call("numba_xxdot")
    assert dot.forward is not None and dot.reverse is not None and dot.writes == (5,)


def test_generic_records_cover_llvm_intrinsics() -> None:
    assert known_call("llvm.memcpy.p0.p0.i64").flow.raw
    assert known_call("llvm.memset.p0.i64").writes == (0,)
    assert known_call("llvm.lifetime.start.p0").inert
    assert known_call("llvm.stackrestore.p0").writes == ()


def test_prefix_problem_names_the_callee() -> None:
    problem = known_problem("numba_dict_new_sized")
    assert problem is not None
    assert problem.what == "Python dict operation ('numba_dict_new_sized') on active values"
    assert known_problem("numba_ez_gelsd").what.startswith("least squares (LAPACK numba_ez_gelsd")
    assert known_problem("numba_xxgemm") is None        # differentiable (numba_bridge/blas*)
    assert known_problem("numba_xgesv") is None         # differentiable (numba_bridge/lapack*)
    assert known_problem("NRT_MemInfo_data_fast") is None


def _imports(path: pathlib.Path) -> set[str]:
    """Absolute names of the modules `path` imports at run time (not under TYPE_CHECKING)."""
    package = ".".join(path.relative_to(_ROOT).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and ast.unparse(node.test) == "TYPE_CHECKING" for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
    return out


@pytest.mark.parametrize("layer, forbidden", [
    ("ir_passes/ir", ("ir_passes.analysis", "ir_passes.diff", "ir_passes.known", "enzyme_py")),
    ("ir_passes/known", ("ir_passes.analysis", "ir_passes.diff", "ir_passes.diagnostics",
                         "enzyme_py")),
    ("ir_passes/analysis", ("ir_passes.diff", "enzyme_py")),
    ("ir_passes/diff", ("enzyme_py",)),
])
def test_layers_import_only_below(layer: str, forbidden: tuple[str, ...]) -> None:
    for path in sorted((_ROOT / layer).rglob("*.py")):
        bad = sorted(m for m in _imports(path) if m.startswith(forbidden))
        assert not bad, f"{path.relative_to(_ROOT)} imports {bad}"
