"""Argument classification and layout-preserving array helpers.

Numba addresses array elements through the primal's byte strides, and a shadow must be
addressed the same way, so every copy and shadow made here reproduces the source array's
shape AND strides (a ``a[::2]`` argument gets a ``[::2]``-strided shadow, a transposed
argument an F-ordered one). Vector-mode shadows (``width=k``) get a leading axis of length
``k`` whose slices each have the primal's strides.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided


def is_float_scalar(x: Any) -> bool:
    return isinstance(x, (float, np.floating)) and not isinstance(x, (bool, np.bool_))


def is_float_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def float_dtype(x: Any) -> np.dtype:
    """The float dtype of a float scalar or array (a Python float is float64)."""
    if isinstance(x, np.ndarray):
        return x.dtype
    if isinstance(x, np.floating):
        return np.dtype(type(x))
    return np.dtype(np.float64)


def differentiable_indices(args: tuple, const: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Indices of the float scalar / float array arguments not declared const."""
    return tuple(i for i, a in enumerate(args)
                 if i not in const and (is_float_scalar(a) or is_float_array(a)))


def _span(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """(byte offset of element [0,...,0] from the lowest address, total bytes spanned)."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return -lo, hi - lo + itemsize


def empty_like_strided(a: np.ndarray, width: int | None = None,
                       dtype: np.dtype | None = None) -> np.ndarray:
    """A zeroed array with ``a``'s shape and strides (and, with ``width=k``, a leading axis
    of length ``k`` whose slices each have ``a``'s strides). Owns fresh memory."""
    dtype = np.dtype(dtype or a.dtype)
    if dtype.itemsize != a.itemsize:
        raise ValueError("empty_like_strided: dtype must have the source itemsize")
    if any(s % a.itemsize for s in a.strides):
        raise ValueError("empty_like_strided: strides not a multiple of the itemsize")
    offset, span = _span(a.shape, a.strides, a.itemsize)
    span = max(span, a.itemsize)
    count = 1 if width is None else width
    buf = np.zeros(count * span // a.itemsize, dtype=dtype)
    shape, strides = a.shape, a.strides
    if width is not None:
        shape, strides = (width,) + shape, (span,) + strides
    out = as_strided(buf[offset // a.itemsize:], shape=shape, strides=strides, writeable=True)
    return out


def copy_like(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with the same shape, strides and dtype (fresh memory)."""
    out = empty_like_strided(a)
    out[...] = a
    return out


def copy_args(args: tuple) -> tuple:
    """Copy every array argument (layout preserved); scalars are immutable and shared."""
    return tuple(copy_like(a) if isinstance(a, np.ndarray) else a for a in args)


def make_shadow(a: Any, values: Any = None, width: int | None = None,
                layout: str = "match") -> Any:
    """A shadow (tangent or adjoint) for argument ``a``.

    Scalars: a scalar of ``a``'s float type (``width=k``: a 1-D array of k). Arrays: shape
    ``a.shape`` (or ``(k,) + a.shape``) with ``a``'s strides when ``layout="match"``, C order
    when ``layout="contiguous"``. Filled from ``values`` (broadcast) or zero.
    """
    dt = float_dtype(a)
    if not isinstance(a, np.ndarray):
        if width is None:
            v = 0.0 if values is None else float(values)
            return v if isinstance(a, float) and not isinstance(a, np.floating) else dt.type(v)
        out = np.zeros(width, dtype=dt)
    elif layout == "contiguous":
        out = np.zeros(a.shape if width is None else (width,) + a.shape, dtype=dt)
    elif layout == "match":
        out = empty_like_strided(a, width=width)
    else:
        raise ValueError(f"unknown shadow layout {layout!r}")
    if values is not None:
        out[...] = values
    return out


def layout_name(a: np.ndarray) -> str:
    """Numba's layout letter for an array ('C', 'F' or 'A')."""
    if a.flags.c_contiguous:
        return "C"
    if a.flags.f_contiguous:
        return "F"
    return "A"
