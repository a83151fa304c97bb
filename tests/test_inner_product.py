"""Forward against reverse on every corpus kernel: <J t, w> == <t, J^T w> (no finite
differences, so it holds to rounding error)."""
import pytest

from tests._params import corpus_params
from tests.support.gradcheck import check_inner_product


@pytest.mark.parametrize("k", corpus_params("inner_product"))
def test_inner_product(k):
    check_inner_product(k)
