"""`enzyme_py.inspection` of a test kernel, made once per worker for each (function,
activities, types) and shared by the tests that read its tape report."""
from __future__ import annotations

import functools

from enzyme_py.inspection import inspection


@functools.cache
def inspected(fn, activities: str, types: str, vector_math: bool = True):
    return inspection(fn, activities, types=types, vector_math=vector_math)
