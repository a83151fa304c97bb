"""BLAS calls the derivatives of matrix products emit: gemv through Numba's wrapper
(`numba_xxgemv`) inside a small internal function that owns the slots of alpha (1) and beta
(an argument); gemm through the one entry point every derivative uses (`lapack_calls`, the
Fortran routine with any alpha and beta); and the zeroing of an adjoint vector or matrix."""
from __future__ import annotations

from ir_passes.ir.builder import Builder, counted_loop, declare
from ir_passes.ir.types import DOUBLE, I8, I32, I64, PTR, VOID, FloatType, FunctionType, size_of
from ir_passes.ir.values import FALSE, Function, Module, Value, const_float, const_int
from ir_passes.known.generic import zero_memory

from .lapack_calls import call as lapack_call

# The wrappers' parameters, in order: "kind", "alpha" and "beta" are the slots and the kind
# the internal function fills in; the others are its own parameters.
_GEMV = (("kind", I8), ("trans", I8), ("m", I64), ("n", I64), ("alpha", PTR), ("a", PTR),
         ("lda", I64), ("x", PTR), ("beta", PTR), ("y", PTR))
_FILLED = ("kind", "alpha", "beta")


def _blas_function(module: Module, t: FloatType, routine: str, params: tuple) -> Function:
    """`void enzyme_py.<routine>.<t>(<params but kind, alpha, beta>, T beta)`: calls
    `numba_xx<routine>` for float type `t` with alpha = 1 and the given beta."""
    name = f"enzyme_py.{routine}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    target = declare(module, f"numba_xx{routine}", I32, [p for _, p in params])
    own = [(n, p) for n, p in params if n not in _FILLED] + [("beta", t)]
    fn = Function(name, FunctionType(VOID, tuple(p for _, p in own)), [n for n, _ in own],
                  linkage="internal")
    args = dict(zip((n for n, _ in own), fn.args))
    b = Builder(fn.add_block("entry"))
    alpha, beta = b.alloca(t, "alpha"), b.alloca(t, "beta")
    b.store(const_float(t, 1.0), alpha)
    b.store(args["beta"], beta)
    filled = {"kind": const_int(I8, ord("d") if t == DOUBLE else ord("s")), "alpha": alpha,
              "beta": beta}
    b.call(target, [filled[n] if n in _FILLED else args[n] for n, _ in params], I32)
    b.ret()
    module.add_function(fn)
    return fn


def _flag(flag: str) -> Value:
    return const_int(I8, ord(flag))


def call_gemv(b: Builder, module: Module, t: FloatType, trans: str, m: Value, n: Value,
              a: Value, lda: Value, x: Value, beta: float, y: Value) -> None:
    """y = op(A) x + beta y (column-major A, m x n, op as `trans` is 'n' or 't')."""
    b.call(_blas_function(module, t, "gemv", _GEMV),
           [_flag(trans), m, n, a, lda, x, y, const_float(t, beta)], VOID)


def call_gemm(b: Builder, module: Module, t: FloatType, transa: str, transb: str,
              m: Value, n: Value, k: Value, a: Value, lda: Value, bm: Value, ldb: Value,
              beta: float, c: Value, ldc: Value) -> None:
    """C = op(A) op(B) + beta C (column-major, op(A) m x k, op(B) k x n)."""
    lapack_call(b, module, t, "gemm", transa, transb, m, n, k, 1.0, a, lda, bm, ldb, beta, c,
                ldc)


def zero_matrix(b: Builder, module: Module, t: FloatType, ptr: Value, rows: Value,
                cols: Value | None = None, ld: Value | None = None) -> None:
    """Zero `rows` elements at `ptr`, or `cols` columns of them `ld` elements apart."""
    if cols is None or ld is None:
        zero_memory(b, module, ptr, b.mul(rows, const_int(I64, size_of(t))), FALSE)
        return
    b.call(_zero_columns_function(module, t), [ptr, rows, cols, ld], VOID)


def _zero_columns_function(module: Module, t: FloatType) -> Function:
    name = f"enzyme_py.zero_columns.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (PTR, I64, I64, I64)), ["c", "rows", "cols", "ld"],
                  linkage="internal")
    c, rows, cols, ld = fn.args
    b = Builder(fn.add_block("entry"))
    column_bytes = b.mul(rows, const_int(I64, size_of(t)))

    def zero_column(b: Builder, j: Value) -> None:
        zero_memory(b, module, b.gep(t, c, [b.mul(j, ld)]), column_bytes, FALSE)

    counted_loop(b, cols, zero_column)
    b.ret()
    module.add_function(fn)
    return fn
