"""The numpy soundness sweep as a test tier: each entry of ``numpy_entries`` in both modes
must be OK (matches central finite differences, and reverse matches forward through the
inner-product identity) or a clean ``UnsupportedError``. A wrong derivative, a crash, or an
entry Numba cannot compile fails.

By default the ``CORE`` entries run (a minute or so of compiles); ``ENZYME_SWEEP=full`` runs
all of them (about ten minutes). Entries marked ``known_wrong`` are strict xfails: once the
pass is fixed they XPASS and the mark must go. ``python examples/numpy_sweep.py`` prints the
full results as a table.
"""
from __future__ import annotations

import os

import pytest

from tests.sweep.numpy_entries import CORE_ENTRIES, ENTRIES
from tests.sweep.runner import MODES, run

FULL = os.environ.get("ENZYME_SWEEP", "") == "full"

#: A refusal is clean when it is a short message, not a traceback.
MAX_MESSAGE_LINES = 25


def _params() -> list:
    params = []
    for entry in ENTRIES if FULL else CORE_ENTRIES:
        for mode in MODES:
            marks = [pytest.mark.xdist_group(name=f"sweep-{entry.ident}")]
            if entry.is_known_wrong(mode):
                marks.append(pytest.mark.xfail(strict=True, reason=entry.known_wrong))
            params.append(pytest.param(entry, mode, id=f"{entry.name}-{mode}", marks=marks))
    return params


@pytest.mark.parametrize("entry, mode", _params())
def test_numpy_entry(entry, mode):
    result = run(entry, mode)
    assert result.outcome in ("ok", "unsupported"), (
        f"{entry.name} [{mode}]: {result.outcome}\n{result.message}")
    if result.outcome == "unsupported":
        lines = result.message.strip().splitlines()
        assert lines and "Traceback" not in result.message, result.message
        assert len(lines) <= MAX_MESSAGE_LINES, result.message
