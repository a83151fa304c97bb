"""One derivative specialised for concrete argument types: capture, differentiate, link.

`Specializer.build` is the typing-time callback of the derivative's intrinsic: it captures
the primal for the primal's argument types, builds a `DiffSpec`, runs forward or reverse
synthesis, prints and verifies the module, and records every stage for inspection.
`wrapper_source` writes the small Python wrapper Numba compiles around the intrinsic call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ir_passes.analysis.activity import analyze_activity, print_activity
from ir_passes.canonicalize import optimize
from ir_passes.diff.driver import differentiate
from ir_passes.diff.reverse.plan import written_bases
from ir_passes.diff.seeds import activity_seeds
from ir_passes.diff.spec import ARRAY_DATA, Activity, DiffSpec, ParamSpec
from ir_passes.errors import ActivityError
from ir_passes.ir.parser import parse_module, parse_type
from ir_passes.ir.printer import print_function
from ir_passes.ir.types import DOUBLE, FLOAT, IntType

from .activities import ActivitySpec, check_types, return_activity
from .numba_bridge.capture import capture
from .numba_bridge.link import Built, llvm_abi, unique_symbol
from .returns import check_differentiates_something, d_ret_arguments, return_fields

STAGES = ("raw", "primal", "canonical", "preprocessed", "activity", "derivative", "optimized")
# API.md's stage names for the IR inspection tool's: the primal as Numba lowered it, and
# the preprocessed (canonicalised, callees inlined) IR the pass differentiates.
_ALIASES = {"primal": "raw", "preprocessed": "canonical"}


@dataclass
class Stages:
    """IR text of every stage of one specialisation (for `inspect`)."""
    signature: str
    texts: dict[str, str] = field(default_factory=dict)
    module_text: str = ""          # the derivative's verified module, as linked


class Specializer:
    def __init__(self, primal, name: str, spec: ActivitySpec) -> None:
        self.primal = primal
        self.name = name
        self.spec = spec
        self.stages: dict[tuple, Stages] = {}

    # ------------------------------------------------------------ wrapper
    def wrapper_params(self) -> list[str]:
        prefix = "d_" if self.spec.mode == "reverse" else "t_"
        out = []
        for p, act in zip(self.spec.params, self.spec.activities):
            out.append(p)
            if act.has_shadow:
                out.append(prefix + p)
        return out

    def d_ret_param(self) -> str | None:
        """Reverse mode: the name of the trailing optional `d_ret` parameter."""
        if self.spec.mode != "reverse":
            return None
        name, taken = "d_ret", set(self.wrapper_params())
        while name in taken:
            name += "_"
        return name

    def _primal_types(self, argtypes: tuple) -> tuple:
        it = iter(argtypes)
        out = []
        for act in self.spec.activities:
            out.append(types.unliteral(next(it)))
            if act.has_shadow:
                next(it)
        return tuple(out)

    def wrapper_source(self, argtypes: tuple) -> str:
        """`impl` for these wrapper argument types: shadow checks, then the derivative call."""
        params = self.wrapper_params()
        primal_types = self._primal_types(argtypes)
        check_types(self.spec, primal_types)
        d_ret = self.d_ret_param()
        lines = [f"def impl({', '.join(params + ([f'{d_ret}=None'] if d_ret else []))}):"]
        k = self.spec.width
        pos = 0
        for pname, act, ptype in zip(self.spec.params, self.spec.activities, primal_types):
            pos += 1
            if not act.has_shadow:
                continue
            shadow = params[pos]
            pos += 1
            if k == 1 and isinstance(ptype, types.Array):
                lines.append(f"    check_shadow({pname}, {shadow}, '{pname}')")
            elif k > 1:
                lines.append(f"    check_lanes({pname}, {shadow}, {k}, '{pname}')")
        lines += self._disjointness_checks(primal_types)
        seeds = self._d_ret_arguments(argtypes, primal_types, d_ret)
        lines += [f"    check_disjoint({e}, {p}, '{e}', '{p}')" for e, is_array in seeds
                  if is_array for p, t in zip(params, argtypes) if isinstance(t, types.Array)]
        call_args = ", ".join(params + [e for e, _ in seeds])
        if k > 1 and self._ret_differentiated(primal_types):
            lines.append(f"    tangent = np.empty({k}, np.float64)")
            lines.append(f"    r = __call({call_args}, tangent)")
            keep = self.spec.ret is not Activity.DUPNONEED
            lines.append("    return r, tangent" if keep else "    return tangent")
        else:
            lines.append(f"    return __call({call_args})")
        return "\n".join(lines) + "\n"

    def _disjointness_checks(self, primal_types: tuple) -> list[str]:
        """Derivatives track each array's memory separately (and reverse mode rereads arrays
        the function never writes): check at call time that the arrays it writes do not
        overlap its other arrays."""
        arrays = [i for i, t in enumerate(primal_types) if isinstance(t, types.Array)]
        if len(arrays) < 2:
            return []
        cap = capture(self.primal, primal_types)
        fn = parse_module(cap.module_text).functions[cap.func_name]
        bases = written_bases(fn)
        written = arrays if bases is None else [
            i for i in arrays if fn.args[cap.params[i].llvm_args[ARRAY_DATA]] in bases]
        names = self.spec.params
        return [f"    check_disjoint({names[w]}, {names[o]}, '{names[w]}', '{names[o]}')"
                for w in written for o in arrays if o != w and not (o in written and o < w)]

    def _d_ret_arguments(self, argtypes: tuple, primal_types: tuple,
                         d_ret) -> list[tuple[str, bool]]:
        if d_ret is None:
            return []
        given = argtypes[len(self.wrapper_params())] \
            if len(argtypes) > len(self.wrapper_params()) else None
        restype = capture(self.primal, primal_types).restype
        return d_ret_arguments(self.spec, restype, given, d_ret, self.primal.py_func.__name__)

    def _ret_differentiated(self, primal_types: tuple) -> bool:
        restype = capture(self.primal, primal_types).restype
        return return_activity(self.spec, restype).is_differentiated

    # ------------------------------------------------------------ derivative
    def build(self, argtypes: tuple) -> Built:
        primal_types = self._primal_types(argtypes)
        check_types(self.spec, primal_types)
        cap = capture(self.primal, primal_types)
        ret_act = return_activity(self.spec, cap.restype)
        check_differentiates_something(self.spec, cap, ret_act, self.primal.py_func.__name__)
        restype = result_type(self.spec, cap.restype, ret_act, primal_types)
        _, ret_text = llvm_abi((), restype)
        module = parse_module(cap.module_text)
        stages = Stages(", ".join(str(t) for t in primal_types))
        stages.texts["raw"] = cap.raw_text
        stages.texts["canonical"] = cap.module_text
        symbol = unique_symbol(("fwddiffe_" if self.spec.mode == "forward" else "diffe_")
                               + self.name)
        dspec = DiffSpec(primal=cap.func_name, name=symbol, mode=self.spec.mode,
                         params=self._param_specs(cap), ret=ret_act,
                         ret_type=None if restype == types.none else parse_type(ret_text),
                         width=self.spec.width, return_primal=self.spec.return_primal,
                         **return_fields(self.spec, cap.restype))
        stages.texts["activity"] = self._activity_text(module, dspec)
        fn, text = differentiate(module, dspec, f"{self.name} ({stages.signature})")
        stages.texts["derivative"] = print_function(fn)
        self.stages[primal_types] = stages
        stages.module_text = text
        return Built(text, symbol, restype, (cap.library,))

    def _param_specs(self, cap) -> tuple[ParamSpec, ...]:
        out = []
        for layout, act in zip(cap.params, self.spec.activities):
            t = layout.numba_type
            if isinstance(t, types.Array):
                out.append(ParamSpec(layout.name, act, layout.llvm_args, t.ndim, _llvm_dtype(t.dtype)))
            else:
                out.append(ParamSpec(layout.name, act, layout.llvm_args))
        return tuple(out)

    def _activity_text(self, module, dspec: DiffSpec) -> str:
        fn = module.functions[dspec.primal]
        return print_activity(fn, analyze_activity(fn, *activity_seeds(fn, dspec)))

    # ------------------------------------------------------------ inspection
    def inspect(self, stage: str = "derivative") -> str:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
        if not self.stages:
            return "; no specialisation compiled yet: call the derivative first\n"
        parts = []
        for st in self.stages.values():
            key = _ALIASES.get(stage, stage)
            text = st.texts.get(key)
            if text is None and key == "optimized":
                text = st.texts[key] = optimize(st.module_text)
            parts.append(f"; {self.name} ({st.signature}) -- {stage}\n{text}")
        return "\n".join(parts)


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


# ---------------------------------------------------------------- shadow checks

def check_shadow(primal, shadow, name):
    """Raise ValueError unless `shadow` has the shape and strides of array `primal`."""


def check_lanes(primal, tangent, width, name):
    """Raise ValueError unless `tangent` is `width` lanes shaped (and strided) like `primal`."""


@overload(check_shadow, prefer_literal=True)
def _check_shadow(primal, shadow, name):
    pname = getattr(name, "literal_value", "?")
    if not isinstance(shadow, types.Array):
        raise TypingError(f"the shadow of '{pname}' must be an array")
    if primal.dtype != shadow.dtype:
        raise ActivityError(f"the shadow of '{pname}' has dtype {shadow.dtype}, expected "
                            f"{primal.dtype}")
    msg = f"the shadow of '{pname}' must have the shape and strides of '{pname}'"

    def impl(primal, shadow, name):
        if primal.shape != shadow.shape or primal.strides != shadow.strides:
            raise ValueError(msg)
    return impl


def check_disjoint(a, b, name_a, name_b):
    """Raise ValueError if the memory of arrays `a` and `b` overlaps."""


@overload(check_disjoint, prefer_literal=True)
def _check_disjoint(a, b, name_a, name_b):
    na, nb = getattr(name_a, "literal_value", "?"), getattr(name_b, "literal_value", "?")
    msg = (f"arrays '{na}' and '{nb}' overlap in memory; derivatives assume an array the "
           f"function writes does not share memory with its other arrays (pass a copy)")

    def impl(a, b, name_a, name_b):
        alo, ahi = _extent(a)
        blo, bhi = _extent(b)
        if a.size > 0 and b.size > 0 and alo < bhi and blo < ahi:
            raise ValueError(msg)
    return impl


@register_jitable
def _extent(a):
    lo = a.ctypes.data
    hi = lo + a.itemsize
    for k in range(a.ndim):
        span = (a.shape[k] - 1) * a.strides[k]
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi


@overload(check_lanes, prefer_literal=True)
def _check_lanes(primal, tangent, width, name):
    pname = getattr(name, "literal_value", "?")
    msg = (f"the tangent of '{pname}' must have shape (width,) + shape of '{pname}', with "
           f"its strides")
    if isinstance(primal, types.Array):
        if tangent.ndim != primal.ndim + 1:
            raise ActivityError(msg)

        def impl(primal, tangent, width, name):
            if tangent.shape[0] != width or tangent.shape[1:] != primal.shape \
                    or tangent.strides[1:] != primal.strides:
                raise ValueError(msg)
        return impl
    if not (isinstance(tangent, types.Array) and tangent.ndim == 1):
        raise ActivityError(f"the tangent of scalar '{pname}' must be a 1-D array of length width")

    def impl_scalar(primal, tangent, width, name):
        if tangent.shape[0] != width:
            raise ValueError(msg)
    return impl_scalar


__all__ = ["STAGES", "Specializer", "result_type", "check_disjoint", "check_lanes", "check_shadow"]
