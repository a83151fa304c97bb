"""End-to-end derivatives under Numba's compilation options.

The options are fastmath on/off x error_model python/numpy x boundscheck on/off, in forward
AND reverse mode. The matrix is the half of the eight combinations in which an odd number of
options differ from Numba's defaults (fastmath off, error_model python, boundscheck off): every
value of one option meets every value of each other option once (pairwise coverage), and
the defaults themselves are what the corpus tests (test_forward_kernels, test_reverse_kernels)
run every kernel with. Each combination runs one kernel from each family below; families
rotate through their candidates from one combination to the next, so every candidate runs
under non-default options and every combination covers loops, branches, while loops, 1-D /
2-D / strided arrays, in-place overwrites, math, float32 and calls to other @njit functions
(checked by ``test_every_combination_covers_the_families``).
The quick tier runs one combination, chosen by its seed (``tests/_params.py``); the full
tier runs all four.

``jit_options`` reach the primal the derivative is taken of (``numba.njit(**options)(fn)``)
and the primal the finite differences are evaluated with, so both see the same semantics.
"""
from __future__ import annotations

import itertools
import math

import numba
import pytest

from enzyme_py import derive_diff
from tests._params import variant
from tests.kernels import by_name
from tests.support.gradcheck import check_forward, check_reverse

#: fastmath on, error_model numpy and boundscheck on, each alone or all three together.
COMBINATIONS = [dict(fastmath=fm, error_model=em, boundscheck=bc)
                for fm, em, bc in itertools.product((False, True), ("python", "numpy"),
                                                    (False, True))
                if (fm + (em == "numpy") + bc) % 2 == 1]

#: family -> candidate kernels (combination i uses candidate i % len).
FAMILIES: dict[str, tuple[str, ...]] = {
    "loop+branch": ("loop_branch", "loop_continue", "loop_break", "loop_early_return"),
    "while": ("newton_cubic", "fixed_point", "ode_until", "while_true_halving"),
    "array2d+strided": ("strided_transposed_matvec", "strided_columns"),
    "inplace": ("inplace_recurrence", "inplace_cumsum", "gauss_seidel", "inplace_swap_scale"),
    # divisions: error_model="python" guards them with ZeroDivisionError checks, "numpy" not
    "division": ("softmax", "rational", "lennard_jones", "variance"),
    "float32": ("f32_sum_exp", "f32_matvec", "f32_out_tanh", "f32_inplace_recurrence"),
    "callee": ("callee_array", "callee_writes", "rk4_pendulum", "callee_softclip"),
}

#: What every combination must exercise (kernel tags).
REQUIRED_TAGS = {"loop", "branch", "while", "array1d", "array2d", "strided",
                 "inplace-overwrite", "math", "float32", "callee"}


def _label(options: dict) -> str:
    return (f"fastmath={'on' if options['fastmath'] else 'off'}"
            f"-{options['error_model']}"
            f"-boundscheck={'on' if options['boundscheck'] else 'off'}")


def selection(i: int) -> list[str]:
    """The kernels combination ``i`` runs."""
    return [names[i % len(names)] for names in FAMILIES.values()]


def _cases() -> list:
    out = []
    for i, options in enumerate(COMBINATIONS):
        for name in selection(i):
            # forward and reverse of one cell share a worker, and so its compiled primal
            marks = [pytest.mark.xdist_group(name=f"options-{_label(options)}-{name}"),
                     variant("options-combination", _label(options))]
            out.append(pytest.param(options, name, id=f"{_label(options)}-{name}", marks=marks))
    return out


def test_every_combination_covers_the_families():
    assert len(COMBINATIONS) == 4
    for a, b in itertools.combinations(("fastmath", "error_model", "boundscheck"), 2):
        assert len({(o[a], o[b]) for o in COMBINATIONS}) == 4, (a, b)   # pairwise coverage
    for i, options in enumerate(COMBINATIONS):
        tags = set().union(*(by_name(n).tags for n in selection(i)))
        missing = REQUIRED_TAGS - tags
        assert not missing, f"{_label(options)} does not exercise {sorted(missing)}"
    for names in FAMILIES.values():       # every candidate is used at least once
        used = {selection(i)[list(FAMILIES.values()).index(names)]
                for i in range(len(COMBINATIONS))}
        assert used == set(names)


@pytest.mark.parametrize("options, name", _cases())
def test_reverse_under_options(options, name):
    check_reverse(by_name(name), jit_options=options)


@pytest.mark.parametrize("options, name", _cases())
def test_forward_under_options(options, name):
    check_forward(by_name(name), jit_options=options)


def guarded_sqrt(x):
    y = 0.0
    if x > 0.0:
        y = math.sqrt(x) * 3.0
    return y + x


def test_fastmath_speculated_call_under_select_minimal():
    """LLVM hoists the guarded sqrt into `select(x > 0, sqrt(x) * 3, 0)`; for x < 0 the
    unselected arm's partial is NaN and must not leak into the gradient (0 * NaN)."""
    d = derive_diff(numba.njit(fastmath=True)(guarded_sqrt), None, ["active"])
    assert d(4.0) == pytest.approx((1.75,))
    assert d(-1.0) == (1.0,)


def test_guarded_sqrt_without_fastmath():
    d = derive_diff(numba.njit(guarded_sqrt), None, ["active"])
    assert d(4.0) == pytest.approx((1.75,))
    assert d(-1.0) == (1.0,)
