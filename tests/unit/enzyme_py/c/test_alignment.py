"""Shadow stack slots carry the primal slot's alignment (issue 24, item 5).

clang -O2 aligns a local `double t[4]` to 16 bytes (32 with `aligned(32)`) and its stores
claim that alignment (`store <2 x double> ..., align 16` once SLP-vectorised); a shadow slot
aligned only to its element type makes those stores fault. aligned.c compiled at -O2, with
and without the SLP vectoriser: the derivative's shadow slots are as aligned as the primal's,
and the derivatives match central finite differences and each other (<J t, w> = <t, J^T w>).
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess

import pytest

from enzyme_py.c import derive
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import Kernel
from tests.unit.enzyme_py.c.ckernels import c_deriver

ALIGNED_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aligned.c")
_P = ctypes.c_void_p
_ALLOCA = re.compile(r'^\s*%("?)([\w.\']+)\1 = alloca (.+?), align (\d+)', re.M)


@pytest.fixture(scope="module", params=["-fslp-vectorize", "-fno-slp-vectorize"])
def built(request, tmp_path_factory):
    """aligned.c at -O2 as IR (for `derive`) and as a shared library (the primal)."""
    out = tmp_path_factory.mktemp("aligned")
    ll, so = str(out / "aligned.ll"), str(out / "libaligned.so")
    flags = ["-O2", request.param]
    subprocess.run(["clang-22", *flags, "-emit-llvm", "-S", ALIGNED_C, "-o", ll], check=True)
    subprocess.run(["clang-22", *flags, "-shared", "-fPIC", ALIGNED_C, "-o", so, "-lm"],
                   check=True)
    lib = ctypes.CDLL(so)
    lib.local_prod.argtypes, lib.local_wide.argtypes = [_P, _P, ctypes.c_int], [_P, ctypes.c_int]
    lib.local_prod.restype = lib.local_wide.restype = ctypes.c_double
    with open(ll) as f:
        vectorised = "<2 x double>" in f.read()
    return ll, lib, vectorised


def _kernels(lib):
    prod, wide = lib.local_prod, lib.local_wide     # ctypes functions (Numba calls them)
    def k_local_prod(x, y, n): return prod(x.ctypes, y.ctypes, n)
    def k_local_wide(x, n): return wide(x.ctypes, n)
    return {"local_prod": Kernel("c_local_prod", k_local_prod, lambda rng: (
                rng.uniform(-1.2, 1.2, 7), rng.uniform(-1.2, 1.2, 7), 7)),
            "local_wide": Kernel("c_local_wide", k_local_wide, lambda rng: (
                rng.uniform(-1.2, 1.2, 6), 6))}


def _slot_alignments(text: str) -> dict[str, int]:
    return {name: int(align) for _, name, _, align in _ALLOCA.findall(text)}


@pytest.mark.parametrize("name, acts", [("local_prod", "dup,dup,const"),
                                        ("local_wide", "dup,const")])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_shadow_slots_keep_the_primal_alignment(built, name, acts, mode):
    ll, _, vectorised = built
    if mode == "reverse" and vectorised:
        pytest.skip("reverse mode refuses vector values (issue 24, item 2)")
    text = derive(ll, name, acts, mode=mode).built.module_text
    slots = _slot_alignments(text)
    primal = {n: a for n, a in slots.items() if not n.endswith("'") and a >= 16}
    assert primal, f"no local array aligned to 16+ bytes in the -O2 IR of {name}"
    for slot, align in primal.items():
        assert slots.get(slot + "'", 0) >= align, \
            f"shadow of %{slot} (align {align}) is aligned to {slots.get(slot + chr(39))}"


@pytest.mark.parametrize("name", ["local_prod", "local_wide"])
def test_forward_against_finite_differences(built, name):
    ll, lib, _ = built
    check_forward(_kernels(lib)[name], derive=c_deriver(ll))


@pytest.mark.parametrize("name", ["local_prod", "local_wide"])
def test_reverse_and_inner_product(built, name):
    ll, lib, vectorised = built
    if vectorised:
        pytest.skip("reverse mode refuses vector values (issue 24, item 2)")
    check_reverse(_kernels(lib)[name], derive=c_deriver(ll))
    check_inner_product(_kernels(lib)[name], derive=c_deriver(ll))
