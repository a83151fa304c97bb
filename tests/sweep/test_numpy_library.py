"""The numpy sweep entries the pass learned to differentiate in issue 9 ("the rest of the
numpy library"), held to more than the sweep tier's "ok or a clean refusal": each must be ok
in both modes (central finite differences; reverse also against forward through the
inner-product identity, see ``runner``), and its derivatives must release every NRT
allocation they make (shadows of temporaries included).

Root causes fixed for them: a phi of a pointer with null/undef/poison (``for row in X``,
``np.ediff1d``), a sign-bit test of an active float (``np.nan_to_num``), the ``numba_ldexp``
rule, and ``numba_cpow`` given an LLVM body (complex powers).
"""
from __future__ import annotations

import gc

import pytest
from numba.core.runtime import _nrt_python, rtsys

from tests.support.gradcheck import check_forward, check_reverse
from tests.sweep.numpy_entries import ENTRIES
from tests.sweep.runner import JIT, MODES, kernel_of, run

NEWLY_SUPPORTED = (
    "for row in X", "for i, row in enumerate(X)", "np.ediff1d", "np.nan_to_num", "np.ldexp",
    "complex power z**w (numba_cpow)", "complex power z**2.5 (numba_cpow)",
    "np.power (complex)",
)
_BY_NAME = {e.name: e for e in ENTRIES}


@pytest.fixture
def nrt_stats():
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    yield
    if not was_enabled:
        _nrt_python.memsys_disable_stats()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NEWLY_SUPPORTED)
def test_differentiated_and_balanced(name, mode, nrt_stats):
    entry = _BY_NAME[name]
    result = run(entry, mode)
    assert result.outcome == "ok", f"{name} [{mode}]: {result.outcome}\n{result.message}"
    check = check_forward if mode == "forward" else check_reverse
    gc.collect()
    before = rtsys.get_allocation_stats()
    check(kernel_of(entry), jit_options=JIT)     # the compiled derivative, called again
    gc.collect()
    after = rtsys.get_allocation_stats()
    alloc, free, mi_alloc, mi_free = (a - b for a, b in zip(after, before))
    assert (alloc, mi_alloc) == (free, mi_free), (name, mode, after, before)
