"""The garbage collector is paused while a derivative compiles, and left as the user set it."""
import gc

import numpy as np

from enzyme_py import derive_diff
from enzyme_py.collector import paused
from enzyme_py.specialize import Specializer


def square_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def test_paused_restores_the_collector_state():
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_is_paused_while_the_derivative_compiles(monkeypatch):
    seen = []
    derive = Specializer._derive

    def recording(self, primal_types):
        seen.append(gc.isenabled())
        return derive(self, primal_types)

    monkeypatch.setattr(Specializer, "_derive", recording)
    d = derive_diff(square_sum, "d_square_sum_collector", ("dup",))
    x, dx = np.arange(3.0), np.zeros(3)
    d(x, dx)
    assert np.array_equal(dx, 2 * x)
    assert seen == [False] and gc.isenabled()
