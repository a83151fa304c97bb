"""Vector forward mode (width=k) on every corpus kernel: one width-k call equals k single
forward calls with the same tangents, lane by lane (check_vector_forward)."""
import pytest

from tests._params import corpus_params
from tests.support.gradcheck import check_vector_forward

WIDTH = 3


@pytest.mark.parametrize("k", corpus_params("vector_forward"))
def test_vector_forward(k):
    check_vector_forward(k, WIDTH)
