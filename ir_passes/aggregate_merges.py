"""Phis and selects of aggregates split into one per field the function reads.

Numba builds an array's struct in two branches and merges the structs: `np.ascontiguousarray`
returns its argument's view when it is contiguous and a fresh copy otherwise, as
`phi {ptr, ptr, i64, i64, ptr, [2 x i64], [2 x i64]}` of two insertvalue chains read back by
extractvalue. The pass follows arrays through scalar values (a meminfo, a data pointer), not
through aggregates. A merge whose uses are all extractvalues is therefore replaced by one
merge per field read, of the values the incoming chains inserted there (an extractvalue at the
end of the incoming block where no insertvalue gives it); the chains then die. Merges used
otherwise are left as they are (the analyses refuse what they cannot follow).
"""
from __future__ import annotations

from .ir.builder import Builder
from .ir.types import ArrayType, StructType, Type
from .ir.values import Block, Constant, Function, Instruction, Value

_AGGREGATES = (StructType, ArrayType)


def split_aggregate_merges(fn: Function) -> bool:
    """Split the aggregate phis and selects of `fn` read only by extractvalue; whether any."""
    if not any(_is_aggregate_merge(i) for i in fn.instructions()):
        return False                     # the usual case: no users map to build
    changed = False
    while True:
        users = fn.users()
        merge = next((i for i in fn.instructions() if _splittable(i, users)), None)
        if merge is None:
            break
        _split(merge, users)
        changed = True
    if changed:
        _drop_dead_aggregates(fn)
    return changed


def _is_aggregate_merge(inst: Instruction) -> bool:
    return inst.opcode in ("phi", "select") and isinstance(inst.type, _AGGREGATES)


def _splittable(inst: Instruction, users: dict[int, list[Instruction]]) -> bool:
    return _is_aggregate_merge(inst) \
        and all(u.opcode == "extractvalue" for u in users.get(id(inst), ()))


def _split(merge: Instruction, users: dict[int, list[Instruction]]) -> None:
    block = merge.block
    assert block is not None
    b = Builder()
    by_path: dict[tuple[int, ...], Value] = {}
    for path, read in _reads(merge, (), users):
        if path not in by_path:
            by_path[path] = _field_merge(b, merge, path)
        for user in users.get(id(read), []):
            user.replace_uses(read, by_path[path])
    block.instructions.remove(merge)


def _reads(agg: Instruction, path: tuple[int, ...], users: dict[int, list[Instruction]]):
    """(path, extractvalue) for each read of a field of `agg`, through reads of sub-aggregates
    that are only read field by field (a shape read whole, then per dimension)."""
    for read in users.get(id(agg), []):
        sub = path + read.indices
        inner = users.get(id(read), [])
        if isinstance(read.type, _AGGREGATES) and inner \
                and all(u.opcode == "extractvalue" for u in inner):
            yield from _reads(read, sub, users)
        else:
            yield sub, read


def _field_merge(b: Builder, merge: Instruction, path: tuple[int, ...]) -> Value:
    """The merge of field `path`, where `merge` is."""
    block = merge.block
    assert block is not None
    if merge.opcode == "select":
        b.position_before(merge)
        cond, yes, no = merge.operands
        return b.select(cond, _field(b, yes, path), _field(b, no, path))
    new = Instruction("phi", _field_type(merge.type, path), [])
    new.incoming = list(merge.incoming)
    made: dict[int, Value] = {}
    for value, pred in zip(merge.operands, merge.incoming):
        if id(pred) not in made:            # one value per predecessor, as LLVM requires
            b.position_before(_terminator(pred))
            made[id(pred)] = _field(b, value, path)
        new.operands.append(made[id(pred)])
    block.insert(block.instructions.index(merge), new)
    return new


def _terminator(block: Block) -> Instruction:
    term = block.terminator
    assert term is not None
    return term


def _field(b: Builder, agg: Value, path: tuple[int, ...]) -> Value:
    """Field `path` of `agg`: the value an insertvalue chain put there, else an extractvalue
    (at the builder's position)."""
    while isinstance(agg, Instruction) and agg.opcode == "insertvalue":
        where = agg.indices
        if path[:len(where)] == where:
            return _field(b, agg.operands[1], path[len(where):]) if path != where \
                else agg.operands[1]
        if where[:len(path)] == path:       # writes part of the field: rebuild it
            return _rebuilt(b, agg, path)
        agg = agg.operands[0]
    if not path:
        return agg
    if isinstance(agg, Constant) and agg.text in ("undef", "poison"):
        return Constant(_field_type(agg.type, path), agg.text)
    return b.extractvalue(agg, path)


def _rebuilt(b: Builder, agg: Value, path: tuple[int, ...]) -> Value:
    """Field `path` of `agg` (an aggregate itself) put together from its own fields."""
    t = _field_type(agg.type, path)
    count = len(t.elements) if isinstance(t, StructType) else t.count  # type: ignore[attr-defined]
    out: Value = Constant(t, "poison")
    for k in range(count):
        out = b.insertvalue(out, _field(b, agg, path + (k,)), (k,))
    return out


def _field_type(t: Type, path: tuple[int, ...]) -> Type:
    for i in path:
        t = t.elements[i] if isinstance(t, StructType) else t.element  # type: ignore[attr-defined]
    return t


def _drop_dead_aggregates(fn: Function) -> None:
    """Remove insertvalue/extractvalue instructions nothing uses (the split leaves chains)."""
    while True:
        used = {id(op) for inst in fn.instructions() for op in inst.operands}
        dead = [i for i in fn.instructions()
                if i.opcode in ("insertvalue", "extractvalue") and id(i) not in used]
        if not dead:
            return
        for inst in dead:
            inst.block.instructions.remove(inst)  # type: ignore[union-attr]
