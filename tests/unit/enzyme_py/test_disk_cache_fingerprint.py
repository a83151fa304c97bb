"""The disk cache's fingerprint: what a derivative is made from changes it, nothing else does
(no compilation needed: it reads code, not IR)."""
from __future__ import annotations

import numba
import numpy as np

from enzyme_py.disk_cache import fingerprint

PARTS = (("dup", "const"), True)


def _primal(callee_factor: float, weights: np.ndarray, offset: float):
    """A fresh primal reading a global array, a closure value and an @njit callee."""
    namespace = {"np": np, "numba": numba, "weights": weights}
    exec(f"@numba.njit\ndef callee(v):\n    return {callee_factor} * v\n", namespace)

    def make(offset=offset):
        def f(x):
            s = offset
            for i in range(x.shape[0]):
                s += callee(x[i]) * weights[i]  # noqa: F821 (from namespace)
            return s
        return f

    fn = make()
    fn = type(fn)(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    return numba.njit(fn)


def test_the_same_code_gives_the_same_fingerprint():
    a = _primal(2.0, np.arange(3.0), 1.0)
    b = _primal(2.0, np.arange(3.0), 1.0)
    assert fingerprint(a, PARTS) == fingerprint(b, PARTS)


def test_what_the_derivative_is_made_from_changes_the_fingerprint():
    base = fingerprint(_primal(2.0, np.arange(3.0), 1.0), PARTS)
    changed = {
        "callee": fingerprint(_primal(3.0, np.arange(3.0), 1.0), PARTS),
        "global array": fingerprint(_primal(2.0, np.arange(3.0) + 1, 1.0), PARTS),
        "closure": fingerprint(_primal(2.0, np.arange(3.0), 1.5), PARTS),
        "activities": fingerprint(_primal(2.0, np.arange(3.0), 1.0),
                                  (("dup", "dup"), True)),
        "options": fingerprint(_primal(2.0, np.arange(3.0), 1.0), (("dup", "const"), False)),
    }
    assert all(value != base for value in changed.values())
    assert len(set(changed.values())) == len(changed)


def test_njit_options_of_the_primal_change_the_fingerprint():
    def f(x):
        return x * x

    assert fingerprint(numba.njit(f), PARTS) != fingerprint(numba.njit(fastmath=True)(f), PARTS)
