"""Products whose operand the function writes afterwards: the product reads a copy the reverse
pass keeps (as Enzyme caches overwritten BLAS operands), instead of a refusal.

Each kernel is checked in forward and reverse mode against central finite differences and
forward against reverse (`<J t, w> == <t, J^T w>`). Before the copies, each was refused
("... of an array the function also writes"); `carried_h` gave a wrong gradient before it was
refused."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import kernel


def dot_then_write(a, b):
    s = np.dot(a, b)
    a[0] = 0.0                               # the reverse of np.dot reads the old a
    return s


def gemv_then_write(A, x):
    s = np.sum(A @ x)
    A[0, 0] = 0.0                            # the reverse of A @ x reads the old A
    return s


def out_overwrites_operand(A, x, y):
    s = np.sum(A @ y)
    np.dot(A, x, y)                          # overwrites y, which the first product read
    return s + np.sum(y * y)


def carried_h(x, w):
    """Each iteration makes a new h; `h_prev` carries the last into the next iteration, which
    writes it after the allocation ran again."""
    s = 0.0
    h_prev = np.zeros(3)
    for r in range(x.shape[0]):
        h = np.sin(x[r]) * w
        h_prev[0] = 2.0 * h_prev[1]
        s += np.dot(h, h)
        h_prev = h
    return s


def gradient_descent(X, y, w0, lr):
    """Least squares fitted by a few steps of gradient descent, `w` updated in place."""
    w = w0.copy()
    for _ in range(4):
        w -= lr * (X.T @ (X @ w - y))
    return np.sum(w * w)


def state_space(z):
    """A linear time loop multiplying the state itself, which the next step writes."""
    F = np.array([[1.0, 0.5], [-0.2, 0.9]])
    x = np.zeros(2)
    s = 0.0
    for t in range(z.shape[0]):
        x = F @ x
        x[0] += z[t]
        s += x[0] * x[1] + x[0]
    return s


def in_place_matrix(A, B):
    """A matrix updated in place after a matrix product read it."""
    C = A @ B
    A *= 0.5
    return np.sum(C * C) + np.sum(A @ B)


KERNELS = [
    kernel("dot_then_write", dot_then_write,
           lambda rng: (rng.normal(size=4), rng.normal(size=4)), outputs=(0,)),
    kernel("gemv_then_write", gemv_then_write,
           lambda rng: (rng.normal(size=(3, 2)), rng.normal(size=2)), outputs=(0,)),
    kernel("out_overwrites_operand", out_overwrites_operand,
           lambda rng: (rng.normal(size=(2, 2)), rng.normal(size=2), rng.normal(size=2)),
           outputs=(2,)),
    kernel("carried_h", carried_h, lambda rng: (rng.normal(size=(4, 3)), rng.normal(size=3))),
    kernel("gradient_descent", gradient_descent,
           lambda rng: (rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=3), 0.05)),
    kernel("state_space", state_space, lambda rng: (rng.normal(size=5),)),
    kernel("in_place_matrix", in_place_matrix,
           lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(4, 2))), outputs=(0,)),
]
CHECKS = {"forward": check_forward, "reverse": check_reverse,
          "inner_product": check_inner_product}


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_overwritten_operand(k, check):
    CHECKS[check](k)
