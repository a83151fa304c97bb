"""The Numba front end: a Python function specialised for Numba types, as a `Target`.

`numba_target(primal, spec, primal_types, symbol)` captures the primal (raw and canonical IR)
and builds the one `DiffSpec` both `derive_diff` and the inspection tool differentiate (array
parameters carry their rank and element type). `python_target(f, activities, ...)` first
resolves what the inspection tool is given: a function, njit dispatcher, `@autodiff` object or
`derive_diff` result, or a "module:func" / "path/file.py:func" string, with its types (a Numba
type string such as "float64[::1], int64", `parse_types`) and activities (defaults from an
`@autodiff` / `derive_diff` object).
"""
from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Any

from numba import njit, types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaError

from ir_passes.api import Activity, DiffSpec, ParamSpec, Target, derivative_symbol
from ir_passes.ir.parser import parse_type
from ir_passes.ir.types import DOUBLE, FLOAT, IntType

from .activities import ActivitySpec, check_types, parse_spec, ret_words, return_activity
from .numba_bridge.capture import CapturedFunction, capture
from .numba_bridge.link import llvm_abi
from .returns import return_fields
from .sources import InspectionError, load_python_target, numba_error

__all__ = ["NumbaFacts", "numba_target", "parse_types", "python_target", "result_type"]


@dataclass(frozen=True)
class NumbaFacts:
    """What only the Numba front end knows: the capture, and the derivative's result type."""
    capture: CapturedFunction
    restype: Any                  # the Numba type the derivative returns (`result_type`)


def numba_target(primal: Dispatcher, spec: ActivitySpec, primal_types: tuple,
                 symbol: str, located: bool = True) -> Target:
    """`primal` captured for `primal_types`, to be differentiated into `symbol`; with
    `located=False` perhaps without source lines (`capture`)."""
    check_types(spec, primal_types)
    cap = capture(primal, primal_types, located)
    ret_act = return_activity(spec, cap.restype)
    restype = result_type(spec, cap.restype, ret_act, primal_types)
    _, ret_text = llvm_abi((), restype)
    dspec = DiffSpec(primal=cap.func_name, name=symbol, mode=spec.mode,
                     params=param_specs(cap, spec), ret=ret_act,
                     ret_type=None if restype == types.none else parse_type(ret_text),
                     width=spec.width, return_primal=spec.return_primal,
                     noalias_arrays=_only_checked_arrays(primal_types),
                     strong_zero=spec.strong_zero,
                     **return_fields(spec, cap.restype))
    title = f"{primal.py_func.__qualname__} ({', '.join(str(t) for t in primal_types)})"
    return Target(title, lambda: cap.raw_text, cap.module_text, dspec, "numba",
                  NumbaFacts(cap, restype))


def param_specs(cap: CapturedFunction, spec: ActivitySpec) -> tuple[ParamSpec, ...]:
    """One `ParamSpec` per Python parameter; arrays with their rank and element type."""
    out = []
    for layout, act in zip(cap.params, spec.activities):
        t = layout.numba_type
        if isinstance(t, types.Array):
            out.append(ParamSpec(layout.name, act, layout.llvm_args, t.ndim,
                                 _llvm_dtype(t.dtype)))
        else:
            out.append(ParamSpec(layout.name, act, layout.llvm_args))
    return tuple(out)


def _only_checked_arrays(primal_types: tuple) -> bool:
    """Whether the wrapper's call checks (`call_checks`) see every array the function can
    reach: each parameter is an array or a number (an array inside a tuple or record is not
    checked, so it might share memory with a written array argument)."""
    return all(isinstance(t, (types.Array, types.Number, types.Boolean)) for t in primal_types)


def result_type(spec: ActivitySpec, prim_ret, ret_act: Activity, primal_types: tuple):
    """The Numba type of what the derivative returns (API.md), before the wrapper adds the
    width-k tangent array: reverse, the gradients of active scalars (with the primal value
    when asked); forward, the value and/or tangent of the return."""
    if spec.mode == "reverse":
        grads = types.Tuple(tuple(t for t, a in zip(primal_types, spec.activities)
                                  if a is Activity.ACTIVE))
        return types.Tuple((prim_ret, grads)) if spec.return_primal else grads
    if not ret_act.is_differentiated:
        return prim_ret
    if spec.width > 1:
        return types.none if ret_act is Activity.DUPNONEED else prim_ret
    return prim_ret if ret_act is Activity.DUPNONEED else types.UniTuple(prim_ret, 2)


def _llvm_dtype(dtype):
    """The LLVM element type of a Numba array dtype (floats and integers), else None."""
    if isinstance(dtype, types.Float):
        return DOUBLE if dtype.bitwidth == 64 else FLOAT
    if isinstance(dtype, (types.Integer, types.Boolean)):
        return IntType(8 if isinstance(dtype, types.Boolean) else dtype.bitwidth)
    return None


def python_target(f, activities, mode, argtypes, ret, return_primal, width) -> Target:
    """The inspection tool's Python target (see the module docstring) as a `Target`."""
    if isinstance(f, str):
        f = load_python_target(f)
    primal, defaults = _primal_and_defaults(f)
    if activities is None:
        if defaults is None:
            names = ", ".join(primal.py_func.__code__.co_varnames[
                :primal.py_func.__code__.co_argcount])
            raise InspectionError(f"{primal.py_func.__name__}({names}): give one activity per "
                                  "parameter (args=/--args, e.g. --args dup,const)")
        activities = [a.value for a in defaults.activities]
        mode = mode or defaults.mode
        ret = ret if ret is not None else ret_words(defaults.ret)
        width = defaults.width if width == 1 else width
        return_primal = return_primal or defaults.return_primal
    mode = mode or "reverse"
    spec = parse_spec(primal.py_func, activities, mode, ret, width, return_primal,
                      strong_zero=defaults is not None and defaults.strong_zero)
    primal_types = _argument_types(primal, argtypes)
    if len(primal_types) != len(spec.params):
        raise InspectionError(f"{primal.py_func.__name__} has {len(spec.params)} parameter(s) "
                              f"({', '.join(spec.params)}) but {len(primal_types)} type(s) were "
                              "given: give one --types entry per parameter")
    check_types(spec, primal_types)
    try:
        capture(primal, primal_types)
    except NumbaError as exc:
        raise numba_error(exc, primal.py_func.__name__, primal_types) from None
    return numba_target(primal, spec, primal_types,
                        derivative_symbol(mode, primal.py_func.__name__))


def _primal_and_defaults(f):
    """The primal dispatcher, and the ActivitySpec of an @autodiff / derive_diff object."""
    derivative = getattr(f, "derivative", None)          # @autodiff
    specializer = getattr(derivative if derivative is not None else f, "enzyme", None)
    if specializer is not None:
        return specializer.primal, specializer.spec
    if isinstance(f, Dispatcher):
        return f, None
    if callable(f) and hasattr(f, "__code__"):
        jitted = _jitted.get(f)
        if jitted is None:                  # one dispatcher per function: captures are cached
            jitted = _jitted[f] = njit(f)
        return jitted, None
    raise InspectionError(f"cannot inspect {f!r} ({type(f).__name__}): expected a Python "
                          "function, a numba.njit dispatcher, an @autodiff object, or an IR "
                          "file")


_jitted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _argument_types(primal: Dispatcher, argtypes) -> tuple:
    if argtypes is None:
        sigs = primal.signatures
        if len(sigs) == 1:
            return tuple(types.unliteral(t) for t in sigs[0])
        raise InspectionError(f"{primal.py_func.__name__}: give the argument types "
                              "(types=/--types, e.g. \"float64[::1], int64\")"
                              + (f"; compiled so far: {sigs}" if sigs else ""))
    if isinstance(argtypes, str):
        return parse_types(argtypes)
    return tuple(argtypes)


def parse_types(text: str) -> tuple:
    """Numba types from a string like "float64[::1], int64" (names from `numba.types` only)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InspectionError(f"cannot parse types {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _TYPE_NODES):
            raise InspectionError(f"types {text!r}: {type(node).__name__} is not allowed "
                                  "(use Numba type names, [:] / [::1] for arrays, and calls "
                                  "such as UniTuple(float64, 2))")
        if isinstance(node, ast.Name) and node.id not in _TYPE_NAMESPACE:
            raise InspectionError(f"types {text!r}: unknown Numba type {node.id!r}")
    try:
        value = eval(compile(tree, "<types>", "eval"), {"__builtins__": {}},  # noqa: S307
                     dict(_TYPE_NAMESPACE))
    except Exception as exc:
        raise InspectionError(f"types {text!r}: {exc}") from None
    out = value if isinstance(value, tuple) else (value,)
    for t in out:
        if not isinstance(t, types.Type):
            raise InspectionError(f"types {text!r}: {t!r} is not a Numba type")
    return out


_TYPE_NAMESPACE = {k: v for k, v in vars(types).items() if not k.startswith("_")}
_TYPE_NODES = (ast.Expression, ast.Tuple, ast.Name, ast.Load, ast.Subscript, ast.Slice,
               ast.Constant, ast.Call, ast.keyword, ast.List)
