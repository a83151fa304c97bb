"""What the pass knows about Numba's runtime and library helpers, registered with it
(`ir_passes.known.model`) when `enzyme_py.numba_bridge` is imported: by `enzyme_py`, hence by
its API, the `enzyme-py` command line (also on `.ll` files Numba wrote) and the C front end,
which gives C's heap memory the same raw-buffer shadows.

* NRT, the reference-counted runtime: `NRT_MemInfo_alloc_aligned` makes an array's owner
  (meminfo), `NRT_MemInfo_data_fast` its data pointer, `NRT_incref`/`NRT_decref` count its
  references; `NRT_Allocate`/`NRT_Free` a raw buffer (e.g. the temporary copy of an overlapping
  slice assignment). Their roles let the pass shadow such memory.
* `numba_attempt_nocopy_reshape` reads shape and strides and writes new strides, never a
  pointer (its declaration gets the same effects for LLVM: `runtime.py`).
* `numba_xxdot`, the BLAS dot product (`blas.py`), and the matrix products `numba_xxgemv`,
  `numba_xxgemm` (`blas_level2_3.py`) and the norm `numba_xxnrm2` (`blas_norm.py`),
  differentiable; so are the LAPACK helpers of solve, inv, det and slogdet (`lapack_lu.py`;
  np.linalg.det itself is one call, differentiated where it is singular too: `linalg_det.py`)
  cholesky (`lapack_cholesky.py`), eigh and eigvalsh (`lapack_eigh.py`), svd, pinv, norm 2
  and cond (`lapack_svd.py`, `lapack_svd_prepare.py`), qr (`lapack_qr.py`) and lstsq
  (`lapack_lstsq.py`); the other LAPACK helpers, typed containers (`Dict`, and the
  `numba.typed.List` operations `typed_list.py` does not rewrite) and Python object
  operations are known problems.
* A reflected list's storage: `NRT_MemInfo_new_varsize_dtor` makes it, `NRT_MemInfo_varsize_
  realloc` resizes it (roles HANDLE_VARSIZE, VARSIZE_REALLOC: the pass gives a list of floats
  a shadow resized with it).
* A call through a function pointer Numba keeps in a `numba.dynamic.globals.*` global (a
  ctypes or cffi function, a `cython_special` address) is described for its error, with how
  to name it (`llvmlite.binding.add_symbol` and an `ExternalFunction`) and register a rule.
"""
from __future__ import annotations

from ir_passes.known.calls import CallProblem, describe_pointer_globals
from ir_passes.known.model import KnownCall, Role, register

from .blas import DOT_RECORD
from .blas_level2_3 import GEMM_RECORD, GEMV_RECORD
from .blas_operand_copy import COPY_RECORD
from .blas_norm import NRM2_RECORD
from .lapack_cholesky import POTRF_RECORD
from .lapack_eigh import EVD_RECORD
from .lapack_lstsq import LSTSQ_RECORD
from .lapack_lstsq import prepare as prepare_lstsq
from .lapack_lu import GESV_RECORD, GETRF_RECORD, GETRI_RECORD
from .lapack_qr import QR_RECORD
from .linalg_det import DET_RECORD
from .lapack_qr import prepare as prepare_qr
from .lapack_svd import SVD_RECORD
from .typed_list import rewrite_typed_list

_LINALG_HINT = ("not differentiable yet (np.linalg.solve, inv, det, slogdet, cholesky, eigh, "
                "eigvalsh, svd, pinv, qr and lstsq are): write the algorithm with loops over "
                "NumPy arrays, or pass its result as a 'const' argument when it does not "
                "depend on differentiated inputs")
_QR_HINT = ("not differentiable yet outside np.linalg.qr (which is): for a matrix of full "
            "column rank, R = np.linalg.cholesky(A.T @ A).T and Q = A @ np.linalg.inv(R) are "
            "its thin QR factors (R with a positive diagonal)")
_LSTSQ_HINT = ("not differentiable yet: for a real matrix of full column rank, "
               "np.linalg.solve(A.T @ A, A.T @ b) is the least-squares solution")
_NOT_YET = {
    "numba_ez_rgeev": ("eigendecomposition (LAPACK numba_ez_rgeev: np.linalg.eig or eigvals)",
                       _LINALG_HINT),
    "numba_ez_cgeev": ("eigendecomposition (LAPACK numba_ez_cgeev: np.linalg.eig or eigvals)",
                       _LINALG_HINT),
    "numba_ez_xxgqr": ("QR factorisation (LAPACK numba_ez_xxgqr: np.linalg.qr)", _QR_HINT),
}
_PYTHON_API = ("Py", "_Py", "numba_gil_", "numba_unpickle", "numba_runtime_")
_PYTHON_PROBLEM = CallProblem(
    "Python object operation ('{name}') on active values",
    "keep Python objects out of the differentiated function (print() of float values is "
    "supported): work on the values in its caller")
describe_pointer_globals(
    "numba.dynamic.globals.",
    "call through the function pointer {pointer} (a ctypes or cffi function, or a compiled "
    "function's address, e.g. scipy.special.cython_special's from numba.extending."
    "get_cython_function_address) with active arguments",
    "give the address a name and a derivative: llvmlite.binding.add_symbol('my_f', address); "
    "my_f = numba.types.ExternalFunction('my_f', float64(float64)) (its signature); call my_f "
    "in the function instead, and enzyme_py.register_derivative(my_f, forward=my_f_fwd, "
    "reverse=my_f_rev) (or enzyme_py.register_rule('my_f', ...) with its partials)")
_CONTAINERS = {
    "numba_dict_": ("dict", "Python containers are not differentiable: keep active values in "
                            "NumPy arrays (np.empty), not in a dict"),
    "numba_list_": ("typed list", "numba.typed.List of floats is differentiated when the "
                                  "function builds it and uses only append, insert, pop, "
                                  "indexing, len and iteration; other operations (del of a "
                                  "slice, ...) and lists passed in or returned holding active "
                                  "values are not supported yet: keep them in NumPy arrays "
                                  "(np.empty) or in a plain list of floats"),
}


def _container_problem(kind: str, hint: str) -> CallProblem:
    return CallProblem(f"Python {kind} operation ('{{name}}') on active values", hint)


def _typed_list_write(name: str) -> KnownCall:
    """A write into a typed list: a list of floats the function builds is rewritten onto
    growable storage first (`typed_list.py`); other lists stay refused."""
    problem = _container_problem(*_CONTAINERS["numba_list_"])
    return KnownCall(name, prepare=rewrite_typed_list, problem=CallProblem(
        problem.what.format(name=name), problem.hint))


register(
    # Memory owners (meminfos). The first HANDLE_ALLOC registered makes shadow arrays.
    KnownCall("NRT_MemInfo_alloc_aligned", fresh=True, role=Role.HANDLE_ALLOC),
    KnownCall("NRT_MemInfo_alloc_safe_aligned", fresh=True, role=Role.HANDLE_ALLOC),
    KnownCall("NRT_MemInfo_alloc", prefix=True, fresh=True, role=Role.HANDLE_NEW),
    KnownCall("NRT_MemInfo_new", prefix=True, fresh=True, role=Role.HANDLE_NEW),
    KnownCall("NRT_MemInfo_alloc_dtor", fresh=True, role=Role.HANDLE_DTOR),
    KnownCall("NRT_MemInfo_data_fast", pointer_neutral=True, writes=(), role=Role.HANDLE_DATA),
    KnownCall("NRT_incref", inert=True, pointer_neutral=True, role=Role.INCREF),
    KnownCall("NRT_decref", inert=True, pointer_neutral=True, role=Role.DECREF),
    # Raw buffers.
    KnownCall("NRT_Allocate", fresh=True, role=Role.RAW_ALLOC),
    KnownCall("NRT_Free", role=Role.RAW_FREE),
    KnownCall("numba_attempt_nocopy_reshape", pointer_neutral=True),
    # A list's storage (reflected lists: np.extract, np.unique, ...), grown in place: only the
    # runtime's own header is written; the data returned is the owner's, not an argument.
    KnownCall("NRT_MemInfo_new_varsize_dtor", fresh=True, role=Role.HANDLE_VARSIZE),
    KnownCall("NRT_MemInfo_varsize_realloc", fresh=True, pointer_neutral=True, writes=(),
              role=Role.VARSIZE_REALLOC),
    DOT_RECORD, GEMV_RECORD, GEMM_RECORD, NRM2_RECORD, GESV_RECORD, GETRF_RECORD, GETRI_RECORD,
    POTRF_RECORD, EVD_RECORD, SVD_RECORD, QR_RECORD, LSTSQ_RECORD, COPY_RECORD, DET_RECORD,
    KnownCall("numba_ez_gelsd", prepare=prepare_lstsq, problem=CallProblem(
        "least squares (LAPACK numba_ez_gelsd: np.linalg.lstsq) of a complex matrix",
        _LSTSQ_HINT)),
    KnownCall("numba_ez_geqrf", prepare=prepare_qr, problem=CallProblem(
        "QR factorisation (LAPACK numba_ez_geqrf: np.linalg.qr)", _QR_HINT)),
    *(KnownCall(name, problem=CallProblem(*text)) for name, text in _NOT_YET.items()),
    *(KnownCall(prefix, prefix=True, problem=_PYTHON_PROBLEM) for prefix in _PYTHON_API),
    *(KnownCall(prefix, prefix=True, problem=_container_problem(*text))
      for prefix, text in _CONTAINERS.items()),
    _typed_list_write("numba_list_append"), _typed_list_write("numba_list_setitem"),
)
