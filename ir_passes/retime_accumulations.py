"""Constant-offset accumulations of a reverse loop retimed: one address finished per iteration.

A stencil's adjoint scatters each point into its neighbours of one shadow row:

    for iv = init .. 0:  d[iv] += t0;  d[iv + 1] += t1;  d[iv + 2] += t2

a read-modify-write carried from one iteration to the next, which LLVM leaves scalar (its
runtime alias checks compare the three addresses with each other and always fail). Retimed,
iteration `iv` finishes only the address it touches last, `d[iv + 2] = ((d[iv + 2] +
t0[iv + 2]) + t1[iv + 1]) + t2[iv]`, the earlier iterations' terms carried in phis starting
at -0.0 (`x + -0.0 == x` exactly, `x - +0.0` for a subtraction: terms of iterations that
did not run change nothing); `d[1]`
and `d[0]` are finished after the loop. The same additions in the same order (operands kept
in place, flags kept): the result is bit-identical, and the loop has one address stream.

Only where that is certain (`Candidate.of`; anything else leaves the loop as it is):
- a single-block loop counting down to 0 (`loop_addresses.DownLoop`: the reverse pass's);
- accumulations `l = load double p; f = fadd c, l (or fsub l, c); store f, p` (the load
  and the fadd used once), at `p = B + 8 iv + 8 k` for one loop-invariant `B` and constants `k` that are
  consecutive integers;
- every other load and store in the loop is elsewhere on every iteration that matters: it
  is based on another `noalias` argument, or it moves by 8 bytes per iteration too and its
  distance from `B` keeps it out of the window of addresses in flight, statically (constant
  distance) or at run time: then the preheader checks the distances (and `init <= 2^62`
  when Numba's wraparound selects were decided from the counter's range) and runs an
  unchanged copy of the loop when a check fails;
- no call but to a pure intrinsic, no atomic, no volatile access.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir.builder import Builder, add_incoming
from .ir.clone import clone_instruction
from .ir.types import DOUBLE, I1, I64, size_of
from .ir.values import Block, Function, Instruction, Module, Value, const_float, const_int
from .known.memory import PURE_FLOAT_INTRINSICS, PURE_INTEGER_INTRINSICS, noalias_argument
from .loop_addresses import MAX_INIT, Address, DownLoop, PointerStep

__all__ = ["has_accumulation_runs", "retime_accumulations"]

_MAX_SPAN = 4          # offsets k in 0.._MAX_SPAN: carried terms stay few


@dataclass
class _Acc:
    load: Instruction
    add: Instruction
    store: Instruction
    term: Value           # the accumulated term
    term_first: bool      # `fadd term, load` (else `fadd load, term`)
    k: int = 0


@dataclass
class _Check:
    """An access at `addr` of `size` bytes, moving with the group, whose distance from the
    group's first address is checked at run time."""
    addr: Address
    size: int


def has_accumulation_runs(module: Module) -> bool:
    """Whether a block of `module` accumulates (`store (fadd (load p), t), p`) twice into
    memory reached by geps from one pointer (not a stack slot), at addresses read from no
    other memory: a cheap test before the LLVM simplification `reverse_loops` pays first."""
    for fn in module.functions.values():
        for block in fn.blocks:
            roots: set[int] = set()
            for inst in block.instructions:
                if inst.opcode != "store":
                    continue
                value, ptr = inst.operands
                if not (isinstance(value, Instruction) and value.opcode in ("fadd", "fsub")
                        and any(isinstance(op, Instruction) and op.opcode == "load"
                                and op.operands[0] is ptr for op in value.operands)):
                    continue
                root = ptr
                while isinstance(root, Instruction) and root.opcode == "getelementptr":
                    root = root.operands[0]
                if root is ptr or isinstance(root, Instruction) and root.opcode == "alloca":
                    continue                  # an adjoint's stack slot
                if _gathered(ptr):
                    continue                  # BA's dcams[c, 0..10], c read from obs
                if id(root) in roots:
                    return True
                roots.add(id(root))
    return False


def _gathered(ptr: Value) -> bool:
    """Whether address `ptr` depends on a load other than from a stack slot (an index read
    from an array or from the tape: it does not move by a constant step per iteration)."""
    seen, work = set(), [ptr]
    while work:
        v = work.pop()
        if id(v) in seen or not isinstance(v, Instruction):
            continue
        seen.add(id(v))
        if v.opcode == "load":
            source = v.operands[0]
            if not (isinstance(source, Instruction) and source.opcode == "alloca"):
                return True
        else:
            work.extend(v.operands)
    return False


def retime_accumulations(fn: Function) -> bool:
    """Retime the constant-offset accumulations of `fn`'s reverse loops; whether any."""
    changed = False
    for block in list(fn.blocks):
        loop = DownLoop.of(block, fn.predecessors()[block])
        if loop is None or loop.pre.terminator is None or len(loop.pre.successors()) != 1:
            continue
        plan = _plan(loop, _use_counts(fn))
        if plan is not None:
            _retime(fn, loop, *plan)
            changed = True
    return changed


def _use_counts(fn: Function) -> dict[int, int]:
    counts: dict[int, int] = {}
    for inst in fn.instructions():
        for op in inst.operands:
            counts[id(op)] = counts.get(id(op), 0) + 1
    return counts


def _plan(loop: DownLoop, uses: dict[int, int]):
    """(accumulations, group address, run-time checks) when retiming `loop` is exact."""
    accs: list[_Acc] = []
    members: set[int] = set()
    for inst in loop.block.instructions:
        acc = _accumulation(inst, loop, uses)
        if acc is not None:
            accs.append(acc)
            members |= {id(acc.load), id(acc.add), id(acc.store)}
    group = _group(loop, accs)
    if group is None:
        return None
    accs, first = group
    members = {id(i) for a in accs for i in (a.load, a.add, a.store)}
    span = max(a.k for a in accs)
    if not _ordered(loop, accs):
        return None
    checks: list[_Check] = []
    for inst in loop.block.instructions:
        if id(inst) in members:
            continue
        if not _harmless(inst):
            return None
        if inst.opcode not in ("load", "store"):
            continue
        ptr = inst.operands[0 if inst.opcode == "load" else 1]
        ty = inst.type if inst.opcode == "load" else inst.operands[0].type
        addr = loop.address(ptr)
        if addr is None:
            return None
        verdict = _apart(addr, size_of(ty), first, span)
        if verdict is False:
            return None
        if verdict is None:
            checks.append(_Check(addr, size_of(ty)))
    if any(_used_outside(i, loop) for a in accs for i in (a.load, a.add)):
        return None
    return accs, first, span, checks


def _accumulation(store: Instruction, loop: DownLoop, uses: dict[int, int]) -> _Acc | None:
    if store.opcode != "store" or store.volatile:
        return None
    add, ptr = store.operands
    if not (loop.inside(add) and add.opcode in ("fadd", "fsub") and add.type == DOUBLE
            and uses.get(id(add)) == 1):
        return None
    for i, load in enumerate(add.operands[:1] if add.opcode == "fsub" else add.operands):
        if (loop.inside(load) and load.opcode == "load" and load.operands[0] is ptr
                and not load.volatile and uses.get(id(load)) == 1):
            return _Acc(load, add, store, add.operands[1 - i], term_first=i == 1)
    return None


def _group(loop: DownLoop, accs: list[_Acc]):
    """The accumulations at `B + 8 iv + 8 k` for the first `B` with several offsets `k`
    (consecutive from 0, each set on its `_Acc`), and the address of `k = 0`."""
    by_base: dict[int, list[tuple[_Acc, Address]]] = {}
    for acc in accs:
        addr = loop.address(acc.store.operands[1])
        if addr is not None and addr.coef == 8 and isinstance(addr.base, Value):
            by_base.setdefault(id(addr.base), []).append((acc, addr))
    for members in by_base.values():
        low = min(a.offset for _, a in members)
        ks = sorted({a.offset - low for _, a in members})
        if len(ks) < 2 or any(k % 8 for k in ks):
            continue
        ks = [k // 8 for k in ks]
        if ks != list(range(len(ks))) or ks[-1] > _MAX_SPAN:
            continue
        for acc, addr in members:
            acc.k = (addr.offset - low) // 8
        first = Address(members[0][1].base, 8, low)
        return [acc for acc, _ in members], first
    return None


def _ordered(loop: DownLoop, accs: list[_Acc]) -> bool:
    """Each accumulation's load, fadd and store follow each other without an access of the
    group in between."""
    where = {id(inst): n for n, inst in enumerate(loop.block.instructions)}
    spans = sorted((where[id(a.load)], where[id(a.store)]) for a in accs)
    ok = all(where[id(a.load)] < where[id(a.add)] < where[id(a.store)] for a in accs)
    return ok and all(b[0] > a[1] for a, b in zip(spans, spans[1:]))


def _harmless(inst: Instruction) -> bool:
    if inst.opcode in ("load", "store"):
        return not inst.volatile and not inst.ordering
    if inst.opcode == "call":
        name = inst.callee_name or ""
        return name.startswith(PURE_FLOAT_INTRINSICS + PURE_INTEGER_INTRINSICS)
    return inst.opcode not in ("atomicrmw", "cmpxchg", "fence", "invoke", "va_arg")


def _apart(addr: Address, size: int, first: Address, span: int) -> bool | None:
    """Whether an access of `size` bytes at `addr` misses the addresses in flight: True
    (certainly), False (it may hit them, or its distance is unknown), None (check its
    distance at run time)."""
    if _distinct_roots(addr.base, first.base):
        return True
    if addr.coef != first.coef:
        return False
    if addr.base is first.base:
        return _outside(addr.offset - first.offset, size, span)
    return None


def _outside(distance: int, size: int, span: int) -> bool:
    """Address `d + distance` (`size` bytes) misses the in-flight `d + 8 t`, t in 0..span.

    The address `first + 8 m` is touched from iteration `m` (k = 0) down to `m - span`; an
    access moving with it hits it only at a distance in (-size, 8 span + 8)."""
    return distance <= -size or distance >= 8 * span + 8


def _distinct_roots(a: Value | PointerStep, b: Value | PointerStep) -> bool:
    ra, rb = noalias_argument(a), noalias_argument(b)  # type: ignore[arg-type]
    return ra is not None and rb is not None and ra is not rb


def _used_outside(inst: Instruction, loop: DownLoop) -> bool:
    fn = loop.block.function
    return any(inst in other.operands for block in fn.blocks if block is not loop.block
               for other in block.instructions)


# ---------------------------------------------------------------- the rewrite

def _retime(fn: Function, loop: DownLoop, accs: list[_Acc], first: Address, span: int,
            checks: list[_Check]) -> None:
    block = loop.block
    if checks or loop.ranged:
        _keep_original(fn, loop, _guard(loop, first, span, checks))
    # decided selects (from the counter's range: checked above) go: LLVM sees affine addresses
    for select, chosen in loop.decided.values():
        for inst in block.instructions:
            inst.replace_uses(select, chosen)
    carried: dict[int, list[Value]] = {}          # id(acc) -> terms 1.. iterations ago
    b = Builder()
    b.position_after_phis(block)
    for acc in accs:
        chain: list[Value] = []
        for back in range(1, span - acc.k + 1):
            phi = b.phi(DOUBLE, f"{acc.add.name or 'acc'}.carry{back}")
            add_incoming(phi, _no_term(acc), loop.pre)
            chain.append(phi)
        for back, phi in enumerate(chain):
            add_incoming(phi, acc.term if back == 0 else chain[back - 1], block)
        carried[id(acc)] = chain
    last = max(accs, key=lambda a: block.instructions.index(a.store)).store
    top = next(a for a in accs if a.k == span).store.operands[1]
    b.position_before(last)
    _finish(b, top, accs, span, lambda acc: carried[id(acc)][span - acc.k - 1]
            if acc.k < span else acc.term)
    for acc in accs:
        for inst in (acc.store, acc.add, acc.load):
            block.instructions.remove(inst)
    done = fn.add_block(f"{block.name}.retimed.done")
    term = block.terminator
    term.operands = [done if op is loop.exit else op for op in term.operands]
    b.position_at_end(done)
    for m in range(span):
        ptr = next(a for a in accs if a.k == m).store.operands[1]
        _finish(b, ptr, [a for a in accs if a.k <= m], m,
                lambda acc, m=m: acc.term if m == acc.k else carried[id(acc)][m - acc.k - 1])
    b.br(loop.exit)
    for phi in loop.exit.phis():
        phi.incoming = [done if blk is block else blk for blk in phi.incoming]


def _no_term(acc: _Acc) -> Value:
    """The term that changes nothing: `x + -0.0 == x` and `x - +0.0 == x` for every x."""
    return const_float(DOUBLE, -0.0 if acc.add.opcode == "fadd" else 0.0)


def _finish(b: Builder, ptr: Value, accs: list[_Acc], top: int, term_of) -> None:
    """`*ptr` plus its terms in their original order: offset 0's first, program order within
    an offset; `term_of(acc)` is the term that reaches `ptr` (offset `top`)."""
    like = accs[0]
    value: Value = b.load(DOUBLE, ptr, align=like.load.align)
    for k in range(top + 1):
        for acc in accs:
            if acc.k != k:
                continue
            term = term_of(acc)
            ops = [term, value] if acc.term_first else [value, term]
            value = b.binop(acc.add.opcode, *ops, flags=acc.add.flags)
    b.store(value, ptr, align=like.store.align)


def _guard(loop: DownLoop, first: Address, span: int, checks: list[_Check]) -> Value:
    """In the preheader: whether every run-time fact the retiming needs holds."""
    b = Builder()
    b.position_before(loop.pre.terminator)
    ok: Value = const_int(I1, 1)

    def at(addr: Address) -> Value:
        base = addr.base
        if isinstance(base, PointerStep):
            start = b.cast("ptrtoint", base.start, I64)
            moved = b.mul(loop.init, const_int(I64, base.step))
            value = b.add(start, moved)
        else:
            value = b.cast("ptrtoint", base, I64)
        return b.add(value, const_int(I64, addr.offset))

    origin = at(first) if checks else None
    for check in checks:
        distance = b.sub(at(check.addr), origin)
        below = b.icmp("sle", distance, const_int(I64, -check.size))
        above = b.icmp("sge", distance, const_int(I64, 8 * span + 8))
        ok = b.binop("and", ok, b.binop("or", below, above))
    if loop.ranged:
        span_ = b.sub(loop.init, const_int(I64, loop.last))
        ok = b.binop("and", ok, b.icmp("ule", span_, const_int(I64, MAX_INIT)))
    return ok


def _keep_original(fn: Function, loop: DownLoop, ok: Value) -> None:
    """A copy of the loop, unchanged, run from the preheader when `ok` is false."""
    block = loop.block
    copy = fn.add_block(f"{block.name}.unretimed")
    mapping: dict[int, Value] = {}
    remap = lambda v: mapping.get(id(v), v)
    block_of = lambda blk: copy if blk is block else blk
    clones = []
    for inst in block.instructions:
        new = clone_instruction(inst, remap, block_of)
        copy.append(new)
        mapping[id(inst)] = new
        clones.append((inst, new))
    for inst, new in clones:
        if inst.opcode == "phi":
            for value, blk in zip(inst.operands, inst.incoming):
                add_incoming(new, remap(value) if blk is block else value, block_of(blk))
        else:
            new.operands = [block_of(op) if isinstance(op, Block) else remap(op)
                            for op in inst.operands]
    for phi in loop.exit.phis():
        for value, blk in list(zip(phi.operands, phi.incoming)):
            if blk is block:
                add_incoming(phi, remap(value), copy)
    term = loop.pre.terminator
    loop.pre.instructions.remove(term)
    Builder(loop.pre).cbr(ok, block, copy)
