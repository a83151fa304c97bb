"""Pointers on the tape of a reverse derivative that is itself differentiated.

A reverse derivative tapes the addresses its reverse pass needs and cannot rebuild: the shadow
of a temporary allocated in a loop, a pointer stepping through an array. Captured to be
differentiated (`reverse/tape_captured.py`), that tape is memory the outer pass shadows. As
Enzyme caches shadow pointers beside the values they shadow, the outer pass keeps the shadow
of each taped pointer at the same place in the tape's shadow: the (augmented) forward pass
stores it there beside the primal store, the load reading the pointer back reads its shadow
from there, and the tape's growth copies the shadow buffer with the tape.

Vector forward mode refuses such loads for now. Function-local memory whose address is taped
there gets a shadow (`analysis.activity`); a pointer without one (into an argument without
derivative) taped in a function that reads shadowed pointers back from its tape could leave a
null shadow where one is used: refused.
"""
from __future__ import annotations

from typing import Callable

from ..analysis.activity import ActivityInfo
from ..diagnostics import Diagnostics
from ..ir.types import PTR
from ..ir.values import Function, Instruction, Value
from ..known.memory import is_tape_memory, memory_intrinsic_kind
from .common import stored_pointer_shadow

ShadowLookup = Callable[[Value], "Value | None"]


def is_taped_pointer_load(inst: Instruction) -> bool:
    """A pointer read back from the tape of a derivative being differentiated."""
    return inst.opcode == "load" and inst.type == PTR and is_tape_memory(inst.operands[0])


def is_taped_pointer_store(inst: Instruction) -> bool:
    """A pointer pushed on the tape of a derivative being differentiated."""
    return inst.opcode == "store" and inst.operands[0].type == PTR \
        and is_tape_memory(inst.operands[1])


def is_tape_copy(inst: Instruction) -> bool:
    """The tape's growth: a copy of its used part into a new tape buffer."""
    return inst.opcode == "call" and memory_intrinsic_kind(inst.callee_name or "") == "copy" \
        and is_tape_memory(inst.operands[0])


def reads_taped_shadows(fn: Function, info: ActivityInfo) -> bool:
    """Whether `fn` reads back from its tape a pointer that has a shadow."""
    return any(is_taped_pointer_load(i) and i in info.shadowed for i in fn.instructions())


def taped_shadow(diag: Diagnostics, store: Instruction, shadow: ShadowLookup) -> Value:
    """What goes into the tape's shadow where `store` tapes a pointer: its shadow (the
    shadow owner of an owner), null for a null pointer; refused for a pointer without one."""
    s = stored_pointer_shadow(store, shadow)
    if s is not None:
        return s
    raise diag.unsupported(
        "pointer without a derivative kept on the tape of a reverse-mode derivative that is "
        "itself differentiated, beside pointers with one: the outer pass cannot tell them "
        "apart when they are read back", store,
        "not supported yet: differentiate the forward derivative instead (reverse or forward "
        "over forward, as enzyme_py.hessian and hvp do)")


def vector_mode_error(diag: Diagnostics, load: Instruction, width: int) -> Exception:
    """Vector forward mode over a derivative reading pointers back from its tape."""
    return diag.unsupported(
        "pointer read back from the tape of a reverse-mode derivative that is itself "
        f"differentiated, in vector forward mode (width {width})", load,
        "not supported yet: use width=1 (one direction per call), or reverse over forward")
