"""SIMD vector code from C (issue 24, item 2): kernels written with `vector_size` types and
loops clang vectorises, differentiated from clang-22's IR at -O0, -O2 and -O3, in both modes,
against central finite differences and forward against reverse (<J t, w> == <t, J^T w>)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.unit.enzyme_py.c.conftest import HAVE_CLANG

KERNELS = []
if HAVE_CLANG:
    from tests.unit.enzyme_py.c.simd_kernels import derive_at, ir_at, kernels
    KERNELS = kernels()
LEVELS = ("-O0", "-O2", "-O3")
CASES = [(k, opt) for k in KERNELS for opt in LEVELS]
IDS = [f"{k.name}{opt}" for k, opt in CASES]


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_reverse_against_finite_differences(kernel, opt):
    check_reverse(kernel, derive=derive_at(opt))


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_forward_against_finite_differences(kernel, opt):
    check_forward(kernel, derive=derive_at(opt))


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_forward_against_reverse(kernel, opt):
    check_inner_product(kernel, derive=derive_at(opt))
