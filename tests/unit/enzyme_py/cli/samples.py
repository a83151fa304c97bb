"""Small functions for the inspection tool's tests (plain Python; the tool njit-compiles them)."""
import math


def square(x):
    return x * x


def sin_sum(x, n):
    s = 0.0
    for i in range(n):
        s += math.sin(x[i]) * x[i]
    return s


def scale(out, x, a):
    for i in range(x.shape[0]):
        out[i] = a * x[i]


def sin_grid(a, x):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += math.sin(a[i, j] * x[j])
    return s


def branchy(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += math.log(x[i])
        else:
            s -= math.exp(x[i])
    return s


def until_small(x):
    while x > 1e-3:
        x = math.sin(x) * 0.5
    return x


def store_to_const(out, x):
    out[0] = 2.0 * x[0]
