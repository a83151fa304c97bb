"""One pipeline from a front end's `Target` to every stage of its derivative.

A front end turns what the user names into a `Target`: the Numba front end
(`enzyme_py.numba_target`) from a capture, the IR front end (`enzyme_py.ir_target`, also
behind the C front end) from a `.ll` / `.bc` module through its shim. Nothing here knows
Numba: a front end's own facts ride along in `Target.facts`. `Stages(target)` then
computes each stage once, when first asked for; `derive_diff` (`Specializer`), the inspection
tool (`enzyme_py.inspect`, `enzyme-py inspect`), `@autodiff(...).inspect` and `enzyme_py.c`
all read the same object, so a stage shows exactly what is compiled.

Stages (`STAGES`; API.md's names are aliases: "primal" is "raw", "preprocessed" is
"canonical"):

  raw         the module as the front end got it (Numba's lowering, or the .ll/.bc file)
  canonical   the canonical module the pass differentiates (callees inlined, aggregate
              merges split by `aggregate_merges`)
  activity    the primal annotated per instruction, then per Python source line
  derivative  the synthesized derivative function (as linked, a reverse derivative's loops
              are then rescheduled: `reverse_loops`)
  optimized   the derivative's module after `ir_passes.canonicalize.optimize` (O3)
              (with `vector_math`, calls to libm functions marked for libmvec as linked)
  tape        reverse mode: per value, taped, spilled or recomputed instead
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from .aggregate_merges import split_aggregate_merges
from .analysis.activity import ActivityInfo, analyze_activity, print_activity
from .canonicalize import optimize
from .checkpoint_loops import checkpoint_loops, checkpointed_loops
from .diagnostics import Diagnostics
from .diff.callees import not_inlined_callees
from .diff.driver import differentiate
from .diff.reverse.callees import RECOMPUTED
from .diff.reverse.tape_report import TapeReport, print_tape, tape_report, taped_bytes
from .diff.seeds import activity_seeds, known_element_types
from .diff.spec import DiffSpec
from .errors import CheckpointWarning, EnzymePyError, UnsupportedError
from .invariant_loads import hoist_invariant_loads
from .stored_values import forward_stored_values
from .reverse_loops import rescheduled
from .ir.parser import parse_module
from .ir.printer import print_function, print_module
from .ir.values import Function, Module
from .source_lines import source_summary
from .vector_math import annotate, libmvec_variants

__all__ = ["ALIASES", "STAGES", "StageError", "Stages", "Target", "derivative_symbol",
           "stage_name"]

STAGES = ("raw", "canonical", "activity", "derivative", "optimized", "tape")
ALIASES = {"primal": "raw", "preprocessed": "canonical"}


class StageError(EnzymePyError, ValueError):
    """A stage name that is neither in `STAGES` nor in `ALIASES`."""


def stage_name(stage: str) -> str:
    """The stage `stage` names (an alias resolved); `StageError` for an unknown one."""
    name = ALIASES.get(stage, stage)
    if name not in STAGES:
        raise StageError(f"unknown stage {stage!r}; expected one of "
                         f"{', '.join(STAGES + tuple(ALIASES))}")
    return name


def derivative_symbol(mode: str, name: str) -> str:
    """The derivative's symbol for `name`: `fwddiffe_<name>` forward, `diffe_<name>` reverse."""
    return ("fwddiffe_" if mode == "forward" else "diffe_") + name


@dataclass(frozen=True)
class Target:
    """One function to differentiate, whatever the front end: its IR and its DiffSpec."""
    title: str                 # "f (float64, int64)" / "@f in kernel.ll"
    raw_text: str | Callable[[], str]   # or how to make it (only `inspect` shows it)
    canonical_text: str
    spec: DiffSpec
    abi: str                   # "numba" | "c" (a C function behind its Numba-ABI shim)
    facts: Any = None          # the front end's own record (Numba: `NumbaFacts`)


class Stages:
    """Every stage of one differentiation; each is computed once, when first asked for.
    `vector_math`: the linked module calls glibc's libmvec where LLVM vectorises a loop
    holding math calls (`vector_math.annotate`; a no-op on hosts without libmvec).
    `checkpoint` (reverse mode, not split): loops worth it are checkpointed
    (`checkpoint_loops`). Split halves are not: a checkpointed iteration reads its inputs
    again in the reverse half, and the caller may change them between the halves."""

    def __init__(self, target: Target, vector_math: bool = False,
                 checkpoint: bool = False) -> None:
        self.target = target
        self.checkpoint = checkpoint and target.spec.mode == "reverse" and \
            target.spec.split is None
        self.spec = replace(target.spec, vector_math=frozenset(libmvec_variants())) \
            if vector_math else target.spec
        self.vector_math = vector_math
        self._checkpointed: tuple[Module, Function, str]    # `synthesized`, if checkpointed
        self._warned = False                    # the `CheckpointWarning` given (`checkpointed`)

    def text(self, stage: str, sizes: Mapping[str, int] | None = None) -> str:
        """The text of `stage` (aliases allowed); `sizes` give the tape's totals."""
        name = stage_name(stage)
        if name == "raw":
            raw = self.target.raw_text
            return raw() if callable(raw) else raw
        if name == "canonical":
            module = self.module                  # parsed first: it sets `_rewritten`
            return print_module(module) if self._rewritten else self.target.canonical_text
        if name == "activity":
            return self.activity_text()
        if name == "derivative":
            return print_function(self.derivative)
        if name == "optimized":
            return self.optimized
        return self.tape_text(sizes or {})

    @functools.cached_property
    def module(self) -> Module:
        """The canonical module, parsed (the primal is `self.primal`)."""
        module, self._rewritten = _canonical_module(self.target.canonical_text,
                                                    self.spec, self.checkpointed)
        return module

    @functools.cached_property
    def checkpointed(self) -> tuple[int, ...]:
        """The primal's loops checkpointed (`checkpointed_loops`: their headers' indices);
        none when the derivative cannot be synthesized with them (e.g. a body handed the
        address of an active array): those loops keep today's tape. A `CheckpointWarning`
        names the loops taping per iteration that keep their tape, and why (once)."""
        if not self.checkpoint:
            return ()
        text = self.target.canonical_text
        plain = _canonical_module(text)[0]                  # a scratch copy
        choice = checkpointed_loops(plain, self.spec)
        chosen, refused = choice.chosen, list(choice.refused)
        if chosen:
            module, _ = _canonical_module(text, self.spec, chosen)
            try:
                self._checkpointed = (module, *differentiate(module, self.spec,
                                                             self.target.title))
            except UnsupportedError as e:
                refused += [(k, f"its checkpointed reverse cannot be synthesized ({e.what})")
                            for k in chosen]
                chosen = ()
        if refused and not self._warned:
            self._warned = True
            self._warn(plain, sorted(refused))
        return chosen

    def _warn(self, module: Module, refused: list[tuple[int, str]]) -> None:
        """The `CheckpointWarning` for the loops `refused` (header index, reason) of the
        primal in `module`, shown at the first located one's Python line."""
        where = Diagnostics(module, module.functions[self.spec.primal])
        at = [where.loop_source(where.fn.blocks[k]) for k, _ in refused]
        text = (f"checkpoint=True: loops of {self.target.title} keep a tape growing with "
                "their trip count: " + "; ".join(
                    f"the loop at {a or 'block %' + where.fn.blocks[k].name}: {why}"
                    for a, (k, why) in zip(at, refused)))
        file, _, line = next((a for a in at if a), "").rpartition(":")
        if line.isdigit():
            warnings.warn_explicit(text, CheckpointWarning, file, int(line))
        else:                               # no loop located (e.g. a derivative's own loops)
            warnings.warn(text, CheckpointWarning, stacklevel=2)

    @property
    def primal(self) -> Function:
        return self.module.functions[self.spec.primal]

    @functools.cached_property
    def activity(self) -> ActivityInfo:
        return analyze_activity(self.primal, *activity_seeds(self.primal, self.spec),
                                not_inlined_callees(self.module),
                                known_element_types(self.primal, self.spec),
                                self.module.named_types)

    def activity_text(self) -> str:
        return (print_activity(self.primal, self.activity).rstrip("\n") + "\n"
                + source_summary(self.module, self.primal, self.activity))

    @functools.cached_property
    def synthesized(self) -> tuple[Module, Function, str]:
        """(the module holding the derivative, without the primal; the derivative; the
        module's verified text)."""
        if self.checkpointed:                       # synthesized there
            return self._checkpointed
        module, _ = _canonical_module(self.target.canonical_text)
        fn, text = differentiate(module, self.spec, self.target.title)
        return module, fn, text

    @property
    def derivative(self) -> Function:
        return self.synthesized[1]

    @functools.cached_property
    def module_text(self) -> str:
        """The derivative's verified module, as it is linked."""
        text = self.synthesized[2]
        if self.spec.mode == "reverse":
            text = rescheduled(text, self.synthesized[0], self.derivative)
        return annotate(text) if self.vector_math else text

    def drop_ir(self) -> None:
        """Free the IR objects computed so far (large cyclic graphs, which only the garbage
        collector frees); a stage asked for later computes them again, identically."""
        for name in ("module", "activity", "checkpointed", "_checkpointed", "synthesized",
                     "tape"):
            self.__dict__.pop(name, None)

    @functools.cached_property
    def optimized(self) -> str:
        return optimize(self.module_text)

    @functools.cached_property
    def tape(self) -> TapeReport:
        return tape_report(self.module, self.spec)

    def _loop_at(self, header: str) -> str:
        """`header` (a loop header block of the primal) with the Python `file:line` of its
        `for` test (`Diagnostics.loop_source`)."""
        primal = self.module.functions[self.spec.primal]
        block = next((b for b in primal.blocks if b.name == header), None)
        source = block and Diagnostics(self.module, primal).loop_source(block)
        return f"{header} ({source})" if source else header

    def tape_text(self, sizes: Mapping[str, int]) -> str:
        if self.spec.mode != "reverse":
            return "; forward mode keeps no tape: tangents are computed beside the primal\n"
        report = self.tape
        text = print_tape(report, sizes)
        bodies = [f.name.rsplit(".body.", 1)[1] for f in self.module.functions.values()
                  if RECOMPUTED in f.fn_attrs and f.name and ".body." in f.name]
        if bodies:
            text += ("; checkpointed loops (each body outlined; the reverse of an iteration "
                     "recomputes it, its tape living during that reverse only): "
                     + ", ".join(map(self._loop_at, bodies)) + "\n")
        pushed = taped_bytes(self.derivative)     # read back from the real derivative
        if pushed != report.bytes_by_block():
            text += (f"; warning: the synthesized derivative pushes {pushed} tape byte(s) per "
                     f"block execution, its observer reported {report.bytes_by_block()}: "
                     "the reverse synthesizer does not report every push (please report)\n")
        return text


def _canonical_module(text: str, spec: DiffSpec | None = None,
                      checkpointed: tuple[int, ...] = ()) -> tuple[Module, bool]:
    """The front end's canonical module parsed, with its aggregate merges split, its
    loop-invariant loads hoisted and reads of filled temporaries forwarded, and the primal's
    loops `checkpointed` outlined (`checkpoint_loops`); whether anything changed."""
    module = parse_module(text)
    changed = False
    for fn in module.functions.values():
        if not fn.is_declaration:
            changed |= split_aggregate_merges(fn)
            changed |= hoist_invariant_loads(fn)
            changed |= forward_stored_values(fn)
    if checkpointed:
        assert spec is not None
        changed |= bool(checkpoint_loops(module, module.functions[spec.primal], checkpointed))
    return module, changed
