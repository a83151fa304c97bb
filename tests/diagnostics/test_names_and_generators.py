"""Whatever the user names a derivative (a Python keyword, spaces, a leading digit), it is
created and works; a generator function is refused by `derive_diff` with an UnsupportedError
before Numba's lowering of it can abort the process."""
from __future__ import annotations

import math

import pytest

from enzyme_py import UnsupportedError, derive_diff


def sin_sq(x):
    return math.sin(x) * x


@pytest.mark.parametrize("name", ["if", "None", "lambda", "d f", "2nd", "__stub"])
def test_any_derivative_name(name):
    df = derive_diff(sin_sq, name, "active")
    x, h = 0.7, 1e-6
    (grad,) = df(x)
    assert grad == pytest.approx((sin_sq(x + h) - sin_sq(x - h)) / (2 * h), rel=1e-7)
    assert grad == pytest.approx(math.cos(x) * x + math.sin(x), rel=1e-12)


def gen(x):
    yield x


def test_generator_refused_at_derive_time():
    with pytest.raises(UnsupportedError) as err:
        derive_diff(gen, "d_gen", "active")
    assert str(err.value) == (
        "cannot differentiate: gen is a generator (it uses yield)\n"
        f"  at {__file__}:{gen.__code__.co_firstlineno}\n"
        "  fix: generators are not supported; return the result, or write it into an output "
        "array argument marked 'dup'")
