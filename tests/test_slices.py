"""Whole-array assignments (`out[:] = expr`): Numba copies through a temporary raw buffer
(NRT_Allocate / NRT_Free) when source and target may overlap; both modes shadow it."""
import numpy as np

from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     check_vector_forward)
from tests.support.kernel import Kernel


def assign_expression(a, out):
    out[:] = np.sin(a) * 2.0 + a


def shift_in_place(a):
    a[1:] = a[:-1] * 0.5        # overlapping source and target
    return a.sum()


KERNELS = [
    Kernel("assign_expression", assign_expression, lambda r: (r.random(5), np.zeros(5)),
           outputs=(1,)),
    Kernel("shift_in_place", shift_in_place, lambda r: (r.random(6),), outputs=(0,)),
]


def test_slices_all_modes():
    for kernel in KERNELS:
        check_forward(kernel)
        check_reverse(kernel)
        check_inner_product(kernel)
        check_vector_forward(kernel, 2)
