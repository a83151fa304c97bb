"""Import order does not matter (issue 7): helpers compiled before ``import enzyme_py`` -- an
``@njit`` function calling another, Numba's own overloads (``np.sum``) and internal subroutines
(integer power), a ``@vectorize`` kernel, and a ``cache=True`` helper loaded from Numba's disk
cache -- are compiled again through their dispatchers, so a caller differentiates correctly
(finite differences, both modes, and the inner product). Each scenario runs in a fresh process,
since this test process imported enzyme_py long ago.

A callee that cannot be compiled again is refused naming the Python function, its file:line and
the fix (import enzyme_py first), never a mangled symbol with register_rule advice.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from numba import float64, njit

import enzyme_py.numba_bridge.capture as cap
from enzyme_py import UnsupportedError, derive_diff
from tests.support.paths import ROOT


CACHED_MODULE = """
import numpy as np, numba

@numba.njit(cache=True)
def cached_term(a, i):
    return a[i] * a[i] + np.exp(0.5 * a[i])
"""

SCRIPT = """
import sys
import numpy as np, numba
from cached_helpers import cached_term

@numba.njit
def power(v, n):
    return v ** n

@numba.njit
def term(a, i):
    return power(a[i], 3) + np.sum(np.sin(a)) * a[i]

@numba.vectorize(["float64(float64)"])
def square(v):
    return v * v

x0 = np.ones(3)
term(x0, 0), cached_term(x0, 0), square(x0)
assert "enzyme_py" not in sys.modules
print("cache hits:", sum(cached_term.stats.cache_hits.values()))

import enzyme_py
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse

def caller(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += term(a, i) + cached_term(a, i)
    return s + square(a).sum()

args = (np.array([0.3, -0.7, 1.1]),)
check_forward(caller, args)
check_reverse(caller, args)
check_inner_product(caller, args)
print("derivatives OK")
"""


def _run(tmp_path, source: str) -> str:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_helpers_compiled_before_import_and_from_the_disk_cache(tmp_path):
    (tmp_path / "cached_helpers.py").write_text(CACHED_MODULE)
    _run(tmp_path, "import numpy as np\nfrom cached_helpers import cached_term\n"
                   "cached_term(np.ones(3), 0)\n")            # fills Numba's disk cache
    out = _run(tmp_path, SCRIPT)
    assert "cache hits: 1" in out, out                          # the helper came from disk
    assert "derivatives OK" in out, out


SCALE = 2.0


@njit
def _scaled(v):
    return v * SCALE  # the global is frozen at compile time


def _calls_scaled(v):
    return _scaled(v) + v


def test_a_callee_that_cannot_be_compiled_again_is_named_with_the_fix():
    global SCALE
    _scaled.compile((float64,))
    library = next(iter(_scaled.overloads.values())).library
    del cap._raw_modules[library]             # as if compiled before enzyme_py was imported
    SCALE = "two"                             # and now impossible to compile again
    try:
        df = derive_diff(_calls_scaled, None, ["active"])
        with pytest.raises(UnsupportedError) as err:
            df(1.5)
    finally:
        SCALE = 2.0
    line = _scaled.py_func.__code__.co_firstlineno
    assert re.match(
        r"cannot differentiate: call to the @njit function _scaled "
        rf"\({re.escape(__file__)}:{line}\), compiled before enzyme_py was imported, which "
        r"enzyme_py cannot compile again \(TypingError\)\n", str(err.value)), str(err.value)
    assert "  fix: import enzyme_py before that function is first compiled" in str(err.value)
    call_line = _calls_scaled.__code__.co_firstlineno + 1
    assert f"  at {__file__}:{call_line}\n  code: return _scaled(v) + v\n" in str(err.value)
    assert "register_rule" not in str(err.value)
