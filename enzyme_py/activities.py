"""Activity specifications: parsed and checked before any IR work (API.md, "Activities").

`parse_spec` checks what can be checked from the Python signature alone (count, words, mode
combinations); `check_types` checks each activity against the Numba type of its argument
once argument types are known (first call with new types), through the check every front end
shares (`ir_passes.diff.activity_check`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

from numba import types

from ir_passes.api import (Activity, ParamKind, ParamType, check_activities, check_mode,
                           parse_activity)
from ir_passes.errors import ActivityError, UnsupportedError

from .omitted import parameter_defaults

MODES = ("forward", "reverse")
_RET_WORDS = {"reverse": ("active", "const"), "forward": ("dup", "dupnoneed", "const")}


@dataclass(frozen=True)
class ActivitySpec:
    params: tuple[str, ...]
    activities: tuple[Activity, ...]
    mode: str
    ret: Activity | tuple[Activity, ...] | None   # None: the default for the return type;
                                                  # a tuple: one per returned tuple element
    width: int
    return_primal: bool
    split: bool = False     # mode="split": reverse mode cut into forward and reverse halves
    strong_zero: bool = False   # 0 * inf = 0 in the derivative (API.md, `derive_diff`)
    unchanged: tuple[str, ...] = ()   # split mode: arrays the caller does not change between
    #                                   the halves (read again by `rev`, not kept on the tape)

    def shadowed(self, i: int) -> bool:
        return self.activities[i].has_shadow


def parse_spec(pyfunc, activities, mode: str, ret, width: int,
               return_primal: bool, names=None, strong_zero: bool = False,
               unchanged=()) -> ActivitySpec:
    """`names`: how to call the parameters in messages, if not by `pyfunc`'s own names (a
    derivative's parameters are generated; its argument labels are given instead).
    `unchanged`: split mode's parameter names (checked to be arrays once types are known:
    `check_unchanged`)."""
    split = mode == "split"
    if split:
        if return_primal:
            raise ActivityError("return_primal is not for split mode: its forward half "
                                "returns the primal value already")
        mode = "reverse"
    if mode not in MODES:
        raise ActivityError(f"mode must be 'forward', 'reverse' or 'split', not {mode!r}")
    params = _parameters(pyfunc) if names is None else list(names)
    words = activities.split(",") if isinstance(activities, str) else list(activities)
    words = [str(w).strip() for w in words]
    defaults = parameter_defaults(pyfunc) if names is None else {}
    if len(words) < len(params) and all(i in defaults for i in range(len(words), len(params))):
        words += ["const"] * (len(params) - len(words))   # trailing defaults left out: const
    if len(words) != len(params):
        optional = f"; the last {len(defaults)}, which have defaults, may be left out (they " \
            "are then 'const')" if defaults else ""
        raise ActivityError(f"{pyfunc.__name__} has {len(params)} parameter(s) "
                            f"({', '.join(params)}) but {len(words)} activities were given"
                            f"{optional}")
    acts = []
    for name, word in zip(params, words):
        act = parse_activity(word, name)
        check_mode(name, act, mode)
        acts.append(act)
    ret_act = _parse_ret(ret, mode)
    if not isinstance(width, int) or width < 1:
        raise ActivityError(f"width must be a positive integer, not {width!r}")
    if width > 1 and mode != "forward":
        raise ActivityError("width > 1 (vector mode) is only available in forward mode")
    if return_primal and mode != "reverse":
        raise ActivityError("return_primal is for reverse mode; forward mode returns the "
                            "primal value already")
    return ActivitySpec(tuple(params), tuple(acts), mode, ret_act, width, return_primal, split,
                        strong_zero, _parse_unchanged(unchanged, params, split))


def _parse_unchanged(unchanged, params: list[str], split: bool) -> tuple[str, ...]:
    names = (unchanged,) if isinstance(unchanged, str) else unchanged
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise ActivityError(f"unchanged must be a tuple of parameter names, not {unchanged!r}")
    if names and not split:
        raise ActivityError("unchanged=(...) is for mode='split' only: in the other modes the "
                            "derivative reads its arguments within one call")
    for name in names:
        if name not in params:
            raise ActivityError(f"unchanged names '{name}', which is not a parameter "
                                f"({', '.join(params)})")
    return tuple(dict.fromkeys(names))


def check_unchanged(spec: ActivitySpec, types_: tuple) -> None:
    """Every `unchanged` parameter is an array (the promise is about array memory)."""
    for name in spec.unchanged:
        t = types_[spec.params.index(name)]
        if not isinstance(t, types.Array):
            raise ActivityError(f"unchanged names '{name}', which is a {t}, not an array: "
                                "only arrays can change between fwd and rev")


def _parse_ret(ret, mode: str) -> Activity | tuple[Activity, ...] | None:
    if ret is None:
        return None
    if isinstance(ret, (tuple, list)):
        if mode != "reverse":
            raise ActivityError("ret=(...) per tuple element is for reverse mode; forward mode "
                                "returns the tangent of every element (ret='const' for none)")
        if not ret:
            raise ActivityError("ret=() is empty: give one activity per returned tuple element")
        out = []
        for i, word in enumerate(ret):
            if word not in ("active", "const"):
                raise ActivityError(f"ret element {i}: {word!r} is not valid (expected "
                                    "'active' or 'const')")
            out.append(Activity(word))
        return tuple(out)
    if ret not in _RET_WORDS[mode]:
        raise ActivityError(f"ret={ret!r} is not valid in {mode} mode (expected one of "
                            f"{', '.join(_RET_WORDS[mode])})")
    return Activity(ret)


def ret_words(ret: Activity | tuple[Activity, ...] | None):
    """`ret` as the user spells it (for re-parsing)."""
    if isinstance(ret, tuple):
        return tuple(a.value for a in ret)
    return ret.value if ret is not None else None


def _parameters(pyfunc) -> list[str]:
    if inspect.isgeneratorfunction(pyfunc) or inspect.iscoroutinefunction(pyfunc):
        # refused here: Numba's lowering of a generator aborts the process in capture
        raise UnsupportedError(
            f"{pyfunc.__name__} is a generator (it uses yield)",
            source=f"{pyfunc.__code__.co_filename}:{pyfunc.__code__.co_firstlineno}",
            hint="generators are not supported; return the result, or write it into an "
                 "output array argument marked 'dup'")
    sig = inspect.signature(pyfunc)
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise ActivityError(f"{pyfunc.__name__}: parameter '{p.name}' is {p.kind.description};"
                                " only positional parameters can be differentiated")
        out.append(p.name)
    return out


def is_float_scalar(t) -> bool:
    return isinstance(t, types.Float)


def is_float_array(t) -> bool:
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Float)


def check_types(spec: ActivitySpec, argtypes: tuple) -> None:
    """Check activities against the primal's argument types (raises ActivityError)."""
    check_activities([_param_type(name, t) for name, t in zip(spec.params, argtypes)],
                     spec.activities, spec.mode)


def _param_type(name: str, t) -> ParamType:
    """A parameter of Numba type `t` as the shared activity check describes it."""
    kind = ParamKind.FLOAT if is_float_scalar(t) else \
        ParamKind.ARRAY if is_float_array(t) else ParamKind.OTHER
    return ParamType(name, kind, str(t), _float_fix(t))


def _float_fix(t) -> str:
    """How to pass a float instead of what was passed, if that is what was meant."""
    if isinstance(t, (types.Integer, types.Boolean)):
        return "to differentiate it pass a float (e.g. 1.0, not 1), or "
    if isinstance(t, types.Array) and isinstance(t.dtype, (types.Integer, types.Boolean)):
        return "to differentiate it pass a float array (e.g. a.astype(np.float64)), or "
    return ""


def return_activity(spec: ActivitySpec, restype) -> Activity:
    """The effective activity of the return value (API.md defaults)."""
    elements = element_activities(spec, restype)
    if elements is not None:
        if not any(a.is_differentiated for a in elements):
            return Activity.CONST
        if spec.width > 1:
            raise ActivityError(f"vector forward mode (width > 1) does not support functions "
                                f"returning arrays or tuples ({restype}); use width=1")
        if spec.mode == "reverse":
            return Activity.ACTIVE
        return spec.ret if isinstance(spec.ret, Activity) else Activity.DUP
    differentiable = is_float_scalar(restype)
    if spec.ret is None:
        if not differentiable:
            return Activity.CONST
        return Activity.ACTIVE if spec.mode == "reverse" else Activity.DUP
    if spec.ret is not Activity.CONST and not differentiable:
        raise ActivityError(f"ret={spec.ret.value!r} needs a float return value, but the "
                            f"function returns {restype}")
    return spec.ret


def returned_elements(restype) -> tuple | None:
    """The parts of a returned tuple (a returned array is one part); None for other types."""
    if isinstance(restype, types.Array):
        return (restype,)
    if isinstance(restype, types.BaseTuple):
        return tuple(restype.types)
    return None


def element_activities(spec: ActivitySpec, restype) -> tuple[Activity, ...] | None:
    """The activity of each part of a returned tuple or array (None for other returns):
    floats and float arrays default to differentiated, other parts are const."""
    parts = returned_elements(restype)
    ret = spec.ret
    if parts is None:
        if isinstance(ret, tuple):
            raise ActivityError(f"ret={ret_words(ret)} gives one activity per tuple element, "
                                f"but the function returns {restype}, not a tuple")
        return None
    if isinstance(ret, tuple):
        if len(ret) != len(parts) or isinstance(restype, types.Array):
            raise ActivityError(f"ret={ret_words(ret)} has {len(ret)} element(s), but the "
                                f"function returns {restype}")
        wanted = ret
    else:
        default = Activity.ACTIVE if spec.mode == "reverse" else Activity.DUP
        wanted = (ret or default,) * len(parts)
    out = []
    for i, (act, t) in enumerate(zip(wanted, parts)):
        if act.is_differentiated and not (is_float_scalar(t) or is_float_array(t)):
            if isinstance(ret, tuple):
                raise ActivityError(f"ret element {i} is {act.value!r} but the function returns "
                                    f"{t} there: only floats and float arrays can be "
                                    "differentiated; mark it 'const'")
            if ret is not None and isinstance(restype, types.Array):
                raise ActivityError(f"ret={act.value!r} needs a float return value, but the "
                                    f"function returns {restype}")
            act = Activity.CONST
        out.append(act)
    return tuple(out)
