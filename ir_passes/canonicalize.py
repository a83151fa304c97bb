"""Bring LLVM IR into the canonical form the differentiation pass expects, and back to fast code.

``canonicalize`` decides the shape of every function the pass sees: LLVM's function
simplification pipeline at O2 (SROA/mem2reg, instcombine, loop rotation, LICM, indvars, ...)
without vectorisation, Numba's ``refprune`` (drops redundant NRT incref/decref pairs), then
``loop_simplify`` + ``lcssa`` LAST, because the pipeline's final simplifycfg removes dedicated
preheaders. Loops come out rotated, with a preheader, a canonical induction variable
``phi [0, preheader], [iv + 1, latch]`` and LCSSA exit phis.

Unrolling: this pipeline holds only LLVM's *full* unroll of loops with a small constant trip
count (partial/runtime unrolling lives in the optimisation pipeline, which is not run). It stays
on, as in Numba's own per-function pass: without it ``x**2`` is Numba's ``int_power`` loop (two
iterations of square-and-multiply, which the reverse pass would have to tape) instead of
``x * x``; loops whose trip count is unknown or large are untouched.

``optimize`` runs the full per-module pipeline with unrolling and loop vectorisation, SLP
off as in Numba's codegen (what the derivative looks like once compiled: strict FP reductions
vectorised in order, as ``enzyme_py.numba_bridge.link.compile_library`` does, see
``ordered_reductions``). ``verify`` parses and runs LLVM's verifier.

All three consume and produce module text and raise ``InvalidIRError`` with LLVM's message;
input is verified before any pass runs, because llvmlite's LLVM aborts the process on some
malformed IR. Depends on llvmlite only (usable before, or without, Numba).
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from .errors import InvalidIRError
from .ordered_reductions import ordered_reductions

__all__ = ["canonicalize", "canonicalize_module", "optimize", "parse", "run_module_passes",
           "verify"]


@functools.cache
def _target_machine() -> llvm.TargetMachine:
    """The host target machine, created once (initialising llvmlite's native target first)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=2)


def _pass_builder(speed: int, *, vectorize: bool) -> llvm.PassBuilder:
    """No SLP vectorisation ever: Numba's codegen, which compiles what runs, has it off
    (`NUMBA_SLP_VECTORIZE` defaults to 0)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=speed)
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = False
    pto.loop_interleaving = vectorize
    return llvm.create_pass_builder(_target_machine(), pto)


def parse(module_text: str) -> llvm.ModuleRef:
    """Parse and verify module text; a module without a data layout gets the host's."""
    try:
        module = llvm.parse_assembly(module_text)
    except RuntimeError as exc:
        raise InvalidIRError(str(exc)) from None
    if not module.data_layout:
        module.data_layout = str(_target_machine().target_data)
    try:
        module.verify()
    except RuntimeError as exc:
        raise InvalidIRError(f"LLVM verifier: {exc}") from None
    return module


def verify(module_text: str, made_by: str | None = None) -> None:
    """Raise ``InvalidIRError`` with LLVM's message unless the text parses and verifies.
    `made_by` names our own step that produced the text: its failure is then reported as
    our bug."""
    try:
        parse(module_text)
    except InvalidIRError as exc:
        if made_by is None:
            raise
        raise InvalidIRError(f"{made_by} produced invalid IR; this is a bug.\n{exc}") from None


def canonicalize_module(module: llvm.ModuleRef) -> None:
    """Canonicalise every defined function of a verified module in place."""
    pb = _pass_builder(2, vectorize=False)
    fpm = pb.getFunctionPassManager()
    fpm.add_refprune_pass()
    fpm.add_loop_simplify_pass()
    fpm.add_lcssa_pass()
    for fn in module.functions:
        if not fn.is_declaration:
            fpm.run(fn, pb)


def run_module_passes(module: llvm.ModuleRef, passes: tuple[str, ...]) -> None:
    """Run llvmlite module passes by name (``"always_inliner"``: ``add_always_inliner_pass``)."""
    mpm = llvm.create_new_module_pass_manager()
    for name in passes:
        getattr(mpm, f"add_{name}_pass")()
    mpm.run(module, _pass_builder(0, vectorize=False))


def canonicalize(module_text: str) -> str:
    """Return the canonical form of a module (see the module docstring)."""
    module = parse(module_text)
    canonicalize_module(module)
    return str(module)


def optimize(module_text: str, level: int = 3) -> str:
    """Return the module after the full per-module pipeline at ``level``, vectorised/unrolled."""
    if level not in (0, 1, 2, 3):
        raise ValueError(f"optimisation level must be 0..3, got {level}")
    module = parse(module_text)
    pb = _pass_builder(level, vectorize=level >= 2)
    mpm = pb.getModulePassManager()
    mpm.add_refprune_pass()
    with ordered_reductions():
        mpm.run(module, pb)
    return str(module)
