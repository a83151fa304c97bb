"""Forward mode on every corpus kernel: tangents against finite differences (check_forward).

Every float argument is "dup" with a random tangent (arrays, inputs and outputs alike); the
returned (value, tangent), the exit tangents of all arrays and the primal outputs are checked.
"""
import pytest

from tests._params import corpus_params
from tests.support.gradcheck import check_forward


@pytest.mark.parametrize("k", corpus_params("forward"))
def test_forward(k):
    check_forward(k)
