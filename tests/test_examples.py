"""The examples that solve real problems run and reach their answers (each exits non-zero
when a fit misses or a derivative disagrees with finite differences)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script: str) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_scipy_newton_fit_with_grad_and_hvp():
    pytest.importorskip("scipy")
    _run("scipy_fit.py")


def test_numba_simulation_as_a_jax_layer():
    pytest.importorskip("jax", reason="JAX is not installed (pip install '.[jax]')")
    _run("jax_simulation_layer.py")
