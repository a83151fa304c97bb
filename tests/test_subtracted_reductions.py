"""Adjoints a reverse loop only subtracts from, kept negated (`ir_passes.subtracted_reductions`):
the adjoint of a scalar shifted out of every element (a max, a mean) is a chain `r -= t`
around the reverse loop, which LLVM vectorises only as `s += t` from `s = -r`. Gradients against finite differences and the inner-product identity,
the rewrite applied and the loop vectorised in the optimised derivative, and gradients bit
for bit the same with the pass on and off (but for the sign of a zero; without vector math,
whose libmvec calls round differently from libm's in vectorised and remainder iterations)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ir_passes.diff.reverse.driver as reverse_driver
from enzyme_py.inspection import inspection
from tests.support.gradcheck import check_inner_product, check_reverse, seeded_reverse
from tests.support.kernel import kernel
from tests.test_last_update import running_max as logsumexp


def centred_energy(x, w):
    """Weighted squared deviations from the mean."""
    mu = 0.0
    for i in range(x.shape[0]):
        mu += x[i]
    mu /= x.shape[0]
    s = 0.0
    for i in range(x.shape[0]):
        d = x[i] - mu
        s += w[i] * d * d
    return s


KERNELS = {
    "logsumexp": (kernel("negated_logsumexp", logsumexp,
                         lambda rng: (rng.standard_normal(37),), "loop", "array1d", "math"),
                  "float64[::1]", ("dup",)),
    "centred_energy": (kernel("negated_centred", centred_energy,
                              lambda rng: (rng.standard_normal(29), rng.standard_normal(29)),
                              "loop", "array1d"),
                       "float64[::1], float64[::1]", ("dup", "dup")),
}


@pytest.mark.parametrize("name", KERNELS)
def test_gradient(name):
    k = KERNELS[name][0]
    check_reverse(k)
    check_inner_product(k)


@pytest.mark.parametrize("name", KERNELS)
def test_negated_and_vectorised(name, monkeypatch):
    """The linked module holds the negated chain, and the optimised derivative has more
    in-order vector reductions than without it (the reverse loop's)."""
    k, types, acts = KERNELS[name]

    def reductions():
        stages = inspection(k.fn, list(acts), types=types).stages
        return stages.module_text, stages.text("optimized").count("llvm.vector.reduce.fadd")
    text, on = reductions()
    assert re.search(r"\.neg = alloca double", text)
    monkeypatch.setattr(reverse_driver, "negate_subtracted_adjoints", lambda fn: False)
    assert on > reductions()[1]


@pytest.mark.parametrize("name", KERNELS)
def test_bit_identical_without_the_rewrite(name, monkeypatch):
    k, _, acts = KERNELS[name]
    # libm only: libmvec's calls round differently in vectorised and remainder iterations
    on = seeded_reverse(k, acts, f"negated_{k.name}_on", vector_math=False)
    monkeypatch.setattr(reverse_driver, "negate_subtracted_adjoints", lambda fn: False)
    off = seeded_reverse(k, acts, f"negated_{k.name}_off", vector_math=False)
    def unsigned(result):
        return (np.asarray(result, dtype=float) + 0.0).tobytes()
    assert unsigned(on[0]) == unsigned(off[0])
    for a, b in zip(on[1], off[1]):
        assert (a + 0.0).tobytes() == (b + 0.0).tobytes()
