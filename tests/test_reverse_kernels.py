"""Reverse mode on every corpus kernel: gradients against finite differences (check_reverse).

Float scalars are "active", float arrays "dup" with random seeds in their shadows: read-only
arrays must accumulate (d_p += grad), outputs must be consumed, and two calls must add up.
"""
import pytest

from tests._params import corpus_params
from tests.support.gradcheck import check_reverse


@pytest.mark.parametrize("k", corpus_params("reverse"))
def test_reverse(k):
    check_reverse(k)
