"""Kernels shared by the JAX and PyTorch wrapper tests, with NumPy references."""
import math

import numpy as np


def fit_loss(w, x, y):
    """Least squares of a tanh model: a float from arrays."""
    s = 0.0
    for i in range(x.shape[0]):
        r = math.tanh(w[0] * x[i] + w[1]) - y[i]
        s += r * r
    return s


def fit_loss_np(w, x, y, xp=np):
    return xp.sum((xp.tanh(w[0] * x + w[1]) - y) ** 2)


def softmax(z):
    """An array from an array (a fresh result)."""
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def softmax_np(z, xp=np):
    e = xp.exp(z - xp.max(z))
    return e / xp.sum(e)


def scaled_pair(x, k):
    """A tuple (array, float) from an array and a float scalar."""
    return x * k, np.sum(x * x)
