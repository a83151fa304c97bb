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
from ir_passes.ir.builder import Builder
from ir_passes.ir.types import FloatType
from ir_passes.ir.values import ConstInt, Instruction, Module, Value, const_int

from .blas import dot_type
from .lapack_rewrite import copy_floats, fresh_array, position_after, release_arrays
from .lapack_uses import overwritten_after

JOBZ, M, N, A, LDA, S, U, LDU, VT, LDVT = range(1, 11)
FULL_NOT_SQUARE = (
    "np.linalg.svd(A, full_matrices=True) of a matrix that is not square (numba_ez_gesdd): "
    "the derivative of the columns of U or rows of Vt beyond min(m, n) is not unique; fix: "
    "call np.linalg.svd(A, full_matrices=False)")


def jobz(inst: Instruction) -> str | None:
    op = inst.operands[JOBZ]
    return chr(op.value & 0xFF) if isinstance(op, ConstInt) else None


def prepare(module: Module, inst: Instruction, _moving) -> None:
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
        owner, inst.operands[pos] = fresh_array(b, module, b.mul(rows, cols), t)
        inst.operands[ld] = rows
        owners.append(owner)
    _set_jobz(inst, "S")
    position_after(b, inst)
    release_arrays(b, module, owners)


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
        owner, data = fresh_array(b, module, count, t)
        copies.append((inst.operands[pos], data, count))
        inst.operands[pos] = data
        owners.append(owner)
    position_after(b, inst)
    for dest, src, count in copies:
        copy_floats(b, module, t, dest, src, count)
    release_arrays(b, module, owners)
