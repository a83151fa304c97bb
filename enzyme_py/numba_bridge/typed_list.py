"""`numba.typed.List` of floats built inside the function, rewritten before differentiation
(`KnownCall.prepare` of `numba_list_append` and `numba_list_setitem`) onto the growable
storage of a reflected list, which the pass shadows (roles HANDLE_VARSIZE, VARSIZE_REALLOC).

Numba keeps a typed list in a C struct of its runtime (`numba_list_new`, `numba_list_append`,
`numba_list_base_ptr`, ...) owned by a meminfo whose destructor frees it. For a list the
function creates and uses only through the calls below, the rewrite gives it one owner of
growable memory instead, laid out as

    [i64 size, i64 allocated | items ...]

and replaces each call by the loads and stores it performs (an append grows the memory by
`NRT_MemInfo_varsize_realloc` when it is full; a delete, as in `pop`, moves the later items
down with `llvm.memmove`; `insert` is appends and writes). The items are then typed floats the pass
follows like any array. Lists it cannot prove it rewrites whole (an argument, a list that
escapes, other operations such as `pop`) stay as they are and are refused when they hold
active values.
"""
from __future__ import annotations

from ir_passes.ir.builder import Builder, add_incoming, declare
from ir_passes.ir.split import split_before
from ir_passes.ir.types import DOUBLE, FLOAT, I1, I32, I64, PTR, VOID, FunctionType
from ir_passes.ir.values import (Block, ConstInt, Function, GlobalRef, Instruction, Module, Value,
                                 const_int)
from ir_passes.known.model import Role, role_of, runtime_call

HEADER = 16
_ITEM_TYPES = {8: DOUBLE, 4: FLOAT}
_DTOR = "enzyme_py_float_list_dtor"
_REWRITTEN = ("numba_list_append", "numba_list_setitem", "numba_list_delitem",
              "numba_list_base_ptr", "numba_list_size_address", "numba_list_set_method_table")


def rewrite_typed_list(module: Module, call: Instruction, _moving) -> None:
    """Rewrite the list `call` (an append or setitem) works on, if it qualifies."""
    if call.block is None or call not in call.block.instructions:
        return      # rewritten with another call of the same list
    fn = call.block.function
    assert fn is not None
    found = _list_of(fn, call.operands[0])
    if found is not None:
        _Rewrite(module, fn, *found).run()


def _users(fn: Function, v: Value) -> list[Instruction]:
    return [i for i in fn.instructions() if v in i.operands or i.callee is v]


def _list_of(fn: Function, lp: Value):
    """(new, loads, owner, owner_store, item type) of the list `lp` if every use is one the
    rewrite knows, else None."""
    if not (isinstance(lp, Instruction) and lp.opcode == "load"):
        return None
    slot = lp.operands[0]
    news = [u for u in _users(fn, slot) if u.callee_name == "numba_list_new"]
    if len(news) != 1 or not isinstance(news[0].operands[1], ConstInt):
        return None
    new = news[0]
    item = _ITEM_TYPES.get(new.operands[1].value)  # type: ignore[attr-defined]
    loads = [u for u in _users(fn, slot) if u.opcode == "load"]
    others = [u for u in _users(fn, slot) if u.opcode not in ("load", "store")
              and u is not new and not (u.callee_name or "").startswith("llvm.lifetime")]
    if item is None or others or any(u.opcode == "store" and u.operands[1] is not slot
                                     for u in _users(fn, slot)):
        return None
    owner_store = None
    for lp_ in loads:
        for u in _users(fn, lp_):
            if u.opcode == "store" and u.operands[0] is lp_ and owner_store is None:
                owner_store = u
            elif u.callee_name not in _REWRITTEN or u.operands[0] is not lp_ \
                    or not _items_are(fn, u, item):
                return None
    owner = _owner(fn, owner_store)
    return None if owner is None else (new, loads, owner, owner_store, item)


def _items_are(fn: Function, call: Instruction, item) -> bool:
    """An append's or setitem's item slot holds floats of type `item` only."""
    if call.callee_name == "numba_list_append":
        slot = call.operands[1]
    elif call.callee_name == "numba_list_setitem":
        slot = call.operands[2]
    else:
        return True
    return all(u.opcode != "store" or u.operands[0].type == item for u in _users(fn, slot))


def _owner(fn: Function, store: Instruction | None) -> Instruction | None:
    """The meminfo Numba made for the list, whose data `store` writes; None unless it is
    only counted, compared, and asked for that data."""
    if store is None:
        return None
    data = store.operands[1]
    if role_of(data) is not Role.HANDLE_DATA:
        return None
    owner = data.operands[0]   # type: ignore[attr-defined]
    if not (isinstance(owner, Instruction) and role_of(owner) is Role.HANDLE_DTOR):
        return None
    if _users(fn, data) != [store] or not _only_counted(fn, owner, data):
        return None
    return owner


def _only_counted(fn: Function, owner: Instruction, data: Value) -> bool:
    """`owner`, also through phis and selects, is only reference counted and compared."""
    seen, work = {id(owner)}, [owner]
    while work:
        for u in _users(fn, work.pop()):
            if u.opcode in ("phi", "select") and id(u) not in seen:
                seen.add(id(u))
                work.append(u)
            elif not (u is data or u.opcode in ("icmp", "phi", "select")
                      or role_of(u) in (Role.INCREF, Role.DECREF)):
                return False
    return True


class _Rewrite:
    def __init__(self, module: Module, fn: Function, new: Instruction, loads: list[Instruction],
                 owner: Instruction, owner_store: Instruction, item) -> None:
        self.module, self.fn, self.item = module, fn, item
        self.new, self.loads, self.owner, self.owner_store = new, loads, owner, owner_store
        self.b = Builder()
        self.data_fn = declare(module, runtime_call(Role.HANDLE_DATA).name, PTR, [PTR])

    def run(self) -> None:
        meminfo = _located(self.fn, self.new, self._allocate)
        for load in self.loads:
            for u in _users(self.fn, load):
                if u is not self.owner_store:
                    _located(self.fn, u, lambda: self._replace(u, meminfo))
            _remove(load, meminfo)
        data = self.owner_store.operands[1]
        _remove(self.owner_store, None)
        _remove(data, None)       # type: ignore[arg-type]
        _remove(self.owner, meminfo)

    def _allocate(self) -> Value:
        b = self.b
        b.position_before(self.new)
        alloc = declare(self.module, runtime_call(Role.HANDLE_VARSIZE).name, PTR, [I64, PTR])
        capacity = self.new.operands[2]
        size = b.add(const_int(I64, HEADER), b.mul(capacity, const_int(I64, _size(self.item))))
        meminfo = b.call(alloc, [size, _dtor(self.module)], PTR)
        data = b.call(self.data_fn, [meminfo], PTR)
        b.store(const_int(I64, 0), data)
        b.store(capacity, b.gep(I64, data, [const_int(I64, 1)]))
        _remove(self.new, const_int(I32, 0))
        return meminfo

    def _replace(self, call: Instruction, meminfo: Value) -> None:
        b = self.b
        b.position_before(call)
        name = call.callee_name
        if name == "numba_list_append":
            self._append(call, meminfo)
            return
        data = b.call(self.data_fn, [meminfo], PTR)
        if name == "numba_list_setitem":
            self._store_item(data, call.operands[1], call.operands[2])
            _remove(call, const_int(I32, 0))
        elif name == "numba_list_delitem":
            self._delete(data, call.operands[1])
            _remove(call, const_int(I32, 0))
        elif name == "numba_list_base_ptr":
            _remove(call, b.gep(I64, data, [const_int(I64, 2)]))
        elif name == "numba_list_size_address":
            for u in _users(self.fn, call):     # inttoptr: the size field's address
                _remove(u, data)
            _remove(call, None)
        else:                                   # the method table: floats need none
            _remove(call, None)

    def _store_item(self, data: Value, index: Value, source: Value) -> None:
        b = self.b
        items = b.gep(I64, data, [const_int(I64, 2)])
        b.store(b.load(self.item, source), b.gep(self.item, items, [index]))

    def _delete(self, data: Value, index: Value) -> None:
        """The items after `index` move down one (llvm.memmove); the size drops by one."""
        b = self.b
        size = b.load(I64, data)
        items = b.gep(I64, data, [const_int(I64, 2)])
        at = b.gep(self.item, items, [index])
        after = b.gep(self.item, items, [b.add(index, const_int(I64, 1))])
        count = b.sub(b.sub(size, index), const_int(I64, 1))
        memmove = declare(self.module, "llvm.memmove.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
        b.call(memmove, [at, after, b.mul(count, const_int(I64, _size(self.item))),
                         const_int(I1, 0)], VOID)
        b.store(b.sub(size, const_int(I64, 1)), data)

    def _append(self, call: Instruction, meminfo: Value) -> None:
        """size == allocated: grow to 2 * allocated + 4 items; then store at `size`."""
        b, block = self.b, call.block
        assert block is not None
        data = b.call(self.data_fn, [meminfo], PTR)
        size = b.load(I64, data)
        capacity = b.load(I64, b.gep(I64, data, [const_int(I64, 1)]))
        full = b.icmp("eq", size, capacity)
        grown = b.add(b.mul(capacity, const_int(I64, 2)), const_int(I64, 4))
        tail = split_before(call, f"{block.name}.list_tail")
        grow = Block(f"{block.name}.list_grow", self.fn)
        self.fn.blocks.insert(self.fn.blocks.index(block) + 1, grow)
        b.position_at_end(block)
        b.cbr(full, grow, tail)
        b.position_at_end(grow)
        realloc = declare(self.module, runtime_call(Role.VARSIZE_REALLOC).name, PTR, [PTR, I64])
        bytes_ = b.add(const_int(I64, HEADER), b.mul(grown, const_int(I64, _size(self.item))))
        b.call(realloc, [meminfo, bytes_], PTR)
        b.br(tail)
        b.position_after_phis(tail)
        new_capacity = b.phi(I64)
        add_incoming(new_capacity, capacity, block)
        add_incoming(new_capacity, grown, grow)
        data = b.call(self.data_fn, [meminfo], PTR)
        self._store_item(data, size, call.operands[1])
        b.store(b.add(size, const_int(I64, 1)), data)
        b.store(new_capacity, b.gep(I64, data, [const_int(I64, 1)]))
        _remove(call, const_int(I32, 0))


def _located(fn: Function, call: Instruction, emit):
    """Run `emit`, giving the instructions it adds the source location of `call`."""
    before = {id(i) for i in fn.instructions()}
    loc = call.metadata.get("enzyme.loc")
    result = emit()
    for inst in fn.instructions():
        if id(inst) not in before and loc is not None:
            inst.metadata.setdefault("enzyme.loc", loc)
    return result


def _size(t) -> int:
    return 8 if t is DOUBLE else 4


def _remove(inst: Instruction, new: Value | None) -> None:
    """Remove `inst`, its uses taking `new` (None: it has none)."""
    block = inst.block
    assert block is not None and block.function is not None
    block.instructions.remove(inst)
    inst.block = None
    if new is not None:
        for other in block.function.instructions():
            other.replace_uses(inst, new)


def _dtor(module: Module) -> GlobalRef:
    """The varsize owner's destructor: floats release nothing."""
    if _DTOR not in module.functions:
        fn = module.add_function(Function(_DTOR, FunctionType(VOID, (PTR, I64, PTR)),
                                          linkage="internal"))
        Builder(fn.add_block("entry")).ret()
    return GlobalRef(_DTOR)
