"""The tape: a growable stack of 8-byte slots holding values the reverse pass needs.

Each primal block that needs taped values pushes them as one frame at the end of its forward
execution; the reverse of that block pops the frame at its start. Blocks run backwards in
the reverse pass, so frames come off in exactly the order they went on, whatever the control
flow (loops with unknown trip counts, breaks, early returns).

State lives in three allocas (base, top, end) that LLVM promotes to registers; the stack
grows by `realloc` in an out-of-line function and is released with `free` when the
derivative returns (also on exceptional returns).
"""
from __future__ import annotations

from ...ir.builder import Builder, declare
from ...ir.types import I8, I64, PTR, VOID, FunctionType, StructType, Type
from ...ir.values import Block, Constant, Function, Instruction, Module, Value, const_int

SLOT = 8
TAPE_PREFIX = "enzyme_py.tape."
GROW_FUNCTION = TAPE_PREFIX + "grow"
_STATE = StructType((PTR, PTR, PTR))


class Tape:
    def __init__(self, module: Module, fn: Function, entry: Block, name: str = "tape") -> None:
        self.module = module
        self.fn = fn
        b = Builder(entry)
        self.base = b.alloca(PTR, f"{name}.base")
        self.top = b.alloca(PTR, f"{name}.top")
        self.end = b.alloca(PTR, f"{name}.end")
        for slot in (self.base, self.top, self.end):
            b.store(Constant(PTR, "null"), slot)
        self.used = False

    def push(self, block: Block, values: list[Value]) -> Block:
        """Append a push of `values` at the end of `block` (before its terminator).

        Splits `block`: returns the block that now holds the terminator.
        """
        self.used = True
        term = block.instructions.pop()
        b = Builder(block)
        need = const_int(I64, SLOT * len(values))
        top = b.load(PTR, self.top, "tape.top")
        new_top = b.gep(I8, top, [need])
        full = b.icmp("ugt", new_top, b.load(PTR, self.end))
        grow = self.fn.add_block((block.name or "") + ".tape.grow")
        cont = self.fn.add_block((block.name or "") + ".tape.push")
        b.cbr(full, grow, cont)
        b.position_at_end(grow)
        state = b.call(self._grow_fn(), [b.load(PTR, self.base), top, b.load(PTR, self.end), need],
                       _STATE)
        grown_base = b.extractvalue(state, (0,))
        grown_top = b.extractvalue(state, (1,))
        b.store(grown_base, self.base)
        b.store(b.extractvalue(state, (2,)), self.end)
        b.br(cont)
        b.position_at_end(cont)
        at = b.phi(PTR, "tape.at")
        at.operands = [top, grown_top]
        at.incoming = [block, grow]
        for i, v in enumerate(values):
            b.store(v, b.gep(I8, at, [const_int(I64, SLOT * i)]) if i else at)
        b.store(b.gep(I8, at, [need]), self.top)
        cont.append(term)
        return cont

    def pop(self, b: Builder, values: list[Instruction]) -> None:
        """Emit the pop of one frame at `b`: `values` are pre-made loads, inserted here."""
        top = b.load(PTR, self.top)
        frame = b.gep(I8, top, [const_int(I64, -SLOT * len(values))])
        b.store(frame, self.top)
        for i, load in enumerate(values):
            addr = b.gep(I8, frame, [const_int(I64, SLOT * i)]) if i else frame
            load.operands = [addr]
            b.insert(load)

    def release(self, b: Builder) -> None:
        free = declare(self.module, "free", VOID, [PTR])
        b.call(free, [b.load(PTR, self.base)], VOID)

    def _grow_fn(self) -> Function:
        fn = self.module.functions.get(GROW_FUNCTION)
        if fn is None or fn.is_declaration:
            fn = _build_grow(self.module)
        return fn


def pop_placeholder(t: Type, name: str | None) -> Instruction:
    """A load whose address is filled in by `Tape.pop`."""
    return Instruction("load", t, [], name)


def _build_grow(module: Module) -> Function:
    """{base, top, end} grow(base, top, end, need): realloc to max(2*cap, cap+need, 64 KiB)."""
    fn = Function(GROW_FUNCTION, FunctionType(_STATE, (PTR, PTR, PTR, I64)),
                  ["base", "top", "end", "need"], linkage="internal")
    fn.fn_attrs = "noinline"
    base, top, end, need = fn.args
    b = Builder(fn.add_block("entry"))
    ibase = b.cast("ptrtoint", base, I64)
    used = b.sub(b.cast("ptrtoint", top, I64), ibase)
    cap = b.sub(b.cast("ptrtoint", end, I64), ibase)
    want = _umax(b, _umax(b, b.add(cap, cap), b.add(used, need)), const_int(I64, 65536))
    realloc = declare(module, "realloc", PTR, [PTR, I64])
    new = b.call(realloc, [base, want], PTR)
    state: Value = Constant(_STATE, "poison")
    state = b.insertvalue(state, new, (0,))
    state = b.insertvalue(state, b.gep(I8, new, [used]), (1,))
    state = b.insertvalue(state, b.gep(I8, new, [want]), (2,))
    b.ret(state)
    module.add_function(fn)
    return fn


def _umax(b: Builder, x: Value, y: Value) -> Value:
    return b.select(b.icmp("ugt", x, y), x, y)
