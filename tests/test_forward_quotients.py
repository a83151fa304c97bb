"""Forward mode's own tangent of a quotient, `(da - q db) * (1 / b)` for `q = a / b` when both
operands vary, and its contracted tangent arithmetic (multiply-adds may fuse), against central
finite differences, forward-vs-reverse inner products and width-3 vector forward mode: both
operands active, only one of them, shared denominators (a root, as in Rodrigues' rotation),
float32, scalar arguments, and ADBench BA's objective."""
import math
import pathlib
import sys

import numpy as np
import pytest

from tests.support.gradcheck import check_all

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "examples" / "benchmarks"))
from adbench_kernels import ba_data, ba_objective  # noqa: E402


def shared_root(r, x):
    """Unit vector r / |r| dotted with x, over an active denominator (both operands vary)."""
    theta = math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
    s = 0.0
    for i in range(3):
        s += (r[i] / theta) * x[i]
    return s / (x[0] + 3.0)


def numerator_only(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] / (i + 2.0)
    return s


def denominator_only(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += (i + 1.0) / x[i]
    return s


def same_operand(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += (x[i] * x[i] + 1.0) / x[i]
    return s


def ratio(a, b):
    return a / b + math.sqrt(a * a + b * b) / (b * b)


_R = np.array([0.4, -1.1, 0.7])
_X = np.array([0.5, -1.2, 2.0])
_POS = np.array([1.3, -0.8, 2.5, 0.9])

CASES = [
    (shared_root, (_R, _X)),
    (shared_root, (_R.astype(np.float32), _X.astype(np.float32))),
    (numerator_only, (_POS,)),
    (denominator_only, (_POS,)),
    (same_operand, (_POS,)),
    (ratio, (0.7, -1.9)),
]


@pytest.mark.parametrize("fn, args", CASES,
                         ids=[f"{f.__name__}-{np.asarray(a[0]).dtype}" for f, a in CASES])
def test_quotient_tangents(fn, args):
    check_all(fn, args)


def test_bundle_adjustment_objective():
    """ADBench BA (a few observations): Rodrigues' quotients by the root, the projection's
    quotients by y2, the zero-rotation branch (camera 0)."""
    cams, X, w, feats, obs = ba_data(np.random.default_rng(3), n_cams=3, n_points=4, n_obs=8)
    cams[0, 0:3] = 0.0
    check_all(ba_objective, (cams, X, w, feats, obs))
