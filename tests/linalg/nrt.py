"""NRT allocation statistics around repeated calls of a derivative (for linalg tests)."""
from __future__ import annotations

import gc

import numpy as np
from numba.core.runtime import rtsys

from tests.support.nrt_stats import nrt_statistics


def assert_released(df, args: tuple, calls: int = 3) -> None:
    """Call `df` (shadows zeros) `calls` times: as many allocations as releases, and some."""
    with nrt_statistics():
        call = [a for v in args for a in (v, np.zeros_like(v))]
        df(*call)
        gc.collect()
        before = rtsys.get_allocation_stats()
        for _ in range(calls):
            df(*call)
        gc.collect()
        after = rtsys.get_allocation_stats()
    alloc, free, mi_alloc, mi_free = (a - b for a, b in zip(after, before))
    assert mi_alloc > 0 and (alloc, mi_alloc) == (free, mi_free), (after, before)
