"""The IR inspection tool: every stage of differentiating one function, as text.

`inspection(target, activities, ...)` prepares an `Inspection`; `.text(stage)` renders a stage
of the shared pipeline (`ir_passes.pipeline`: raw, canonical, activity, derivative, optimized,
tape; "primal" and "preprocessed" are API.md's names for raw and canonical) under a header
naming the target, its mode and its parameters; `.cfg_dot()` / `.write_cfg(path)` draw the
primal and derivative control-flow graphs. `inspect(...)` is the one-call form. Targets come
from the front ends: a Python function, njit dispatcher, `@autodiff` object or `derive_diff`
result, or a "module:func" / "path/file.py:func" string (`enzyme_py.numba_target`), or a
`.ll` / `.bc` file or IR text with `func` (`enzyme_py.ir_target`).

Nothing is compiled to native code or linked: the derivative is synthesized and verified
only. Errors are the pipeline's own (`ActivityError`, `UnsupportedError` with the Python
`file:line`, `InvalidIRError`) or `InspectionError` for a bad request.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

from ir_passes.api import (STAGES, ActivityInfo, StageError, Stages, Target, cfg_dot,
                           source_summary, stage_name)
from ir_passes.ir.printer import Namer
from ir_passes.ir.values import Function, Module

from .cfg_files import check_cfg_path, render_dot
from .ir_target import ir_target, is_ir_source
from .numba_target import parse_types, python_target
from .sources import InspectionError, load_python_target

__all__ = ["STAGES", "Inspection", "InspectionError", "Target", "check_cfg_path", "inspect",
           "inspection", "load_python_target", "parse_sizes", "parse_types", "render_dot",
           "source_summary"]


# ---------------------------------------------------------------- entry points

def inspect(target, activities=None, mode: str | None = None, *, stage: str = "derivative",
            types=None, func: str | None = None, abi: str = "auto", ret: str | None = None,
            return_primal: bool = False, width: int = 1, canonicalize: bool = True,
            sizes: Mapping[str, int] | None = None, vector_math: bool | None = None,
            checkpoint: bool | None = None) -> str:
    """The IR text of `stage` for differentiating `target`; nothing is compiled or linked.

    target: a Python function, njit dispatcher, `@autodiff` object or `derive_diff` result,
      or "module:func" / "path/file.py:func", specialised for `types` (a Numba type string
      such as "float64[::1], int64" or a tuple of Numba types), with one activity per Python
      parameter as for `derive_diff`; or a .ll/.bc file (or IR text) with `func`, the LLVM
      function, and one activity per LLVM parameter (`abi="numba"` for Numba's
      `i32 @f(ptr retptr, ptr excinfo, ...)`, "c" for plain C functions, "auto" picks).
    stage: "raw" (as given), "canonical" (what the pass differentiates), "activity" (the
      primal annotated with activities per instruction and Python line), "derivative",
      "optimized" (after O3), "tape" (reverse mode: what is taped, spilled or recomputed;
      `sizes` maps loop-size names to numbers for totals) or "all".
    vector_math: as for `derive_diff` (shows in "optimized": calls of libmvec's `_ZGV...`);
      None: the setting of a given `@autodiff` / `derive_diff` object, True for other Python
      targets, False for IR files (the C front end compiles without it).
    checkpoint: as for `derive_diff` (the tape stage lists the checkpointed loops); None:
      the setting of a given `@autodiff` / `derive_diff` object, else False.
    mode, ret, return_primal, width: as for `derive_diff`.
    Errors: `ActivityError`, `UnsupportedError` (naming the construct and Python file:line),
    `InvalidIRError`, or `InspectionError` for a bad request.
    """
    return inspection(target, activities, mode, types=types, func=func, abi=abi, ret=ret,
                      return_primal=return_primal, width=width, canonicalize=canonicalize,
                      sizes=sizes, vector_math=vector_math, checkpoint=checkpoint).text(stage)


def inspection(target, activities=None, mode: str | None = None, *, types=None,
               func: str | None = None, abi: str = "auto", ret: str | None = None,
               return_primal: bool = False, width: int = 1, canonicalize: bool = True,
               sizes: Mapping[str, int] | None = None,
               vector_math: bool | None = None, checkpoint: bool | None = None) -> Inspection:
    """An `Inspection` of `target` (stages are computed on demand and cached).

    `canonicalize=False` (IR files only) differentiates the function as given after inlining
    its callees: for IR already in canonical form, e.g. saved from the "canonical" stage.
    """
    if is_ir_source(target):
        if types is not None:
            raise InspectionError("types/--types describe Python functions; an IR function's "
                                  "types are in its signature")
        if func is None:
            raise InspectionError("an IR file needs the name of the function: func=/--func")
        if activities is None:
            raise InspectionError("give one activity per LLVM parameter (args=/--args)")
        t = ir_target(target, func, activities, mode or "reverse", abi, ret, return_primal,
                       width, canonicalize)
    else:
        if func is not None:
            raise InspectionError("func/--func names a function of an IR file; for Python "
                                  "give MODULE:FUNC")
        t = python_target(target, activities, mode, types, ret, return_primal, width)
    vector_math = _vector_math_of(target) if vector_math is None else vector_math
    checkpoint = _setting_of(target, "checkpoint", False) if checkpoint is None else checkpoint
    return Inspection(t, sizes or {}, vector_math, checkpoint)


def _vector_math_of(target) -> bool:
    """`vector_math` by default: a derivative's own setting; True for other Python targets
    (as `derive_diff` compiles them); False for IR (the C front end compiles without it)."""
    if is_ir_source(target):
        return False
    return _setting_of(target, "vector_math", True)


def _setting_of(target, option: str, default: bool) -> bool:
    """A derivative's (`@autodiff` or `derive_diff` result) own `option`, else `default`."""
    if is_ir_source(target):
        return default
    derivative = getattr(target, "derivative", None) or target    # @autodiff or not
    return getattr(getattr(derivative, "enzyme", None), option, default)


class Inspection:
    """Every stage of one differentiation (`pipeline.Stages`), each with its header."""

    def __init__(self, target: Target, sizes: Mapping[str, int],
                 vector_math: bool = True, checkpoint: bool = False) -> None:
        self.target = target
        self.sizes = dict(sizes)
        self.stages = Stages(target, vector_math, checkpoint)
        self.spec = self.stages.spec        # with the vector math it is linked with

    def text(self, stage: str = "derivative") -> str:
        """The header and text of `stage` ("all": every stage in order)."""
        if stage == "all":
            return "\n".join(self.text(s) for s in STAGES)
        try:
            name = stage_name(stage)
        except StageError as exc:
            raise InspectionError(f"{exc}, all") from None
        body = self.stages.text(name, self.sizes)
        return self.header(name) + body.rstrip("\n") + "\n"

    def header(self, stage: str) -> str:
        spec, fn = self.spec, self.primal
        namer = Namer(fn)
        lines = [f"; enzyme-py inspect {self.target.title} -- {stage}",
                 f"; mode={spec.mode} ret={spec.ret.value}"
                 + (f" width={spec.width}" if spec.width > 1 else "")
                 + (" return_primal" if spec.return_primal else "")
                 + (f" (C ABI through shim @{spec.primal})" if self.target.abi == "c" else "")]
        for p in spec.params:
            args = [namer.ref(fn.args[i]) for i in p.args]
            span = args[0] if len(args) == 1 else f"{args[0]} .. {args[-1]}"
            what = ""
            data = namer.ref(fn.args[p.data_arg]) if p.is_array else ""
            if p.is_array and self.target.abi == "c":
                what = f" (a pointer, passed as a 0-d array: only {data} is used)"
            elif p.is_array:
                what = f" ({p.ndim}-d array, data {data})"
            lines.append(f";   {p.name}: {p.activity.value} -> {span}{what}")
        return "\n".join(lines) + "\n"

    # ---- objects behind the stages
    @property
    def module(self) -> Module:
        return self.stages.module

    @property
    def primal(self) -> Function:
        return self.stages.primal

    @property
    def activity(self) -> ActivityInfo:
        return self.stages.activity

    @property
    def tape(self):
        return self.stages.tape

    @property
    def derivative(self) -> Function:
        return self.stages.derivative

    # ---- control-flow graphs
    def cfg_dot(self) -> str:
        """DOT text: primal and derivative CFGs side by side, active code highlighted."""
        return cfg_dot(self.primal, self.activity, self.derivative, module=self.module,
                       title=f"{self.target.title} ({self.spec.mode} mode)")

    def write_cfg(self, path: str | os.PathLike) -> None:
        """Write the CFGs to `path`: .dot as text, .svg / .png rendered by Graphviz `dot`."""
        render_dot(self.cfg_dot(), path)


def parse_sizes(items: Sequence[str]) -> dict[str, int]:
    """`["n=1000", "m=3,k=2"]` -> {"n": 1000, "m": 3, "k": 2}."""
    out: dict[str, int] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, val = part.partition("=")
            try:
                out[key.strip()] = int(val)
            except ValueError:
                sep = ""
            if not sep or not key.strip():
                raise InspectionError(f"--sizes {part!r}: expected NAME=INTEGER, e.g. n=1000")
    return out
