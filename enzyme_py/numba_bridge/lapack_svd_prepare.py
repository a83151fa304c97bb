"""Rewrites of Numba's gesdd calls before differentiation (`KnownCall.prepare` of the SVD
record), so that each is differentiated as the thin SVD (jobz 'S') its rule knows:
* singular values alone (jobz 'N': np.linalg.norm(A, 2 or -2), cond): the call also computes
  U and Vt, into fresh arrays released after it (the derivative reads them);
* full_matrices=True (jobz 'A'): the thin SVD when the matrix is square (the same); else the
  derivative raises at run time (the columns of U or rows of Vt beyond min(m, n) are not
  unique);
* results the function changes after the call (np.linalg.pinv scales s, U and Vt in place):
  the call writes fresh arrays, copied into its own after it (the reverse reads the fresh
  ones, which nothing writes).
Only calls over Numba's copy of A, which nothing but a product overwriting it reads later.
"""
from __future__ import annotations

from ir_passes.diff.raising import raise_unless
from ir_passes.errors import UnsupportedError
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import I1, I32, I64, PTR, VOID, FloatType, size_of
from ir_passes.ir.values import ConstInt, Instruction, Module, Value, const_int
from ir_passes.known.model import Role, runtime_call

from .blas import dot_type
from .lapack_uses import overwritten_after

JOBZ, M, N, A, LDA, S, U, LDU, VT, LDVT = range(1, 11)
FULL_NOT_SQUARE = (
    "np.linalg.svd(A, full_matrices=True) of a matrix that is not square (numba_ez_gesdd): "
    "the derivative of the columns of U or rows of Vt beyond min(m, n) is not unique; fix: "
    "call np.linalg.svd(A, full_matrices=False)")


def jobz(inst: Instruction) -> str | None:
    op = inst.operands[JOBZ]
    return chr(op.value & 0xFF) if isinstance(op, ConstInt) else None


def prepare(module: Module, inst: Instruction) -> None:
    t = dot_type(inst)
    if t is None:
        return                  # complex: the record's check refuses it
    if jobz(inst) == "N":
        _compute_vectors(module, inst, t)
        return
    if jobz(inst) == "A":
        b = Builder()
        b.position_before(inst)
        raise_unless(module, inst, b.icmp("eq", inst.operands[M], inst.operands[N]),
                     UnsupportedError, FULL_NOT_SQUARE)
        _set_jobz(inst, "S")
    if jobz(inst) == "S":
        _copy_changed_results(module, inst, t)


def _set_jobz(inst: Instruction, flag: str) -> None:
    inst.operands[JOBZ] = const_int(inst.operands[JOBZ].type, ord(flag))


def _sizes(b: Builder, inst: Instruction) -> tuple[Value, Value, Value]:
    m, n = inst.operands[M], inst.operands[N]
    return m, n, b.select(b.icmp("slt", m, n), m, n)


def _compute_vectors(module: Module, inst: Instruction, t: FloatType) -> None:
    """Singular values alone computed with U (m x k) and Vt (k x n) in fresh arrays."""
    b = Builder()
    b.position_before(inst)
    m, n, k = _sizes(b, inst)
    owners = []
    for pos, ld, rows, cols in ((U, LDU, m, k), (VT, LDVT, k, n)):
        owner, inst.operands[pos] = _fresh(b, module, b.mul(rows, cols), t)
        inst.operands[ld] = rows
        owners.append(owner)
    _set_jobz(inst, "S")
    _after(b, inst)
    _release(b, module, owners)


def _copy_changed_results(module: Module, inst: Instruction, t: FloatType) -> None:
    """s, U and Vt into fresh arrays, copied into the call's own after it, when the function
    writes one of them later."""
    if not any(overwritten_after(inst, inst.operands[pos]) for pos in (S, U, VT)):
        return
    b = Builder()
    b.position_before(inst)
    m, n, k = _sizes(b, inst)
    copies, owners = [], []
    for pos, count in ((S, k), (U, b.mul(inst.operands[LDU], k)),
                       (VT, b.mul(inst.operands[LDVT], n))):
        owner, data = _fresh(b, module, count, t)
        copies.append((inst.operands[pos], data, b.mul(count, const_int(I64, size_of(t)))))
        inst.operands[pos] = data
        owners.append(owner)
    _after(b, inst)
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    for dest, src, size in copies:
        b.call(memcpy, [dest, src, size, const_int(I1, 0)], VOID)
    _release(b, module, owners)


def _fresh(b: Builder, module: Module, count: Value, t: FloatType) -> tuple[Value, Value]:
    """A fresh array of `count` floats `t` (an NRT owner, as Numba allocates): owner, data."""
    alloc = declare(module, runtime_call(Role.HANDLE_ALLOC).name, PTR, [I64, I32])
    data = declare(module, runtime_call(Role.HANDLE_DATA).name, PTR, [PTR])
    owner = b.call(alloc, [b.mul(count, const_int(I64, size_of(t))), const_int(I32, 32)], PTR)
    return owner, b.call(data, [owner], PTR)


def _after(b: Builder, inst: Instruction) -> None:
    block = inst.block
    assert block is not None
    b.position_before(block.instructions[block.instructions.index(inst) + 1])


def _release(b: Builder, module: Module, owners: list[Value]) -> None:
    decref = declare(module, runtime_call(Role.DECREF).name, VOID, [PTR])
    for owner in owners:
        b.call(decref, [owner], VOID)
