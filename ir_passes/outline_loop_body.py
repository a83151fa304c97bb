"""Outline the body of a loop into a function in the primal's calling convention.

Checkpointing a loop `L` (its reverse re-running each iteration instead of reading a tape)
reuses the split derivative of non-inlined callees: the body of `L` becomes a function

    i32 @g(ptr retptr, ptr excinfo, live-ins...)

called once per iteration. The body is everything of `L` but the header's phis and the
latch's branch: the header `H` is cut after its phis (`H -> H.body`), the latch's branch
moves into a new block after the call. Values of the body used after it (live-outs) come
back as follows:
- one float at most, through the return slot (a stack slot of the caller, stored by `g`
  where the body reaches the latch's branch); a sum the loop carries (`s = s + v` feeding
  a header phi) is added after the call, `g` handing on `v`, so `s` is not an argument
  (the reverse would keep it per iteration for `g`'s reverse);
- integers and booleans built by a few integer instructions from live-ins (the counter's
  step `i + 1`, the exit test): recomputed after the call;
anything else is refused. Edges leaving the body elsewhere must go to Numba's raising
blocks (releasing references, storing a constant status record into `excinfo`, returning a
nonzero constant through the function's return block; their phis taking one value from the
body, defined outside it): `g` stores the same record and returns `k + 1` for the k-th such
block, and the caller's `switch` on the status (0 and -2 go on, as after any call Numba did
not inline) enters that block, which raises as before.

`outline_loop_body` returns the new function and the call, or the reason it refused (the
function is then untouched).
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir.clone import clone_instruction
from .ir.types import DOUBLE, I1, I32, PTR, VOID, FunctionType, Type
from .ir.values import (Argument, Block, Constant, Function, GlobalRef, Instruction, Module,
                        Value, const_int)
from .analysis.cfg import Loop

__all__ = ["Outlined", "outline_loop_body", "outline_refusal"]

_RECOMPUTED = {"add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "icmp",
               "select", "zext", "sext", "trunc"}
_MAX_RECOMPUTED = 8
_SCOPED = ("noalias", "alias.scope")     # scopes of the caller's inlined calls: dropped in g


@dataclass(frozen=True)
class Outlined:
    """`function` (None when refused, with `reason`) and the `call` of it in the loop."""
    function: Function | None
    call: Instruction | None
    reason: str = ""


def outline_loop_body(module: Module, fn: Function, loop: Loop) -> Outlined:
    """Outline `loop`'s body of `fn` into a new function of `module` (see module)."""
    plan = _plan(fn, loop)
    if isinstance(plan, str):
        return Outlined(None, None, plan)
    return _rewrite(module, fn, loop, plan)


def outline_refusal(fn: Function, loop: Loop) -> str:
    """Why `outline_loop_body` would refuse `loop` ("" if it would not); `fn` unchanged."""
    plan = _plan(fn, loop)
    return plan if isinstance(plan, str) else ""


@dataclass
class _Plan:
    region: list[Instruction]            # the body's instructions, in block order
    blocks: list[Block]                  # L's blocks but the header (whose non-phis lead)
    live_in: list[Value]
    out_float: Instruction | None
    kept: list[Instruction]              # the sums the loop carries, added after the call
    recomputed: list[Instruction]        # integer live-outs and what they need, in order
    raises: list[tuple[Block, Instruction]]   # raising blocks and their record stores


def _plan(fn: Function, loop: Loop) -> _Plan | str:
    if len(loop.latches) != 1 or loop.latches[0] is loop.header:
        return "the loop has several latches or a single block"
    header, latch = loop.header, loop.latches[0]
    blocks = [b for b in fn.blocks if b in loop.blocks and b is not header]
    region = [i for i in header.instructions if i.opcode != "phi"]
    for b in blocks:
        region += b.instructions[:-1] if b is latch else b.instructions
    kept = _accumulations(fn, loop, region)
    region = [i for i in region if i not in kept]
    inside = {id(i) for i in region}
    raises: dict[Block, Instruction] = {}
    for b in [header] + blocks:
        if b is latch:
            continue
        for succ in b.successors():
            if succ in loop.blocks and succ is not header:
                continue
            store = _raising(fn, succ, loop, inside)
            if succ is header or store is None:
                return f"%{b.name} leaves the body other than by the latch or raising"
            raises[succ] = store
    for inst in region:
        if inst.opcode == "alloca" or any(op is fn.args[0] for op in inst.operands):
            return f"%{inst.name or inst.opcode} uses the stack or the return slot"
    live_in: dict[int, Value] = {}
    for inst in region:
        for op in inst.operands + ([inst.callee] if inst.callee is not None else []):
            if isinstance(op, (Instruction, Argument)) and id(op) not in inside:
                live_in.setdefault(id(op), op)
    for store in raises.values():
        for op in store.operands:
            if isinstance(op, (Instruction, Argument)):
                live_in.setdefault(id(op), op)
    live_in.pop(id(fn.args[1]), None)
    outs = _live_outs(fn, region, inside)
    floats = [v for v in outs if v.type.is_float]
    if len(floats) > 1:
        return f"the body hands on {len(floats)} floats (one at most)"
    recomputed: list[Instruction] = []
    for v in outs:
        if v in floats:
            continue
        if not _recompute(v, inside, recomputed):
            return f"%{v.name} is needed after the body and is not a float"
    order = {id(i): k for k, i in enumerate(region)}
    recomputed.sort(key=lambda i: order[id(i)])
    return _Plan(region, blocks, list(live_in.values()), floats[0] if floats else None,
                 kept, recomputed, list(raises.items()))


def _accumulations(fn: Function, loop: Loop, region: list[Instruction]) -> list[Instruction]:
    """The body's `s + v` (`fadd`) feeding a header phi `s`, used by nothing else of the
    body: kept in the caller, so `g` hands on `v` and needs not the sum (whose value the
    reverse would otherwise keep per iteration)."""
    latch = loop.latches[0]
    ids = {id(i) for i in region}
    out = []
    for phi in loop.header.phis():
        acc = next((v for v, b in zip(phi.operands, phi.incoming) if b is latch), None)
        if not (isinstance(acc, Instruction) and id(acc) in ids and acc.opcode == "fadd"
                and phi in acc.operands and acc.operands[0] is not acc.operands[1]):
            continue
        if any(acc in i.operands for i in region):
            continue
        out.append(acc)
    return out


def _live_outs(fn: Function, region: list[Instruction], inside: set[int]) -> list[Instruction]:
    used: dict[int, Instruction] = {}
    defined = {id(i): i for i in region}
    for inst in fn.instructions():
        if id(inst) in inside:
            continue
        for op in inst.operands:
            if id(op) in defined:
                used.setdefault(id(op), defined[id(op)])
    return list(used.values())


def _recompute(v: Value, inside: set[int], out: list[Instruction]) -> bool:
    if not isinstance(v, Instruction) or id(v) not in inside or v in out:
        return True
    if v.opcode not in _RECOMPUTED or not (v.type.is_int or v.type == I1) \
            or len(out) >= _MAX_RECOMPUTED:
        return False
    out.append(v)
    return all(_recompute(op, inside, out) for op in v.operands)


def _raising(fn: Function, block: Block, loop: Loop, inside: set[int]) -> Instruction | None:
    """The record store of Numba's raising block `block` outside the loop: instructions
    using nothing of the body, then `store ptr record, ptr excinfo` of a constant record
    and `br ret`, whose status phi takes a nonzero constant from it; its phis take one
    value from the body's blocks."""
    if block in loop.blocks or len(block.instructions) < 2:
        return None
    store, br = block.instructions[-2:]
    if store.opcode != "store" or store.operands[1] is not fn.args[1] \
            or not isinstance(store.operands[0], GlobalRef) or br.opcode != "br" \
            or len(br.operands) != 1:
        return None
    ret = br.operands[0]
    phis = list(ret.phis())                    # type: ignore[union-attr]
    term = ret.terminator                      # type: ignore[union-attr]
    if len(phis) != 1 or term is None or term.opcode != "ret" or term.operands != [phis[0]]:
        return None
    status = [v for v, b in zip(phis[0].operands, phis[0].incoming) if b is block]
    if not (len(status) == 1 and isinstance(status[0], Constant)
            and getattr(status[0], "value", 0) != 0):
        return None
    for inst in block.instructions:
        if any(id(op) in inside for op in inst.operands):
            return None
        if inst.opcode == "phi" and len({id(v) for v, b in zip(inst.operands, inst.incoming)
                                         if b in loop.blocks}) > 1:
            return None
    return store


def _rewrite(module: Module, fn: Function, loop: Loop, plan: _Plan) -> Outlined:
    header, latch = loop.header, loop.latches[0]
    slot_type: Type = plan.out_float.type if plan.out_float is not None else DOUBLE
    name = f"{fn.name}.body.{header.name}"
    g = module.add_function(Function(name, FunctionType(I32, [PTR, PTR] + [
        v.type for v in plan.live_in]), ["retptr", "excinfo"] + [
        (v.name or "v") + ".in" for v in plan.live_in], linkage="internal"))
    vmap: dict[int, Value] = {id(v): a for v, a in zip(plan.live_in, g.args[2:])}
    vmap[id(fn.args[1])] = g.args[1]
    bmap: dict[Block, Block] = {header: g.add_block("entry")}
    for b in plan.blocks:
        bmap[b] = g.add_block(b.name)
    for target, _ in plan.raises:
        bmap[target] = g.add_block(f"{target.name}.raise")

    def value(v: Value) -> Value:
        return vmap.get(id(v), v)

    def block(b: Block) -> Block:
        return bmap.get(b, b)

    phis: list[tuple[Instruction, Instruction]] = []
    for src in [header] + plan.blocks:
        dst = bmap[src]
        for inst in src.instructions:
            if inst.opcode == "phi" and src is header or inst in plan.kept:
                continue
            if inst is latch.terminator:
                if plan.out_float is not None:
                    dst.append(Instruction("store", VOID, [plan.out_float, g.args[0]]))
                dst.append(Instruction("ret", VOID, [const_int(I32, 0)]))
                continue
            copy = _copy(inst, value, block)
            dst.append(copy)
            vmap[id(inst)] = copy
            if inst.opcode == "phi":
                phis.append((inst, copy))
    for k, (target, store) in enumerate(plan.raises):
        dst = bmap[target]
        dst.append(_copy(store, value, block))
        dst.append(Instruction("ret", VOID, [const_int(I32, k + 1)]))
    for old, new in phis:
        pairs = [(v, b) for v, b in zip(old.operands, old.incoming) if b in bmap]
        new.operands = [value(v) for v, _ in pairs]
        new.incoming = [bmap[b] for _, b in pairs]
    for inst in g.instructions():              # the out float, stored before it existed
        inst.operands = [value(op) for op in inst.operands]
    call = _rewrite_caller(fn, loop, plan, g, slot_type)
    return Outlined(g, call)


def _rewrite_caller(fn: Function, loop: Loop, plan: _Plan, g: Function,
                    slot_type: Type) -> Instruction:
    header, latch = loop.header, loop.latches[0]
    entry = fn.entry
    slot = Instruction("alloca", PTR, [], f"{header.name}.out", source_type=slot_type)
    record = Instruction("alloca", PTR, [], f"{header.name}.excinfo", source_type=PTR)
    entry.insert(0, record)
    entry.insert(0, slot)
    index = fn.blocks.index(header) + 1
    call_block = Block(f"{header.name}.call", fn)
    tail = Block(f"{latch.name}.after", fn)
    fn.blocks[index:index] = [call_block, tail]
    call = Instruction("call", I32, [slot, record] + plan.live_in, f"{header.name}.status",
                       callee=GlobalRef(g.name or ""))
    call_block.append(call)
    term = latch.terminator
    assert term is not None
    moved: dict[int, Value] = {}
    if plan.out_float is not None:
        moved[id(plan.out_float)] = tail.append(Instruction(
            "load", plan.out_float.type, [slot], f"{plan.out_float.name}.out", align=8))
    for inst in plan.kept + plan.recomputed:
        copy = clone_instruction(inst, lambda v: moved.get(id(v), v), lambda b: b)
        copy.metadata = {}
        moved[id(inst)] = tail.append(copy)
    tail.append(term)
    gone = set(plan.blocks)
    header.instructions = list(header.phis())
    header.append(Instruction("br", VOID, [call_block]))
    fn.blocks = [b for b in fn.blocks if b not in gone]
    if plan.raises:
        _propagate(fn, plan, call, call_block, tail, gone | {header})
    else:
        call_block.append(Instruction("br", VOID, [tail]))
    for b in fn.blocks:
        for inst in b.instructions:
            inst.operands = [moved.get(id(op), op) for op in inst.operands]
            inst.incoming = [tail if blk is latch else blk for blk in inst.incoming]
    return call


def _propagate(fn: Function, plan: _Plan, call: Instruction, call_block: Block,
               tail: Block, gone: set[Block]) -> None:
    """The status check after the call: 0 and -2 go on, `k + 1` enters the k-th raising
    block, whose phis take from the call's block what they took from the body (`gone`)."""
    switch = Instruction("switch", VOID, [call, plan.raises[0][0]])
    switch.cases = [(const_int(I32, -2), tail), (const_int(I32, 0), tail)] + [
        (const_int(I32, k + 1), target) for k, (target, _) in enumerate(plan.raises)]
    call_block.append(switch)
    for target, _ in plan.raises:
        for p in target.phis():
            taken = [v for v, b in zip(p.operands, p.incoming) if b in gone]
            keep = [(v, b) for v, b in zip(p.operands, p.incoming) if b not in gone]
            p.operands = [v for v, _ in keep] + taken[:1]
            p.incoming = [b for _, b in keep] + [call_block]


def _copy(inst: Instruction, value, block) -> Instruction:
    copy = clone_instruction(inst, value, block)
    copy.metadata = {k: v for k, v in copy.metadata.items() if k not in _SCOPED}
    return copy
