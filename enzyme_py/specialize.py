"""One derivative specialised for concrete argument types: capture, differentiate, link.

`Specializer.build` is the typing-time callback of the derivative's intrinsic: it captures
the primal for the primal's argument types (`numba_target`: the `Target` with its
`DiffSpec`), and synthesizes and verifies the derivative through the shared pipeline
(`pipeline.Stages`), kept per signature for `inspect`.
`wrapper_source` writes the small Python wrapper Numba compiles around the intrinsic call.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from numba import types
from numba.core.errors import NumbaError

from ir_passes.api import (ARRAY_DATA, Activity, SplitSpec, Stages, derivative_symbol,
                           release_symbol, stage_name, written_bases)
from ir_passes.errors import ArgumentError
from ir_passes.ir.parser import parse_module

from .activities import ActivitySpec, check_unchanged, return_activity
from .call_checks import check_lines
from .collector import paused
from .numba_bridge.capture import capture
from .numba_bridge.custom_calls import rule_libraries
from .numba_bridge.link import Built, call_if_compiled, compile_library, unique_symbol
from .numba_target import numba_target
from .omitted import Filled, Slots, fill, given_prefix, is_omitted, parameter_defaults
from .returns import check_differentiates_something, d_ret_arguments, takes_d_ret
from .tape import STATE, TapeType, made_checks, made_expression

_split_ids = itertools.count(1)


@dataclass(frozen=True)
class SplitBuilt:
    """The two halves of a split derivative, compiled into one library; `ident` marks the
    tapes of this specialisation."""
    forward: Built
    reverse: Built
    ident: int


class Specializer:
    def __init__(self, primal, name: str, spec: ActivitySpec,
                 vector_math: bool = True, checkpoint: bool = False) -> None:
        self.primal = primal
        self.name = name
        self.spec = spec
        self.vector_math = vector_math
        self.checkpoint = checkpoint
        self.stages: dict[tuple, Stages] = {}
        self._derived: dict[tuple, Built | Exception] = {}

    # ------------------------------------------------------------ wrapper
    def wrapper_params(self) -> list[str]:
        """The wrapper's parameters: generated identifiers, never the user's names."""
        return [f"a{i}" for i in range(len(self.argument_labels()))]

    def argument_labels(self) -> list[str]:
        """How messages name the derivative's arguments: `p`, then `d_p` (`t_p` forward)."""
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

    def slots(self) -> Slots:
        """The derivative's arguments as `omitted.fill` sees them: the parameter each belongs
        to, the parameters with defaults, and those that must be passed (all but "const")."""
        owners = [i for i, act in enumerate(self.spec.activities)
                  for _ in range(2 if act.has_shadow else 1)]
        must_pass = {i: (f"marked {act.value!r}", "mark it 'const' to use its default")
                     for i, act in enumerate(self.spec.activities) if act is not Activity.CONST}
        return Slots(tuple(owners), tuple(self.argument_labels()), self.spec.params,
                     parameter_defaults(self.primal.py_func), must_pass)

    def _arranged(self, given: list, rest_of_call: list[str]) -> tuple[Filled, str | None]:
        """The complete call from the arguments `given` ((name, type), in order, followed by
        the extras `rest_of_call` names), and the name `d_ret` is bound to (reverse mode).
        With `d_ret` not given by name, the last argument given is `d_ret` when the function
        takes one and the arguments before it make a call (`f(k, r, v, tol=1e-8)` returning
        an array: `df(k, r, v, d_ret)`); else every argument given is a parameter."""
        slots, what, d_ret = self.slots(), self.name, self.d_ret_param()
        if d_ret is None or d_ret in rest_of_call:
            return fill(slots, given, rest_of_call, what), d_ret
        try:
            with_d_ret = fill(slots, given, [d_ret, *rest_of_call], what)
            takes = self._takes_d_ret(with_d_ret.types)
        except (ArgumentError, NumbaError):
            takes = False
        return (with_d_ret if takes else fill(slots, given, rest_of_call, what)), d_ret

    def _takes_d_ret(self, argtypes: tuple) -> bool:
        restype = capture(self.primal, _writable(self._primal_types(argtypes)),
                          located=False).restype
        return takes_d_ret(self.spec, restype)

    def wrapper_source(self, argtypes: tuple) -> str:
        """`impl` for these wrapper argument types: argument checks, then the derivative call,
        whose exception (if any) leaves `impl` only once its arrays are released."""
        params = self.wrapper_params()
        head = params + ([self.d_ret_param()] if self.spec.mode == "reverse" else [])
        extras = [(head[-1], argtypes[-1])] if len(head) > len(params) and \
            len(argtypes) == len(head) and not is_omitted(argtypes[-1]) else []
        filled, d_ret = self._arranged(given_prefix(argtypes, params, self.name) + extras,
                                       [name for name, _ in extras])
        argtypes = filled.types
        primal_types = self._primal_types(argtypes)
        seeds = self._d_ret_arguments(primal_types, d_ret, dict(filled.extras).get(d_ret))
        lines = [f"def impl({', '.join(head)}):", *filled.lines]
        lines += check_lines(self.spec.mode, self.spec.width,
                             self._checked_params(params, argtypes),
                             self._written_arrays(primal_types),
                             tuple(e for e, is_array in seeds if is_array))
        self.derive(primal_types)      # refuse what cannot be differentiated before compiling
        call_args = ", ".join(params + [e for e, _ in seeds])
        k = self.spec.width
        if k > 1 and self._ret_differentiated(primal_types):
            lines.append(f"    tangent = np.empty({k}, np.float64)")
            lines.append(f"    r = __call({call_args}, tangent)")
            keep = self.spec.ret is not Activity.DUPNONEED
            lines += ["    __raise_failed(r, tangent)",
                      "    return (r[3], tangent)" if keep else "    return tangent"]
        else:
            lines += [f"    r = __call({call_args})", "    __raise_failed(r)", "    return r[3]"]
        return "\n".join(lines) + "\n"

    def _checked_params(self, params: list[str], argtypes: tuple) -> list[tuple]:
        """Per primal parameter: (name, identifier, type, shadow identifier, shadow type)."""
        out, pos = [], 0
        for name, act in zip(self.spec.params, self.spec.activities):
            entry = [name, params[pos], types.unliteral(argtypes[pos]), None, None]
            pos += 1
            if act.has_shadow:
                entry[3:] = params[pos], argtypes[pos]
                pos += 1
            out.append(tuple(entry))
        return out

    def _written_arrays(self, primal_types: tuple) -> set[int]:
        """Indices of the array parameters the function may write (all when unknown)."""
        arrays = {i for i, t in enumerate(primal_types) if isinstance(t, types.Array)}
        if not arrays:
            return set()
        cap = capture(self.primal, _writable(primal_types), located=False)
        fn = parse_module(cap.module_text).functions[cap.func_name]
        bases = written_bases(fn)
        if bases is None:
            return arrays
        return {i for i in arrays if fn.args[cap.params[i].llvm_args[ARRAY_DATA]] in bases}

    def _d_ret_arguments(self, primal_types: tuple, d_ret: str | None,
                         dret_type) -> list[tuple[str, bool]]:
        if d_ret is None:
            return []
        restype = capture(self.primal, _writable(primal_types), located=False).restype
        return d_ret_arguments(self.spec, restype, dret_type, d_ret, self.primal.py_func.__name__)

    def _ret_differentiated(self, primal_types: tuple) -> bool:
        restype = capture(self.primal, primal_types, located=False).restype
        return return_activity(self.spec, restype).is_differentiated

    # ------------------------------------------------------------ derivative
    def build(self, argtypes: tuple) -> Built:
        return self.derive(self._primal_types(argtypes))

    def build_forward_half(self, argtypes: tuple) -> Built:
        return self.derive(self._primal_types(argtypes)).forward

    def build_reverse_half(self, argtypes: tuple) -> Built:
        return self.derive(self._primal_types(argtypes)).reverse

    def derive(self, primal_types: tuple):
        """The derivative for these primal types, derived once (a failure is kept and raised
        again): the wrapper asks first, so an unsupported construct is reported before any
        wrapper code is compiled."""
        entry = self._derived.get(primal_types)
        if entry is None:
            try:
                with paused():                 # also when an @njit caller's compile asks
                    entry = self._derive(primal_types)
            except Exception as exc:
                entry = exc
            self._derived[primal_types] = entry
        if isinstance(entry, Exception):
            raise entry
        return entry

    def _derive(self, primal_types: tuple) -> Built | SplitBuilt:
        if self.spec.split:
            return self._derive_split(primal_types)
        symbol = unique_symbol(derivative_symbol(self.spec.mode, self.name))
        target, text, linked = self._synthesize(primal_types, symbol)
        return Built(text, symbol, target.facts.restype, linked)

    def _derive_split(self, primal_types: tuple) -> SplitBuilt:
        check_unchanged(self.spec, primal_types)
        ident = next(_split_ids)
        names = (unique_symbol(f"augmented_{self.name}"),
                 unique_symbol(derivative_symbol("reverse", self.name)))
        unchanged = frozenset(self.spec.params.index(p) for p in self.spec.unchanged)
        target, text, linked = self._synthesize(primal_types, names[1],
                                                SplitSpec(names[0], names[1], ident,
                                                          unchanged=unchanged))
        library = compile_library(text, self.name, linked)
        value = target.facts.capture.restype
        fwd_type = STATE if value == types.none else types.Tuple((value, STATE))
        return SplitBuilt(Built(text, names[0], fwd_type, linked, library),
                          Built(text, names[1], target.facts.restype, linked, library), ident)

    def _synthesize(self, primal_types: tuple, symbol: str, split: SplitSpec | None = None):
        """The target, the verified derivative module text (kept for `inspect`) and the
        libraries it links against.

        The primal's IR is first taken as Numba compiled it, without source lines (no second
        lowering, `capture`); when that fails, it is captured again with its lines, so the
        error names the Python file:line. Lines change no code, only the `!enzyme.loc` tags."""
        try:
            stages = self._stages(primal_types, symbol, split, located=False)
        except Exception:
            stages = None                      # raised again below, with nothing chained
        if stages is None:
            stages = self._stages(primal_types, symbol, split, located=True)
        self.stages[primal_types] = stages
        target, text = stages.target, stages.module_text
        return target, text, (target.facts.capture.library, *rule_libraries(text))

    def _stages(self, primal_types: tuple, symbol: str, split: SplitSpec | None,
                located: bool) -> Stages:
        """The stages of the derivative, its module synthesized and verified."""
        target = numba_target(self.primal, self.spec, primal_types, symbol, located)
        check_differentiates_something(self.spec, target.facts.capture, target.spec.ret,
                                       self.primal.py_func.__name__)
        if split is not None:
            target = dataclasses.replace(target, spec=dataclasses.replace(target.spec,
                                                                          split=split))
        stages = Stages(target, self.vector_math, self.checkpoint)
        stages.module_text                     # synthesized and verified here, once
        stages.drop_ir()                       # `inspect` computes them again if asked
        return stages

    def forward_half_source(self, argtypes: tuple) -> str:
        """Split mode, `fwd`: the checks of reverse mode, then `(value, tape)`."""
        params = self.wrapper_params()
        filled = fill(self.slots(), given_prefix(argtypes, params, self.name), [], self.name)
        argtypes = filled.types
        primal_types = self._primal_types(argtypes)
        lines = [f"def impl({', '.join(params)}):", *filled.lines]
        lines += check_lines("reverse", 1, self._checked_params(params, argtypes),
                             self._written_arrays(primal_types))
        built = self.derive(primal_types).forward
        made = made_expression(self._checked_params(params, argtypes))
        lines += [f"    r = __call({', '.join(params)})", "    __raise_failed(r)",
                  f"    return None, __make_tape(r[3], {made})" if built.restype == STATE
                  else f"    return r[3][0], __make_tape(r[3][1], {made})"]
        return "\n".join(lines) + "\n"

    def reverse_half_params(self) -> list[str]:
        """`rev`'s named parameters: the arguments every call gives; the others, `d_ret` and
        the tape come in `*rest`."""
        return self.wrapper_params()[:self.slots().required]

    def reverse_half_source(self, argtypes: tuple) -> str:
        """Split mode, `rev(args..., [d_ret,] tape)`: claims the tape, runs the reverse."""
        params, named = self.wrapper_params(), self.reverse_half_params()
        rest = list(argtypes[len(named)].types) if len(argtypes) > len(named) else []
        given = [(p, t) for p, t in zip(named, argtypes)] + \
            [(f"rest[{j}]", t) for j, t in enumerate(rest)]
        if not given or not isinstance(given[-1][1], TapeType):
            raise ArgumentError(f"{self.name} (the reverse half of a split derivative) takes "
                                f"the arguments ({', '.join(self.argument_labels())}), then "
                                "d_ret when the function returns something differentiated, "
                                "then the tape the forward half returned")
        filled, d_ret = self._arranged(given, ["tape"])
        argtypes = filled.types
        primal_types = self._primal_types(argtypes)
        seeds = self._d_ret_arguments(primal_types, d_ret, dict(filled.extras).get(d_ret))
        lines = [f"def impl({', '.join(named)}, *rest):", *filled.lines]
        lines += check_lines("reverse", 1, self._checked_params(params, argtypes),
                             self._written_arrays(primal_types),
                             tuple(e for e, is_array in seeds if is_array))
        split = self.derive(primal_types)
        call_args = ", ".join(params + [e for e, _ in seeds] + ["tape.state"])
        lines += made_checks(self._checked_params(params, argtypes), rest[-1], split.ident)
        lines += [f"    __claim(tape, {split.ident})", f"    r = __call({call_args})",
                  "    __raise_failed(r)", "    return r[3]"]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ memory
    def release(self) -> None:
        """Free what the compiled derivatives keep between calls (API.md "Memory kept between
        calls": the parked tape and shadows of temporaries); later calls allocate again.
        Safe while other threads call the derivative: they then allocate their own."""
        for entry in list(self._derived.values()):
            if isinstance(entry, Built):
                call_if_compiled(release_symbol(entry.symbol))
            elif isinstance(entry, SplitBuilt):
                call_if_compiled(release_symbol(entry.forward.symbol))

    # ------------------------------------------------------------ inspection
    def inspect(self, stage: str = "derivative") -> str:
        """The text of `stage` (`pipeline.STAGES` or API.md's aliases) per signature so far."""
        stage_name(stage)                       # refuse an unknown stage at once
        if not self.stages:
            return "; no specialisation compiled yet: call the derivative first\n"
        parts = []
        for primal_types, st in list(self.stages.items()):
            if not st.target.facts.capture.located:      # the same code, with its lines
                st = self.stages[primal_types] = self._stages(
                    primal_types, st.target.spec.name, st.target.spec.split, located=True)
            signature = ", ".join(str(t) for t in primal_types)
            parts.append(f"; {self.name} ({signature}) -- {stage}\n{st.text(stage)}")
        return "\n".join(parts)


def _writable(primal_types: tuple) -> tuple:
    """The types with arrays writeable: what the function writes and returns does not depend
    on read-only flags, and Numba refuses to compile a write into a read-only array (which
    the call checks report better)."""
    return tuple(t.copy(readonly=False) if isinstance(t, types.Array) else t
                 for t in primal_types)


__all__ = ["Specializer"]
