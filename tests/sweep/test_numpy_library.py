"""The numpy sweep entries the pass learned to differentiate in issue 9 ("the rest of the
numpy library"), held to more than the sweep tier's "ok or a clean refusal": each must be ok
in both modes (central finite differences; reverse also against forward through the
inner-product identity, see ``runner``), and its derivatives must release every NRT
allocation they make (shadows of temporaries included).

One entry per root cause fixed: a phi of a pointer with null/undef/poison (``for row in X``,
``np.ediff1d``) and forward mode's reference counts of an argument's shadow through such
phis, a sign-bit test of an active float (``np.nan_to_num``), the ``numba_ldexp`` rule, and
``numba_cpow``/``numba_cpowf`` given LLVM bodies (complex powers), lists of floats grown by
appends (``np.extract``, ``np.unique``), and which writes may reach a matrix product's
operands (``np.cov``, ``np.corrcoef`` in reverse mode).
"""
from __future__ import annotations


import pytest

from tests.support.gradcheck import check_forward, check_reverse
from tests.sweep.numpy_entries import ENTRIES
from tests.sweep.runner import JIT, MODES, kernel_of, run

#: One entry per root cause (the sweep's full tier runs the others: np.ediff1d, z**2.5, ...).
NEWLY_SUPPORTED = (
    "for i, row in enumerate(X)", "np.nan_to_num", "np.ldexp",
    "complex power z**w (numba_cpow)", "complex64 power z**w (numba_cpowf)",
    # A reflected list's storage (NRT_MemInfo_new_varsize_dtor / _varsize_realloc): shadows
    # resized with it (forward mode), versioned shadows (reverse mode).
    "np.extract", "np.unique", "list append / getitem", "np.extract (grows)",
    # numba.typed.List of floats, rewritten onto that storage (numba_bridge/typed_list.py).
    "typed.List append / getitem",
    # Reverse mode: llvm.memmove inside a list's storage (list.insert, list.pop).
    "list pop / insert",
    # Reverse mode: a product's operand is not written by stores through a phi of other
    # arrays or null, nor by llvm.stackrestore (np.cov's `c *= ...`, np.corrcoef).
    "np.cov (vector)", "np.corrcoef",
    # Lists of arrays (the shadow list mirrors the list: `analysis/array_lists.py`): views of an
    # argument, fresh arrays, a list only compared; the norm of a complex vector.
    "np.split", "np.select", "np.allclose-guarded", "np.linalg.norm (complex)",
)
_BY_NAME = {e.name: e for e in ENTRIES}


def _params() -> list:
    return [pytest.param(_BY_NAME[name], mode, id=f"{name}-{mode}",
                         marks=pytest.mark.xdist_group(name=f"sweep-{_BY_NAME[name].ident}"))
            for name in NEWLY_SUPPORTED for mode in MODES]


@pytest.mark.parametrize("entry, mode", _params())
def test_differentiated_and_balanced(entry, mode, nrt_stats):
    name = entry.name
    result = run(entry, mode)
    assert result.outcome == "ok", f"{name} [{mode}]: {result.outcome}\n{result.message}"
    check = check_forward if mode == "forward" else check_reverse
    nrt_stats.start()
    check(kernel_of(entry), jit_options=JIT)     # the compiled derivative, called again
    nrt_stats.assert_balanced()
