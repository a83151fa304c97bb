"""The kernel corpus: realistic Numba kernels described by ``tests.support.kernel.Kernel``.

``KERNELS`` lists them all (names unique); ``by_tag("loop")`` / ``by_tags("output",
"strided")`` select by tag (all given tags), ``by_name("rk4_pendulum")`` finds one, and
``params(kernels)`` wraps a list as ``pytest.param``s with the kernel names as ids.

The functions are plain Python (helpers they call are ``@numba.njit``); tests jit them with
whatever options they exercise. ``tests/kernels/test_corpus.py`` checks the corpus itself,
independent of enzyme_py. Imports are absolute so the modules load once even when pytest
also imports this package under the name ``kernels``.
"""
from __future__ import annotations

from tests.kernels import apps, arrays, float32, loops, scalar, views
from tests.support.kernel import TAGS, Kernel

KERNELS: list[Kernel] = (scalar.KERNELS + loops.KERNELS + arrays.KERNELS + apps.KERNELS
                         + float32.KERNELS + views.KERNELS)

_BY_NAME = {k.name: k for k in KERNELS}
if len(_BY_NAME) != len(KERNELS):
    raise RuntimeError("duplicate kernel names in the corpus")


def by_tag(tag: str) -> list[Kernel]:
    """Kernels carrying ``tag`` (raises on a tag that does not exist, to catch typos)."""
    if tag not in TAGS:
        raise KeyError(f"unknown tag {tag!r}; known: {sorted(TAGS)}")
    return [k for k in KERNELS if tag in k.tags]


def by_tags(*tags: str, exclude: tuple[str, ...] = ()) -> list[Kernel]:
    """Kernels carrying every tag in ``tags`` and none in ``exclude``."""
    for t in tags + tuple(exclude):
        if t not in TAGS:
            raise KeyError(f"unknown tag {t!r}")
    return [k for k in KERNELS if set(tags) <= k.tags and not (set(exclude) & k.tags)]


def by_name(name: str) -> Kernel:
    return _BY_NAME[name]


def params(kernels: list[Kernel]) -> list:
    """``pytest.param(k, id=k.name)`` for each kernel (for ``@pytest.mark.parametrize``)."""
    import pytest
    return [pytest.param(k, id=k.name) for k in kernels]


__all__ = ["KERNELS", "Kernel", "TAGS", "by_tag", "by_tags", "by_name", "params"]
