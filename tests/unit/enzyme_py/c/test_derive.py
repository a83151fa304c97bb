"""`enzyme_py.c.derive` on the C kernels of kernels.c: forward and reverse against central
finite differences, and forward against reverse (<J t, w> == <t, J^T w>), with the shared
checkers of tests/support/gradcheck."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.unit.enzyme_py.c.ckernels import KERNELS_C, c_derive, kernels
from tests.unit.enzyme_py.c.conftest import HAVE_CLANG
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse

KERNELS = kernels() if HAVE_CLANG else []
IDS = [k.name for k in KERNELS]


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_reverse_against_finite_differences(kernel):
    check_reverse(kernel, derive=c_derive)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_forward_against_finite_differences(kernel):
    check_forward(kernel, derive=c_derive)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_forward_against_reverse(kernel):
    check_inner_product(kernel, derive=c_derive)


def test_c_conventions():
    """The raw C-ABI callable: one active float is returned as a float, several as a tuple
    (a struct through a result pointer); forward mode returns the tangent only."""
    from enzyme_py.c import derive
    one = derive(KERNELS_C, "three", "active,const,const")
    many = derive(KERNELS_C, "three", "active,active,active")
    fwd = derive(KERNELS_C, "three", "dup,const,dup", mode="forward")
    a, b, c = 0.6, 1.3, -0.8
    grads = many(a, b, c)
    assert isinstance(grads, tuple) and len(grads) == 3
    assert one(a, b, c) == pytest.approx(grads[0], rel=1e-15)
    assert fwd(a, 1.0, b, c, 0.5) == pytest.approx(grads[0] + 0.5 * grads[2], rel=1e-12)
    assert isinstance(many.cfunc, ctypes._CFuncPtr) and many.address != 0


def test_from_bitcode_and_ir_text(tmp_path):
    """Bitcode bytes and a .ll path give the same derivative as the C source."""
    import subprocess
    from enzyme_py.c import derive
    ll, bc = tmp_path / "k.ll", tmp_path / "k.bc"
    subprocess.run(["clang-22", "-O1", "-emit-llvm", "-S", KERNELS_C, "-o", str(ll)], check=True)
    subprocess.run(["clang-22", "-O1", "-emit-llvm", "-c", KERNELS_C, "-o", str(bc)], check=True)
    x = np.linspace(-1, 1, 5)
    results = []
    for source in (KERNELS_C, str(ll), bc.read_bytes()):
        dx = np.zeros(5)
        derive(source, "pointer_walk", "dup,const")(x, dx, 5)
        results.append(dx)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_opt_level(level):
    """`opt_level` compiles the C source at that level (-O0 keeps `optnone`) and the
    derivative agrees with the default -O1 one."""
    from enzyme_py.c import derive
    from enzyme_py.c.clang import load_ir
    x = np.linspace(-1, 1, 5)
    ref, got = np.zeros(5), np.zeros(5)
    derive(KERNELS_C, "pointer_walk", "dup,const")(x, ref, 5)
    derive(KERNELS_C, "pointer_walk", "dup,const", opt_level=level)(x, got, 5)
    np.testing.assert_allclose(got, ref, rtol=1e-13)
    assert ("optnone" in load_ir(KERNELS_C, level)) == (level == "-O0")


def test_opt_level_unknown():
    from enzyme_py.c import ClangError, derive
    with pytest.raises(ClangError, match=r"opt_level='-O7' is not one of -O0, -O1"):
        derive(KERNELS_C, "three", "active,const,const", opt_level="-O7")
