"""SIMD vector code from C (issue 24, item 2): kernels written with `vector_size` types and
loops clang vectorises, differentiated from clang-22's IR at -O0, -O2, -O3 (and the loops at
-O3 -ffast-math), in both modes, against central finite differences and forward against
reverse (<J t, w> == <t, J^T w>)."""
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
# -ffast-math: the loop vectoriser also vectorises the sums (reassociating vector reductions)
FAST = "-O3 -ffast-math"
LOOPS = ("axpy_sq", "dot", "sum_of_products")
CASES = [(k, opt) for k in KERNELS for opt in LEVELS] + \
    [(k, FAST) for k in KERNELS if k.name in LOOPS]
IDS = [f"{k.name}{opt.replace(' ', '')}" for k, opt in CASES]


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_reverse_against_finite_differences(kernel, opt):
    check_reverse(kernel, derive=derive_at(opt))


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_forward_against_finite_differences(kernel, opt):
    check_forward(kernel, derive=derive_at(opt))


@pytest.mark.parametrize("kernel,opt", CASES, ids=IDS)
def test_forward_against_reverse(kernel, opt):
    check_inner_product(kernel, derive=derive_at(opt))


def test_the_loops_are_vectorised():
    """The -O2/-O3 IR the loop tests differentiate holds the vector code they are about."""
    import re
    for opt, wanted in (("-O3", ("<2 x double>", "llvm.vector.reduce.fadd")),
                        (FAST, ("<2 x double>", "call fast double @llvm.vector.reduce.fadd"))):
        text = open(ir_at(opt)).read()
        for name in ("axpy_sq", "sum_of_products") if opt == "-O3" else ("dot",):
            body = re.search(r"define [^@]*@" + name + r"\(.*?\n}", text, re.S).group(0)
            for w in wanted if name != "axpy_sq" else wanted[:1]:
                assert w in body, f"{name} at {opt}: no {w}"
