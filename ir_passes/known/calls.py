"""What to tell the user about a call the pass cannot differentiate: the construct in the user's
terms and a fix that works, or plainly that it is not supported yet.

`register_rule` helps only for external scalar functions (scalar operands, a float result): it
takes one scalar partial per operand. Everything else gets its own message: Numba's BLAS and
LAPACK helpers (matrix products, `np.linalg`), its typed containers, Numba-compiled functions
whose IR was not captured (the front end may describe them, see `describe_symbol`), and other
external functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.types import FloatType, IntType
from ..ir.values import Argument, Instruction


@dataclass(frozen=True)
class CallProblem:
    what: str   # the construct, in the user's terms
    hint: str   # a fix that works, or "not supported yet"


_PRODUCT_HINT = ("matrix products are not differentiable yet: write the product as a loop "
                 "(for i, k: y[i] += A[i, k] * x[k]; for two matrices, for i, j, k: "
                 "C[i, j] += A[i, k] * B[k, j])")
_LINALG_HINT = ("np.linalg is not differentiable yet: write the algorithm with loops over NumPy "
                "arrays (e.g. Gaussian elimination for a solve), or pass its result as a 'const' "
                "argument when it does not depend on differentiated inputs")
_NUMBA_CALLS = {
    # Numba's matrix product calls gemv or gemm depending on the shapes at run time.
    "numba_xxgemm": ("matrix product (BLAS numba_xxgemm: A @ B, np.dot or np.matmul)",
                     _PRODUCT_HINT),
    "numba_xxgemv": ("matrix product (BLAS numba_xxgemv: A @ B, A @ x, np.dot or np.matmul)",
                     _PRODUCT_HINT),
    "numba_xxnrm2": ("vector norm (numba_xxnrm2: np.linalg.norm of a vector)",
                     "np.linalg.norm is not differentiable yet: write np.sqrt(np.sum(x * x))"),
    "numba_xgesv": ("linear solve (LAPACK numba_xgesv: np.linalg.solve)", _LINALG_HINT),
    "numba_xxgetrf": ("LU factorisation (LAPACK numba_xxgetrf: np.linalg.inv, det, slogdet or "
                      "solve)", _LINALG_HINT),
    "numba_xxgetri": ("matrix inverse (LAPACK numba_xxgetri: np.linalg.inv)", _LINALG_HINT),
    "numba_ez_xxgetri": ("matrix inverse (LAPACK numba_ez_xxgetri: np.linalg.inv)",
                         _LINALG_HINT),
    "numba_ez_gesdd": ("singular value decomposition (LAPACK numba_ez_gesdd: np.linalg.svd, "
                       "pinv, cond, matrix_rank or a matrix 2-norm)", _LINALG_HINT),
    "numba_ez_xxxevd": ("symmetric eigendecomposition (LAPACK numba_ez_xxxevd: "
                        "np.linalg.eigh or eigvalsh)", _LINALG_HINT),
    "numba_ez_rgeev": ("eigendecomposition (LAPACK numba_ez_rgeev: np.linalg.eig or eigvals)",
                       _LINALG_HINT),
    "numba_ez_cgeev": ("eigendecomposition (LAPACK numba_ez_cgeev: np.linalg.eig or eigvals)",
                       _LINALG_HINT),
    "numba_xxpotrf": ("Cholesky factorisation (LAPACK numba_xxpotrf: np.linalg.cholesky)",
                      _LINALG_HINT),
    "numba_ez_geqrf": ("QR factorisation (LAPACK numba_ez_geqrf: np.linalg.qr)", _LINALG_HINT),
    "numba_ez_xxgqr": ("QR factorisation (LAPACK numba_ez_xxgqr: np.linalg.qr)", _LINALG_HINT),
    "numba_ez_gelsd": ("least squares (LAPACK numba_ez_gelsd: np.linalg.lstsq)", _LINALG_HINT),
}
_CONTAINERS = {"numba_dict_": "dict", "numba_list_": "typed list"}
_PYTHON_API = ("Py", "_Py", "numba_gil_", "numba_unpickle", "numba_runtime_")
_CONTAINER_HINT = ("Python containers are not differentiable: keep active values in NumPy "
                   "arrays (np.empty), not in a {kind}")

_described: dict[str, CallProblem] = {}


def describe_symbol(symbol: str, what: str, hint: str) -> None:
    """Let a front end describe a function it knows will stay an opaque call (e.g. a Numba
    function whose IR could not be captured), for the error of an active call to it."""
    _described[symbol] = CallProblem(what, hint)


def known_problem(name: str | None) -> CallProblem | None:
    """Why an active call to `name` can never be differentiated today, if it is known that no
    rule will come from elsewhere: Numba's BLAS/LAPACK and container helpers, functions a
    front end described."""
    if name is None:
        return None
    if name in _described:
        return _described[name]
    if name in _NUMBA_CALLS:
        return CallProblem(*_NUMBA_CALLS[name])
    if name.startswith(_PYTHON_API):
        return CallProblem(f"Python object operation ('{name}', e.g. from print()) on active "
                           "values", "remove the print() (or other object use) from the "
                           "differentiated function: print the values in its caller")
    for prefix, kind in _CONTAINERS.items():
        if name.startswith(prefix):
            return CallProblem(f"Python {kind} operation ('{name}') on active values",
                               _CONTAINER_HINT.format(kind=kind))
    return None


def call_problem(inst: Instruction) -> CallProblem:
    """Why an active call cannot be differentiated, and what to do instead."""
    if isinstance(inst.callee, (Argument, Instruction)):
        return CallProblem(f"indirect call through the function pointer %{inst.callee.name} "
                           "with active arguments",
                           "not supported yet: call the function by its name")
    name = inst.callee_name or "<indirect call>"
    known = known_problem(name)
    if known is not None:
        return known
    python_name = demangle_numba(name)
    if python_name is not None:
        return CallProblem(
            f"call to the Numba-compiled function {python_name} ('{name}'), whose LLVM IR "
            "was not captured", "import enzyme_py before compiling that function")
    if _is_scalar_function(inst):
        return CallProblem(f"no derivative rule for the external function '{name}'",
                           f"register its partial derivatives: enzyme_py.register_rule("
                           f"{name!r}, lambda m, args, res: [...])")
    return CallProblem(f"call to '{name}' with active arguments",
                       f"not supported yet: no derivative is known for '{name}' (register_rule "
                       "only covers scalar functions); keep active values out of this call")


def _is_scalar_function(inst: Instruction) -> bool:
    """A float result from scalar operands: the functions `register_rule` can describe."""
    return isinstance(inst.type, FloatType) and bool(inst.operands) and all(
        isinstance(op.type, (FloatType, IntType)) for op in inst.operands)


_NAME_PART = re.compile(r"(\d+)")


def demangle_numba(symbol: str) -> str | None:
    """`module.qualname` of a Numba-mangled function (`_ZN8__main__6helperB2v1...`), else None."""
    if not symbol.startswith("_ZN"):
        return None
    parts, pos = [], 3
    while pos < len(symbol) and symbol[pos].isdigit():
        digits = _NAME_PART.match(symbol, pos).group(1)  # type: ignore[union-attr]
        start = pos + len(digits)
        parts.append(symbol[start:start + int(digits)])
        pos = start + int(digits)
    if len(parts) < 2:
        return None
    # Numba escapes other characters as _XX without escaping '_' itself: undo only '<', '>'.
    return ".".join(parts).replace("_3c", "<").replace("_3e", ">")
