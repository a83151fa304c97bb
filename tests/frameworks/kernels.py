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


def central_differences(fn, args, index, eps=1e-6):
    """d fn / d args[index] (fn returns a float), by central differences."""
    x = np.array(args[index], dtype=np.float64)
    grad = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += eps
        lo[j] -= eps
        a_hi = list(args)
        a_hi[index] = hi
        a_lo = list(args)
        a_lo[index] = lo
        grad[j] = (fn(*a_hi) - fn(*a_lo)) / (2 * eps)
    return grad
