"""The on-disk cache (`derive_diff(..., cache=True)`), across processes: a first process
compiles and stores, a second loads (same derivatives, checked against finite differences and
forward against reverse); other activities, an edited callee in another file, or an edited
primal miss; a corrupted entry is reported, compiled again and replaced."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from enzyme_py import derive_diff

ROOT = Path(__file__).resolve().parents[1]

KERNEL = """
import math
from helper import scale


def loss(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += scale(math.sin(x[i]) * w[i]) ** 2
    return s
"""

HELPER = """
import numba


@numba.njit
def scale(v):
    return {factor} * v
"""

CHILD = """
import json, sys, warnings
import numpy as np
import enzyme_py
from tests.support.gradcheck import fd_gradient
from kernel import loss

acts = tuple(sys.argv[1].split(","))
x, w = np.linspace(0.1, 1.0, 7), np.linspace(1.0, 2.0, 7)
t = np.cos(np.arange(7.0))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rev = enzyme_py.derive_diff(loss, "d_loss", acts, cache=True)
    fwd = enzyme_py.derive_diff(loss, "t_loss", acts, mode="forward", cache=True)
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    rev(*((x, dx, w, dw) if acts[1] == "dup" else (x, dx, w)))
    _, tangent = fwd(*((x, t, w, np.zeros_like(w)) if acts[1] == "dup" else (x, t, w)))
fd = fd_gradient(loss, (x, w))
print(json.dumps({
    "dx": dx.tolist(), "dw": dw.tolist(), "fd_x": fd[0].tolist(), "fd_w": fd[1].tolist(),
    "tangent": tangent, "t": t.tolist(),
    "hits": sum(rev._cache_hits.values()) + sum(fwd._cache_hits.values()),
    "misses": sum(rev._cache_misses.values()) + sum(fwd._cache_misses.values()),
    "warnings": [str(m.message) for m in caught if m.category is RuntimeWarning]}))
"""


def _write_sources(folder: Path, factor: float = 2.0) -> None:
    (folder / "kernel.py").write_text(KERNEL)
    (folder / "helper.py").write_text(HELPER.format(factor=factor))
    (folder / "child.py").write_text(CHILD)


def _run(folder: Path, acts: str = "dup,const") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(ROOT)])
    out = subprocess.run([sys.executable, str(folder / "child.py"), acts], cwd=folder,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    _check_derivatives(result, acts)
    return result


def _check_derivatives(r: dict, acts: str) -> None:
    """Reverse against central differences, forward against reverse (<J t, 1> = <t, J^T 1>)."""
    np.testing.assert_allclose(r["dx"], r["fd_x"], rtol=1e-6, atol=1e-9)
    if acts.endswith("dup"):
        np.testing.assert_allclose(r["dw"], r["fd_w"], rtol=1e-6, atol=1e-9)
    assert r["tangent"] == pytest.approx(float(np.dot(r["t"], r["dx"])), rel=1e-12, abs=1e-14)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("__pycache__/kernel.loss.enzyme_*.nbc"))


def test_a_second_process_loads_and_a_changed_key_misses(tmp_path):
    _write_sources(tmp_path)
    first = _run(tmp_path)
    assert (first["hits"], first["misses"]) == (0, 2) and len(_entries(tmp_path)) == 2
    second = _run(tmp_path)
    assert (second["hits"], second["misses"]) == (2, 0)
    assert second["dx"] == first["dx"] and second["tangent"] == first["tangent"]

    other_activities = _run(tmp_path, "dup,dup")
    assert other_activities["misses"] == 2

    (tmp_path / "helper.py").write_text(HELPER.format(factor=3.0))   # the primal's file unchanged
    edited_callee = _run(tmp_path)
    assert edited_callee["misses"] == 2
    assert edited_callee["dx"] == pytest.approx(np.multiply(first["dx"], 2.25).tolist())

    (tmp_path / "kernel.py").write_text(KERNEL.replace("** 2", "** 3"))
    edited_primal = _run(tmp_path)
    assert edited_primal["misses"] == 2 and edited_primal["dx"] != edited_callee["dx"]


def test_a_corrupted_entry_is_compiled_again_and_replaced(tmp_path):
    _write_sources(tmp_path)
    _run(tmp_path)
    entries = _entries(tmp_path)
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-100] + b"\0" * 100)
    damaged = _run(tmp_path)
    assert (damaged["hits"], damaged["misses"]) == (0, 2)
    assert len(damaged["warnings"]) == 2
    assert all(textwrap.shorten(w, 400).startswith("enzyme_py: the cached derivative")
               and "cannot be read" in w and "compiling it again" in w
               for w in damaged["warnings"])
    again = _run(tmp_path)
    assert (again["hits"], again["misses"]) == (2, 0) and not again["warnings"]


def test_cache_options_are_checked():
    def f(x):
        return x * x

    with pytest.raises(TypeError, match="^cache must be True or False, not 1$"):
        derive_diff(f, None, ("active",), cache=1)
    with pytest.raises(ValueError, match="^cache=True is not supported with mode='split'"):
        derive_diff(f, None, ("active",), mode="split", cache=True)
