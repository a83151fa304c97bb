"""The numpy functions and array methods Numba supports, as differentiable sweep entries.

Sources: Numba's "Supported NumPy features" page and its registries (the ufuncs of
``numba.np.ufunc_db``, the ``@overload``s of ``numba.np.arraymath`` / ``arrayobj`` /
``linalg``, the array methods of ``numba.core.typing.arraydecl``). Every entry that takes
float arrays is here once, in the form users write it; integer-only and boolean-only
functions (bitwise ops, ``isnan``, ``argwhere``, ...) have no derivative to check and are
left out, so are constructors without float inputs (``np.zeros``, ``np.eye``).

Parameters: ``x``, ``y`` are vectors of 6, ``X`` a 3x4 matrix, ``A``, ``B`` 3x3 matrices,
``s``, ``t`` float scalars; integer arrays (``idx``) are const by their type.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tests.sweep.entry import Entry
from tests.sweep.points import (M1, MD, SPD, SQ, X1, X2, XD, const, d, distinct, m, of,
                                off_thirds, s, signed_vec, square, v)

def _section(category: str, rows: list[tuple]) -> list[Entry]:
    """Entries from ``(name, expr, point[, params[, options]])`` rows."""
    out = []
    for row in rows:
        name, expr, point = row[:3]
        params = row[3] if len(row) > 3 else "x"
        options = row[4] if len(row) > 4 else {}
        out.append(Entry(name, expr, point, params, category, **options))
    return out


GE1 = of(v(lo=1.2, hi=2.5))         # arccosh
SIGNED = of(signed_vec)             # abs, sign
OFFINT = of(off_thirds)             # floor(x * 3) etc.: 3x stays off integers
XS = of(v(), s())                   # vector and scalar
XY_S = of(v(), v(), s())

UNARY = _section("unary", [
    ("np.sin", "np.sin(x)", X1), ("np.cos", "np.cos(x)", X1), ("np.tan", "np.tan(x)", X1),
    ("np.arcsin", "np.arcsin(x)", X1), ("np.arccos", "np.arccos(x)", X1),
    ("np.arctan", "np.arctan(x)", X1), ("np.sinh", "np.sinh(x)", X1),
    ("np.cosh", "np.cosh(x)", X1), ("np.tanh", "np.tanh(x)", X1),
    ("np.arcsinh", "np.arcsinh(x)", X1), ("np.arccosh", "np.arccosh(x)", GE1),
    ("np.arctanh", "np.arctanh(x)", X1), ("np.exp", "np.exp(x)", X1),
    ("np.exp2", "np.exp2(x)", X1), ("np.expm1", "np.expm1(x)", X1),
    ("np.log", "np.log(x)", X1), ("np.log2", "np.log2(x)", X1),
    ("np.log10", "np.log10(x)", X1), ("np.log1p", "np.log1p(x)", X1),
    ("np.sqrt", "np.sqrt(x)", X1), ("np.cbrt", "np.cbrt(x)", X1),
    ("np.square", "np.square(x)", X1), ("np.reciprocal", "np.reciprocal(x)", X1),
    ("np.negative", "np.negative(x)", X1), ("np.positive", "np.positive(x)", X1),
    ("np.abs", "np.abs(x)", SIGNED), ("np.absolute", "np.absolute(x)", SIGNED),
    ("np.fabs", "np.fabs(x)", SIGNED), ("np.sign", "np.sign(x) * x", SIGNED),
    ("np.deg2rad", "np.deg2rad(x)", X1), ("np.rad2deg", "np.rad2deg(x)", X1),
    ("np.degrees", "np.degrees(x)", X1), ("np.radians", "np.radians(x)", X1),
    ("np.floor", "np.floor(x * 3.0) + x", OFFINT), ("np.ceil", "np.ceil(x * 3.0) + x", OFFINT),
    ("np.trunc", "np.trunc(x * 3.0) + x", OFFINT), ("np.rint", "np.rint(x * 3.0) + x", OFFINT),
    ("np.round", "np.round(x, 1) + x", X1), ("np.conj", "np.conj(x)", X1),
    ("np.real", "np.real(x)", X1), ("np.sinc", "np.sinc(x)", X1),
    ("np.nan_to_num", "np.nan_to_num(x)", X1), ("np.copy", "np.copy(x)", X1),
    ("x.copy", "x.copy()", X1), ("np.asarray", "np.asarray(x)", X1),
    ("x.astype", "x.astype(np.float64)", X1),
    ("operator -x", "-x", X1),
    ("operator x**2", "x ** 2", X1), ("operator x**0.5", "x ** 0.5", X1),
    ("operator x**3 (int)", "x ** 3", X1),
])

BINARY = _section("binary", [
    ("np.add", "np.add(x, y)", X2, "x, y"), ("np.subtract", "np.subtract(x, y)", X2, "x, y"),
    ("np.multiply", "np.multiply(x, y)", X2, "x, y"),
    ("np.divide", "np.divide(x, y)", X2, "x, y"),
    ("np.true_divide", "np.true_divide(x, y)", X2, "x, y"),
    ("np.power", "np.power(x, y)", X2, "x, y"),
    ("np.float_power", "np.float_power(x, y)", X2, "x, y"),
    ("np.arctan2", "np.arctan2(x, y)", X2, "x, y"), ("np.hypot", "np.hypot(x, y)", X2, "x, y"),
    ("np.maximum", "np.maximum(x, y)", of(d(), d()), "x, y"),
    ("np.minimum", "np.minimum(x, y)", of(d(), d()), "x, y"),
    ("np.fmax", "np.fmax(x, y)", of(d(), d()), "x, y"),
    ("np.fmin", "np.fmin(x, y)", of(d(), d()), "x, y"),
    ("np.copysign", "np.copysign(x, y - 0.55)", of(v(), d()), "x, y"),
    ("np.fmod", "np.fmod(x, y)", of(v(lo=1.1, hi=1.9), v(lo=0.55, hi=0.9)), "x, y"),
    ("np.remainder", "np.remainder(x, y)", of(v(lo=1.1, hi=1.9), v(lo=0.55, hi=0.9)),
     "x, y"),
    ("np.mod", "np.mod(x, y)", of(v(lo=1.1, hi=1.9), v(lo=0.55, hi=0.9)), "x, y"),
    ("np.floor_divide", "np.floor_divide(x, y) + x * y",
     of(v(lo=1.1, hi=1.9), v(lo=0.55, hi=0.9)), "x, y"),
    ("np.logaddexp", "np.logaddexp(x, y)", X2, "x, y"),
    ("np.logaddexp2", "np.logaddexp2(x, y)", X2, "x, y"),
    ("np.ldexp", "np.ldexp(x, k)", of(v(), const(np.arange(6) - 2)), "x, k"),
    ("operator x + y", "x + y", X2, "x, y"), ("operator x - y", "x - y", X2, "x, y"),
    ("operator x * y", "x * y", X2, "x, y"), ("operator x / y", "x / y", X2, "x, y"),
    ("operator x ** y", "x ** y", X2, "x, y"),
    ("operator x * s (scalar)", "x * s", XS, "x, s"),
    ("operator s / x (scalar)", "s / x", XS, "x, s"),
    ("np.power(x, s) (scalar)", "np.power(x, s)", XS, "x, s"),
    ("broadcast X + y (row)", "X + y", of(m(), v(4)), "X, y"),
    ("broadcast X * y[:, None]", "X * y[:, None]", of(m(), v(3)), "X, y"),
    ("broadcast X + y.reshape(-1, 1)", "X + y.reshape(-1, 1)", of(m(), v(3)), "X, y"),
    ("broadcast x + s + X", "X * s + x", of(m(), v(4), s()), "X, x, s"),
])

REDUCTIONS = _section("reduction", [
    ("np.sum", "np.sum(x)", X1), ("x.sum", "x.sum()", X1),
    ("np.sum 2-D", "np.sum(X)", M1, "X"),
    ("np.sum axis=0", "np.sum(X, axis=0)", M1, "X"),
    ("np.sum axis=1", "np.sum(X, axis=1)", M1, "X"),
    ("X.sum axis=1", "X.sum(axis=1)", M1, "X"),
    ("np.prod", "np.prod(x)", X1), ("x.prod", "x.prod()", X1),
    ("np.mean", "np.mean(x)", X1), ("x.mean", "x.mean()", X1),
    ("np.mean 2-D", "np.mean(X)", M1, "X"),
    ("np.var", "np.var(x)", X1), ("x.var", "x.var()", X1),
    ("np.std", "np.std(x)", X1), ("x.std", "x.std()", X1),
    ("np.min", "np.min(x)", XD), ("np.max", "np.max(x)", XD), ("x.max", "x.max()", XD),
    ("x.min", "x.min()", XD), ("np.amax", "np.amax(x)", XD), ("np.amin", "np.amin(x)", XD),
    ("np.max 2-D", "np.max(X)", MD, "X"),
    ("np.argmax (x[argmax])", "x[np.argmax(x)]", XD),
    ("np.argmin (x[argmin])", "x[np.argmin(x)]", XD),
    ("x.argmax (x[x.argmax()])", "x[x.argmax()] * 2.0", XD),
    ("np.argmax axis=0", "(X * np.argmax(X, axis=0)).sum()", MD, "X"),
    ("np.ptp", "np.ptp(x)", XD),
    ("np.nansum", "np.nansum(x)", X1), ("np.nanprod", "np.nanprod(x)", X1),
    ("np.nanmean", "np.nanmean(x)", X1), ("np.nanvar", "np.nanvar(x)", X1),
    ("np.nanstd", "np.nanstd(x)", X1), ("np.nanmax", "np.nanmax(x)", XD),
    ("np.nanmin", "np.nanmin(x)", XD),
    ("np.nanargmax (x[nanargmax])", "x[np.nanargmax(x)]", XD),
    ("np.average", "np.average(x)", X1),
    ("np.average weights", "np.average(x, weights=y)", X2, "x, y"),
    ("np.linalg.norm", "np.linalg.norm(x)", X1),
    ("np.linalg.norm ord=1", "np.linalg.norm(x, 1)", X1),
    ("np.linalg.norm ord=inf", "np.linalg.norm(x, np.inf)", XD),
    ("np.linalg.norm matrix", "np.linalg.norm(X)", M1, "X"),
    ("np.trapezoid", "np.trapezoid(y, x)", of(lambda r: np.sort(distinct(r)), v()), "x, y"),
    ("np.dot(x, x) (sum of squares)", "np.sum(x * x)", X1),
    ("np.count_nonzero-weighted", "x * np.count_nonzero(x > 0.5)", X1),
])

CUMULATIVE = _section("cumulative", [
    ("np.cumsum", "np.cumsum(x)", X1), ("x.cumsum", "x.cumsum()", X1),
    ("np.cumprod", "np.cumprod(x)", X1), ("x.cumprod", "x.cumprod()", X1),
    ("np.cumsum 2-D", "np.cumsum(X)", M1, "X"),
    ("np.nancumsum", "np.nancumsum(x)", X1), ("np.nancumprod", "np.nancumprod(x)", X1),
    ("np.diff", "np.diff(x)", X1), ("np.diff n=2", "np.diff(x, n=2)", X1),
    ("np.diff 2-D", "np.diff(X)", M1, "X"), ("np.ediff1d", "np.ediff1d(x)", X1),
])

SHAPE = _section("shape", [
    ("x.reshape", "x.reshape((2, 3))", X1), ("np.reshape", "np.reshape(x, (3, 2))", X1),
    ("X.reshape(-1)", "X.reshape(-1)", M1, "X"), ("x.ravel", "x.ravel()", X1),
    ("np.ravel", "np.ravel(X)", M1, "X"), ("X.flatten", "X.flatten()", M1, "X"),
    ("X.T", "X.T", M1, "X"), ("X.transpose", "X.transpose()", M1, "X"),
    ("np.transpose", "np.transpose(X)", M1, "X"),
    ("np.swapaxes", "np.swapaxes(X, 0, 1)", M1, "X"),
    ("np.moveaxis", "np.moveaxis(X, 0, 1)", M1, "X"),
    ("np.expand_dims", "np.expand_dims(x, 0)", X1),
    ("np.atleast_2d", "np.atleast_2d(x)", X1),
    ("np.concatenate", "np.concatenate((x, y))", X2, "x, y"),
    ("np.concatenate axis=1", "np.concatenate((A, B), axis=1)", of(square, square), "A, B"),
    ("np.stack", "np.stack((x, y))", X2, "x, y"), ("np.hstack", "np.hstack((x, y))", X2, "x, y"),
    ("np.vstack", "np.vstack((x, y))", X2, "x, y"),
    ("np.column_stack", "np.column_stack((x, y))", X2, "x, y"),
    ("np.dstack", "np.dstack((x, y))[0]", X2, "x, y"),
    ("np.append", "np.append(x, y)", X2, "x, y"),
    ("np.repeat", "np.repeat(x, 2)", X1), ("x.repeat", "x.repeat(2)", X1),
    ("np.flip", "np.flip(x)", X1), ("np.fliplr", "np.fliplr(X)", M1, "X"),
    ("np.flipud", "np.flipud(X)", M1, "X"), ("np.rot90", "np.rot90(X)", M1, "X"),
    ("np.roll", "np.roll(x, 2)", X1), ("np.outer", "np.outer(x, y)", X2, "x, y"),
    ("np.kron", "np.kron(x, y)", X2, "x, y"),
    ("np.broadcast_to", "np.broadcast_to(x, (3, 6))", X1),
    ("np.diag (vector)", "np.diag(x)", X1), ("np.diag (matrix)", "np.diag(A)", SQ, "A"),
    ("np.diagflat", "np.diagflat(x)", X1),
    ("np.ascontiguousarray", "np.ascontiguousarray(X.T)", M1, "X"),
    ("np.asfortranarray", "np.asfortranarray(X)", M1, "X"),
    ("np.split", "np.split(x, 2)[1]", X1), ("np.array_split", "np.array_split(x, 4)[1]", X1),
    ("np.resize", "np.resize(x, 8)", X1), ("np.delete", "np.delete(x, 2)", X1),
    ("np.insert", "np.insert(x, 2, s)", XS, "x, s"),
    ("np.vander", "np.vander(x, 3)", X1), ("np.tri-weighted", "np.tri(3) @ A", SQ, "A"),
    ("np.array([...])", "np.array([s, t, s * t])", of(s(), s()), "s, t"),
    ("np.full", "np.full(4, s)", of(s()), "s"),
    ("np.full_like", "np.full_like(x, s)", XS, "x, s"),
    ("np.linspace (float endpoints)", "np.linspace(s, t, 5)", of(s(), s(1.5, 2.0)), "s, t"),
    ("np.geomspace", "np.geomspace(s, t, 4)", of(s(), s(1.5, 2.0)), "s, t"),
    ("np.logspace", "np.logspace(s, t, 4)", of(s(), s(1.5, 2.0)), "s, t"),
])

INDEXING = _section("indexing", [
    ("slice x[1:5]", "x[1:5]", X1), ("slice x[::2]", "x[::2]", X1),
    ("slice x[::-1]", "x[::-1]", X1), ("slice x[1:-1:2]", "x[1:-1:2]", X1),
    ("slice X[1:, ::2]", "X[1:, ::2]", M1, "X"), ("column X[:, 1]", "X[:, 1]", M1, "X"),
    ("row X[1]", "X[1]", M1, "X"), ("element X[1, 2]", "X[1, 2] * X[2, 3]", M1, "X"),
    ("fancy x[idx]", "x[idx]", of(v(), const(np.array([4, 0, 2, 2]))), "x, idx"),
    ("fancy X[idx]", "X[idx]", of(m(), const(np.array([2, 0]))), "X, idx"),
    ("fancy X[:, idx]", "X[:, idx]", of(m(), const(np.array([3, 1]))), "X, idx"),
    ("boolean mask x[x > 0.5]", "x[x > 0.5]", XD),
    ("np.take", "np.take(x, idx)", of(v(), const(np.array([1, 5, 1]))), "x, idx"),
    ("x.take", "x.take(idx)", of(v(), const(np.array([3, 2]))), "x, idx"),
    ("np.take_along_axis", "np.take_along_axis(x, idx, 0)",
     of(v(), const(np.array([3, 2, 0]))), "x, idx"),
    ("np.where (x, y)", "np.where(x > 0.5, x, y)", of(d(), v()), "x, y"),
    ("np.where (x, 0.0)", "np.where(x > 0.5, x ** 2, 0.0)", XD),
    ("np.where (1-arg) index", "x[np.where(x > 0.5)[0]]", XD),
    ("np.nonzero index", "x[np.nonzero(x > 0.5)[0]]", XD),
    ("np.flatnonzero index", "x[np.flatnonzero(x > 0.5)]", XD),
    ("np.extract", "np.extract(x > 0.5, x)", XD),
    ("np.select", "np.select([x > 0.5, x <= 0.5], [x, x * x])", XD),
    ("np.clip", "np.clip(x, 0.3, 0.7)", XD), ("x.clip", "x.clip(0.3, 0.7)", XD),
    ("np.clip scalar bounds", "np.clip(x, s, 0.7)", of(d(), s(0.29, 0.31)), "x, s"),
    ("np.searchsorted-weighted", "x * np.searchsorted(np.sort(x), 0.5)", XD),
    ("np.triu", "np.triu(A)", SQ, "A"), ("np.tril", "np.tril(A)", SQ, "A"),
    ("np.triu k=1", "np.triu(A, 1)", SQ, "A"),
    ("np.fill_diagonal", "B", SQ, "A", {"setup": ("B = A.copy()",
                                                   "np.fill_diagonal(B, 0.0)")}),
    ("in-place z += y", "z", X2, "x, y", {"setup": ("z = x.copy()", "z += y * y")}),
    ("setitem z[mask] = ...", "z", XD, "x", {"setup": ("z = x.copy()",
                                                       "z[x > 0.5] = 2.0 * x[x > 0.5]")}),
    ("setitem z[idx] = y", "z", of(v(), v(2), const(np.array([1, 4]))), "x, y, idx",
     {"setup": ("z = x.copy()", "z[idx] = y")}),
    ("x.fill", "z * x", XS, "x, s", {"setup": ("z = np.empty_like(x)", "z.fill(s)")}),
])

SORTING = _section("sorting", [
    ("np.sort", "np.sort(x)", XD), ("x.sort (in place)", "z", XD, "x",
                                    {"setup": ("z = x.copy()", "z.sort()")}),
    ("np.argsort (x[argsort])", "x[np.argsort(x)]", XD),
    ("x.argsort", "x[x.argsort()]", XD),
    ("np.median", "np.median(x)", XD), ("np.median odd", "np.median(x[:5])", XD),
    ("np.percentile", "np.percentile(x, 30.0)", XD),
    ("np.quantile", "np.quantile(x, 0.3)", XD),
    ("np.nanmedian", "np.nanmedian(x)", XD),
    ("np.nanpercentile", "np.nanpercentile(x, 30.0)", XD),
    ("np.nanquantile", "np.nanquantile(x, 0.3)", XD),
    ("np.partition", "np.partition(x, 2)", XD),
    ("np.unique", "np.unique(x)", XD),
])

LINALG = _section("linalg", [
    ("np.dot (vectors)", "np.dot(x, y)", X2, "x, y"),
    ("x @ y", "x @ y", X2, "x, y"), ("x.dot", "x.dot(y)", X2, "x, y"),
    ("np.vdot", "np.vdot(x, y)", X2, "x, y"),
    ("np.dot (matrix, vector)", "np.dot(A, y)", of(square, v(3)), "A, y"),
    ("A @ y", "A @ y", of(square, v(3)), "A, y"),
    ("np.dot (matrices)", "np.dot(A, B)", of(square, square), "A, B"),
    ("A @ B", "A @ B", of(square, square), "A, B"),
    ("X @ X.T", "X @ X.T", M1, "X"),
    ("np.trace", "np.trace(A)", SQ, "A"),
    ("np.cross", "np.cross(x, y)", of(v(3), v(3)), "x, y"),
    ("np.linalg.det", "np.linalg.det(A)", SQ, "A"),
    ("np.linalg.inv", "np.linalg.inv(A)", SQ, "A"),
    ("np.linalg.solve", "np.linalg.solve(A, y)", of(square, v(3)), "A, y"),
    ("np.linalg.cholesky", "np.linalg.cholesky(A)", SPD, "A"),
    ("np.linalg.eigvalsh", "np.linalg.eigvalsh(A)", SPD, "A"),
    ("np.linalg.eigh (values)", "np.linalg.eigh(A)[0]", SPD, "A"),
    ("np.linalg.eigvals (real part)", "np.linalg.eigvals(A).real", SPD, "A"),
    ("np.linalg.slogdet", "np.linalg.slogdet(A)[1]", SQ, "A"),
    ("np.linalg.pinv", "np.linalg.pinv(A)", SQ, "A"),
    ("np.linalg.lstsq", "np.linalg.lstsq(X.T, y)[0]", of(m(), v(4)), "X, y"),
    ("np.linalg.qr (R)", "np.linalg.qr(A)[1]", SQ, "A"),
    ("np.linalg.qr (Q, tall)", "np.linalg.qr(X.T)[0]", M1, "X"),
    ("np.linalg.pinv (tall)", "np.linalg.pinv(X.T)", M1, "X"),
    ("np.linalg.svd (singular values)", "np.linalg.svd(A)[1]", SQ, "A"),
    ("np.linalg.matrix_power", "np.linalg.matrix_power(A, 3)", SQ, "A"),
    ("np.linalg.cond", "np.linalg.cond(A)", SPD, "A"),
    ("np.linalg.norm ord=2 (matrix)", "np.linalg.norm(A, 2)", SPD, "A"),
    ("np.linalg.norm ord=-2 (matrix)", "np.linalg.norm(A, -2)", SQ, "A"),
])

MISC = _section("misc", [
    ("np.interp (values)", "np.interp(x, xp, y)",
     of(v(4, 0.25, 0.85), lambda r: np.array([0.0, 0.3, 0.6, 1.0]), v(4)), "x, xp, y"),
    ("np.interp (nodes)", "np.interp(x, xp, y)",
     of(lambda r: np.array([0.1, 0.45, 0.8]), lambda r: np.sort(distinct(r, 4)) * 0.3
        + np.array([0.0, 0.3, 0.6, 0.9]) * 0.7 + 0.02, v(4)), "x, xp, y"),
    ("np.convolve", "np.convolve(x, y)", of(v(), v(3)), "x, y"),
    ("np.correlate", "np.correlate(x, y)", of(v(), v(3)), "x, y"),
    ("np.cov", "np.cov(X)", M1, "X"), ("np.corrcoef", "np.corrcoef(X)", M1, "X"),
    ("np.cov (vector)", "np.cov(x) + 0.0", X1),
    ("np.polyval via np.vander", "np.vander(x, 4) @ c", of(v(), v(4)), "x, c"),
    ("np.unwrap", "np.unwrap(x * 4.0)", X1),
    ("np.allclose-guarded", "x * 2.0 if np.allclose(x, y) else x * 3.0", X2, "x, y"),
    ("np.isfinite-guarded", "np.where(np.isfinite(x), x, 0.0)", X1),
    ("np.angle (complex)", "np.angle(x + 1j * y)", X2, "x, y"),
    ("np.abs (complex)", "np.abs(x + 1j * y)", X2, "x, y"),
    ("complex square .real", "((x + 1j * y) ** 2).real", X2, "x, y"),
    ("complex product .imag", "((x + 1j * y) * (y - 2j * x)).imag", X2, "x, y"),
    ("np.exp (complex) .real", "np.exp(x + 1j * y).real", X2, "x, y"),
    ("np.log (complex) .imag", "np.log(x + 1j * y).imag", X2, "x, y"),
    ("np.sqrt (complex) .real", "np.sqrt(x + 1j * y).real", X2, "x, y"),
    ("np.conj (complex)", "(np.conj(x + 1j * y) * (x + 1j * y)).real", X2, "x, y"),
    ("np.real / np.imag", "np.real(z) * np.imag(z)", X2, "x, y",
     {"setup": ("z = np.exp(1j * x) * y",)}),
    ("np.linalg.norm (complex)", "np.linalg.norm(x + 1j * y)", X2, "x, y"),
])

Z = "(x + 1j * y)"     # a complex vector built from two real ones
COMPLEX = _section("complex", [
    *((f"np.{f} (complex)", f"np.{f}({Z}).real + 0.5 * np.{f}({Z}).imag", X2, "x, y")
      for f in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan",
                "arcsinh", "arccosh", "arctanh", "log10", "log2", "log1p", "expm1", "exp2",
                "square", "reciprocal")),
    ("complex power z**w (numba_cpow)", f"({Z} ** (y + 0.5j)).real", X2, "x, y"),
    ("complex power z**2.5 (numba_cpow)", f"({Z} ** 2.5).imag", X2, "x, y"),
    ("complex64 power z**w (numba_cpowf)",
     "((x + np.complex64(1j) * y) ** (y + np.complex64(0.5j))).real",
     of(lambda r: v()(r).astype(np.float32), lambda r: v()(r).astype(np.float32)), "x, y"),
    ("complex power z**2 (squared)", f"({Z} ** 2.0).imag", X2, "x, y"),
    ("np.power (complex)", f"np.power({Z}, 1.5 - 0.5j).real", X2, "x, y"),
    ("complex division", f"(1.0 / {Z}).imag + ({Z} / (y + 2j)).real", X2, "x, y"),
])

LOOPS = _section("loops", [
    ("for row in X", "z", M1, "X", {"setup": ("z = np.zeros(4)", "for row in X:",
                                              "    z += row * row")}),
    ("for v in x", "z", X1, "x", {"setup": ("z = 0.0", "for v in x:", "    z += v * v")}),
    ("for i, row in enumerate(X)", "z", M1, "X",
     {"setup": ("z = np.zeros(4)", "for i, row in enumerate(X):", "    z += i * row")}),
    ("np.polynomial.polynomial.polyval", "np.polynomial.polynomial.polyval(x, c)",
     of(v(), v(4)), "x, c"),
    # A reflected list of floats grown past several resizes, read back by index.
    ("list append / getitem", "z", of(v(40)), "x",
     {"setup": ("out = []", "for v in x:", "    out.append(v * v)", "z = 0.0",
                "for i in range(len(out)):", "    z += out[i] * x[len(out) - 1 - i]")}),
    ("list pop / insert", "np.array(out)", of(v(12)), "x",
     {"setup": ("out = [v for v in x]", "a = out.pop()", "out.insert(2, a * 3.0)",
                "out[0] = out[0] * out[5]", "for _ in range(9):", "    out.pop(1)")}),
    ("np.extract (grows)", "np.extract(x > 0.55, x) ** 2", of(v(40))),
    # numba.typed.List of floats built inside the function (typed_list.py's rewrite).
    ("typed.List append / getitem", "z", of(v(40)), "x",
     {"setup": ("out = numba.typed.List.empty_list(numba.float64)", "for v in x:",
                "    out.append(v * v)", "out[1] = out[1] * out[2]", "z = 0.0",
                "for i in range(len(out)):", "    z += out[i] * x[len(out) - 1 - i]",
                "for v in out:", "    z += v")}),
    ("typed.List pop / insert", "z", of(v(12)), "x",
     {"setup": ("out = numba.typed.List.empty_list(numba.float64)", "for v in x:",
                "    out.append(v * 1.0)", "z = out.pop()", "out.insert(2, z * 3.0)",
                "out[0] = out[0] * out[5]", "for _ in range(6):", "    z += out.pop(1) * out[1]",
                "for v in out:", "    z += v * v")}),
])

#: Entries whose derivative is wrong today (both modes), with the cause. Strict xfails in
#: the test tier: remove an entry here once the pass handles it.
KNOWN_WRONG: dict[str, str] = {}

ENTRIES: list[Entry] = [
    replace(e, known_wrong=KNOWN_WRONG.get(e.name))
    for e in UNARY + BINARY + REDUCTIONS + CUMULATIVE + SHAPE + INDEXING + SORTING + LINALG
    + MISC + COMPLEX + LOOPS]
assert set(KNOWN_WRONG) <= {e.name for e in ENTRIES}, "KNOWN_WRONG names an unknown entry"

#: The default test tier: one or two entries per distinct Numba implementation path (each
#: math function's own rule is checked by tests/unit/ir_passes/diff/rules), every kind of refusal, and the
#: reshape class of known-wrong entries; ~1/7 of the sweep's compile time. The full sweep
#: runs with ENZYME_SWEEP=full (pytest) or examples/numpy_sweep.py.
CORE: frozenset[str] = frozenset({
    "np.sin", "np.arccosh", "np.sinc", "np.abs", "np.floor", "operator x**3 (int)",
    "np.power", "np.hypot", "np.maximum", "np.fmod", "operator x * s (scalar)",
    "broadcast X + y (row)", "broadcast X + y.reshape(-1, 1)",
    "np.sum axis=0", "np.prod", "np.var", "np.max", "np.argmax (x[argmax])", "np.nanmean",
    "np.linalg.norm", "np.cumsum", "np.diff",
    "x.reshape", "X.T", "np.concatenate", "np.outer", "np.flip", "np.linspace (float endpoints)",
    "slice x[::-1]", "fancy x[idx]", "boolean mask x[x > 0.5]", "np.where (x, y)", "np.clip",
    "setitem z[mask] = ...",
    "np.sort", "np.median", "np.dot (vectors)", "A @ B", "X @ X.T", "np.linalg.solve",
    "np.abs (complex)", "np.exp (complex) .real", "np.convolve",
})
assert CORE <= {e.name for e in ENTRIES}, "CORE names an unknown entry"
CORE_ENTRIES: list[Entry] = [e for e in ENTRIES if e.name in CORE]

_names = [e.name for e in ENTRIES]
assert len(set(_names)) == len(_names), "duplicate sweep entry names"
assert len({e.ident for e in ENTRIES}) == len(ENTRIES), "sweep entry identifiers collide"
