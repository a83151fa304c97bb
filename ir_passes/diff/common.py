"""Small pieces both synthesizers share: fast-math flags, scaling by a partial, naming the
memory behind a pointer in diagnostics."""
from __future__ import annotations

from typing import Callable

from ..analysis.activity import ActivityInfo, carries_float
from ..diagnostics import Diagnostics
from ..errors import UnsupportedError
from ..ir.builder import Builder
from ..ir.values import (NULL, Argument, ConstFloat, Constant, Function, Instruction, Value,
                         zero)
from ..known.calls import known_problem
from ..known.memory import pointer_base
from ..known.model import is_local_allocation
from .reverse.tape import TAPE_PREFIX
from .rules import Rule, lookup
from .rules.math import math_rule_name
from .spec import DiffSpec

FAST_MATH_FLAGS = frozenset({"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"})


def fast_math_of(inst: Instruction) -> tuple[str, ...]:
    """The fast-math flags of a primal instruction, to put on its derivative code."""
    return tuple(f for f in inst.flags if f in FAST_MATH_FLAGS)


def scale(b: Builder, partial: Value, v: Value, width: int = 1) -> Value:
    """`partial * v`, folding partials of ±1 (v may be a width-long vector of lanes)."""
    if isinstance(partial, ConstFloat) and partial.value == 1.0:
        return v
    if isinstance(partial, ConstFloat) and partial.value == -1.0:
        return b.fneg(v)
    return b.fmul(b.splat(partial, width) if width > 1 else partial, v)


def zero_guard(b: Builder, term: Value, v: Value, zero_value: Value) -> Value:
    """`term` (a product with tangent or adjoint `v`), or `zero_value` where `v` is zero: the
    strong zero, so that `inf * 0` and `NaN * 0` give 0. A bare `±v` needs no guard."""
    if term is v or (isinstance(term, Instruction) and term.opcode == "fneg"
                     and term.operands[0] is v):
        return term
    return b.select(b.fcmp("oeq", v, zero(v.type)), zero_value, term)


def rule_for(diag: Diagnostics, inst: Instruction) -> Rule:
    """The derivative rule of an instruction or math call, or the error naming what has none."""
    name = inst.opcode if inst.opcode != "call" else math_rule_name(inst.callee_name or "",
                                                                    inst.type)
    rule = lookup(name)
    if rule is None:
        raise diag.unsupported_call(inst) if inst.opcode == "call" else \
            diag.unsupported(f"no derivative rule for instruction '{name}'", inst,
                             "not supported yet")
    return rule


def check_store(diag: Diagnostics, spec: DiffSpec, primal: Function, info: ActivityInfo,
                inst: Instruction) -> None:
    """Refuse a store of an active value into memory that has no shadow (its derivative
    would be lost), except into the return slot of a return value declared const."""
    v, ptr = inst.operands
    if ptr in info.shadowed or v not in info.varied:
        return
    if pointer_base(ptr) is primal.args[spec.retptr]:
        return
    raise diag.unsupported(
        f"active value stored into memory without a shadow ({describe_memory(spec, ptr)})",
        inst, "mark that array 'dup' so its derivative is tracked")


def refuse_known_problem_calls(diag: Diagnostics, primal: Function, info: ActivityInfo) -> None:
    """Refuse, before any code is emitted, active calls nothing can differentiate yet (matrix
    products, np.linalg, containers, uncaptured functions): their message is the most precise
    one, and failing before synthesis is fast."""
    for inst in primal.instructions():
        if inst.opcode == "call" and known_problem(inst.callee_name) is not None and (
                inst in info.varied or
                any(op in info.varied or op in info.shadowed for op in inst.operands)):
            raise diag.unsupported_call(inst)


def check_reinterpretation(diag: Diagnostics, info: ActivityInfo, inst: Instruction) -> None:
    """Refuse reading an active float's bits as an integer (the derivative would vanish),
    unless the bits are only tested (`x < 0` as a sign-bit test in np.nan_to_num, np.signbit):
    a branch on them has no derivative to lose."""
    if inst.opcode == "bitcast" and inst.operands[0] in info.varied and \
            not carries_float(inst.type) and not _only_tested(inst):
        raise diag.unsupported("an active float reinterpreted as integer bits", inst,
                               "use math functions instead of bit manipulation")


#: Integer operations through which tested bits are followed to their comparisons.
_BIT_OPS = ("and", "or", "xor", "shl", "lshr", "ashr", "trunc", "zext", "sext")


def _only_tested(bits: Instruction) -> bool:
    """Whether the integer `bits` reaches nothing but comparisons (through bit operations)."""
    fn = bits.block.function if bits.block is not None else None
    if fn is None:
        return False
    work, seen = [bits], {id(bits)}
    while work:
        v = work.pop()
        for user in fn.instructions():
            if not any(op is v for op in user.operands):
                continue
            if user.opcode in _BIT_OPS and id(user) not in seen:
                seen.add(id(user))
                work.append(user)
            elif user.opcode not in ("icmp", *_BIT_OPS):
                return False
    return True


def check_pointer_to_int(diag: Diagnostics, primal: Function, info: ActivityInfo,
                         inst: Instruction) -> None:
    """An address of shadowed memory may become an integer (Numba compares addresses to
    detect overlapping arrays) only if no integer becomes a pointer again: a pointer rebuilt
    from an integer could address shadowed memory without its shadow being known."""
    if inst.opcode != "ptrtoint" or inst.operands[0] not in info.shadowed:
        return
    rebuilt = next((i for i in primal.instructions() if i.opcode == "inttoptr"), None)
    if rebuilt is not None:
        raise diag.unsupported("an address of shadowed memory turned into an integer, in a "
                               "function that turns integers into pointers", rebuilt)


def unknown_shadow_pointer(diag: Diagnostics, inst: Instruction) -> Exception:
    """The error for a pointer into shadowed memory whose shadow cannot be formed."""
    if inst.opcode == "load":
        return diag.unsupported(
            "pointer loaded from memory that may hold the address of a differentiated array "
            "(an array kept in a struct, tuple or container in memory): which array it "
            "addresses is unknown", inst,
            "not supported yet: keep such arrays in local variables or pass them as arguments")
    if inst.opcode == "call":
        return diag.unsupported(
            f"pointer returned by '{inst.callee_name}', which is handed a differentiated "
            "array (or memory holding one): what it addresses is unknown", inst,
            "not supported yet: index the array directly instead of through this call")
    return diag.unsupported(f"pointer produced by '{inst.opcode}' into shadowed memory", inst)


def is_poison(v: Value) -> bool:
    """An undefined constant (poison or undef): its shadow is one too."""
    return isinstance(v, Constant) and v.text in ("poison", "undef")


def addresses_nothing(ptr: Value) -> bool:
    """A null, undef or poison pointer: it addresses no memory, so its shadow is null."""
    return isinstance(ptr, Constant) and ptr.text in ("null", "undef", "poison")


def stored_pointer_shadow(store: Instruction,
                          shadow: Callable[[Value], Value | None]) -> Value | None:
    """What a shadow holds where `store` puts a pointer: the pointer's shadow, null for a
    pointer that addresses nothing; None for a pointer without a shadow (the caller refuses)."""
    v = store.operands[0]
    s = shadow(v)
    if s is not None:
        return s
    return NULL if addresses_nothing(v) else None


def mixed_memory_error(diag: Diagnostics, spec: DiffSpec, ptr: Value,
                       user: Instruction) -> UnsupportedError:
    """`user` merges pointers into shadowed memory with `ptr`, which has no shadow."""
    memory = describe_memory(spec, ptr)
    if memory == LOCAL_ARRAY:
        hint = ("not supported yet: an array allocated in the function without active values "
                "meets one with active values here (np.where, a conditional assignment); write "
                "the computation as an explicit loop")
    else:
        hint = f"mark every array reaching this instruction dup ({memory})"
    return diag.unsupported("a pointer that may address either shadowed or unshadowed memory",
                            user, hint)


LOCAL_ARRAY = "an array allocated in the function"


def describe_memory(spec: DiffSpec, ptr: Value) -> str:
    """What memory `ptr` addresses, in the user's terms (for error messages)."""
    base = pointer_base(ptr)
    if isinstance(base, Argument):
        p = spec.param_of_arg(base.index)
        if p is not None:
            return f"array '{p.name}' is {p.activity.value}"
    if is_local_allocation(base):
        return LOCAL_ARRAY
    if isinstance(base, Instruction) and base.opcode == "call":
        return f"memory returned by '{base.callee_name}'"
    if _from_tape(ptr):
        return ("the tape of a reverse-mode derivative: forward over reverse is not supported, "
                "differentiate the forward derivative in reverse mode instead")
    return "memory of unknown origin"


def _from_tape(ptr: Value) -> bool:
    """Whether `ptr` derives from a reverse-mode tape (a derivative being differentiated)."""
    seen: set[int] = set()
    work = [ptr]
    while work:
        v = work.pop()
        if id(v) in seen or not isinstance(v, Instruction):
            continue
        seen.add(id(v))
        if v.opcode == "call" and (v.callee_name or "").startswith(TAPE_PREFIX):
            return True
        if v.opcode in ("getelementptr", "phi", "select", "extractvalue"):
            work.extend(v.operands)
    return False
