"""The battery of tests every np.linalg rule gets, for a list of kernels: forward and reverse
against central finite differences, forward against reverse (inner product), vector forward
mode per lane, and NRT allocations balanced in both modes. A kernel with the function and
argument shapes of an earlier one (another dtype, layout or activity) is a variant: the quick
tier runs one of them, chosen by its seed (``tests._params.kernel_variants``).

    test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \\
        test_temporaries_are_released = battery(KERNELS)
"""
from __future__ import annotations

from typing import Callable, Sequence

import pytest

from tests._params import kernel_variants
from tests.linalg.nrt import assert_released
from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     check_vector_forward)
from tests.support.kernel import Kernel


def battery(kernels: Sequence[Kernel], lanes: int = 0, released: Sequence[int] = (0,)
            ) -> tuple[Callable[..., None], ...]:
    """The five tests over `kernels`; `lanes` indexes the kernel the vector forward test uses,
    `released` those the NRT test uses. The tests of one kernel run on one xdist worker, where
    the derivatives they share are cached (`gradcheck`)."""
    variants = kernel_variants(kernels)
    each = pytest.mark.parametrize("kernel", [pytest.param(k, id=k.name,
                                                           marks=[_group(k), *variants[k.name]])
                                              for k in kernels])

    @each
    def test_forward(kernel):
        check_forward(kernel)

    @each
    def test_reverse(kernel):
        check_reverse(kernel)

    @each
    def test_inner_product(kernel):
        check_inner_product(kernel)

    @_group(kernels[lanes])
    def test_vector_forward_per_lane():
        check_vector_forward(kernels[lanes], 2)

    @pytest.mark.parametrize("check", [check_forward, check_reverse],
                             ids=["forward", "reverse"])
    @pytest.mark.parametrize("index", [pytest.param(i, id=kernels[i].name,
                                                    marks=_group(kernels[i]))
                                       for i in released])
    def test_temporaries_are_released(check, index):
        kernel = kernels[index]
        assert_released(check(kernel).df, kernel.args())

    return (test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane,
            test_temporaries_are_released)


def _group(kernel: Kernel) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(name=f"linalg-{kernel.fn.__module__}-{kernel.name}")
