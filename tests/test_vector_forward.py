"""Vector forward mode (width=k) on the corpus kernels: one width-k call equals k single
forward calls with the same tangents, lane by lane (check_vector_forward). Width is a variant
of forward mode (which every kernel runs): the quick tier checks a quarter of the kernels,
chosen by its seed (``tests/_params.py``); the full tier all of them."""
import pytest

from tests._params import corpus_params, sampled
from tests.kernels import KERNELS
from tests.support.gradcheck import check_vector_forward

WIDTH = 3


@pytest.mark.parametrize("k", sampled(corpus_params("vector_forward"), keep=len(KERNELS) // 4,
                                      family="corpus-vector-forward"))
def test_vector_forward(k):
    check_vector_forward(k, WIDTH)
