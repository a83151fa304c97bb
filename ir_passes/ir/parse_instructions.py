"""One instruction line of a function body -> `Instruction` (one reader per opcode)."""
from __future__ import annotations

from ..errors import InvalidIRError
from .lexer import unquote
from .parse_cursor import BINARY, CASTS, CCONV, FMF, INT_FLAGS, Cursor
from .parse_scope import Scope
from .types import VOID, FunctionType, IntType, PointerType, StructType, Type, VectorType
from .values import Block, Constant, GlobalRef, Instruction, Value

__all__ = ["parse_instruction"]


def parse_instruction(text: str, scope: Scope) -> Instruction:
    cur = Cursor(text, scope)
    meta = _strip_metadata(cur)
    result = None
    if cur.peek() is not None and cur.peek().kind == "local" and cur.peek(1) is not None \
            and cur.peek(1).text == "=":  # type: ignore[union-attr]
        result = cur.take().text
        cur.take("=")
    tail = cur.words({"tail", "musttail", "notail"})
    opcode = cur.take().text
    handler = _HANDLERS.get(opcode)
    if handler is None:
        if opcode in BINARY:
            handler = _binary
        elif opcode in CASTS:
            handler = _cast
        else:
            raise InvalidIRError(f"unsupported instruction '{opcode}' in: {text.strip()}")
    inst = handler(cur, opcode)
    inst.metadata = meta
    if tail:
        inst.tail = tail[0]
    if result is not None:
        scope.define(result, inst)
    return inst


def _strip_metadata(cur: Cursor) -> dict[str, str]:
    """Remove trailing `, !kind !N` attachments from the token list."""
    meta: dict[str, str] = {}
    toks = cur.toks
    while len(toks) >= 3 and toks[-1].kind == "meta" and toks[-2].kind == "meta" \
            and toks[-3].text == ",":
        meta[toks[-2].text[1:]] = toks[-1].text
        del toks[-3:]
    return dict(reversed(list(meta.items())))


def _align(cur: Cursor, inst: Instruction) -> Instruction:
    while cur.accept(","):
        if cur.accept("align"):
            inst.align = int(cur.take().text)
        else:
            inst.extra = (inst.extra + ", " + cur.rest()).lstrip(", ")
            break
    return inst


def _binary(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF | INT_FLAGS)
    ty = cur.type()
    a = cur.value(ty)
    cur.take(",")
    b = cur.value(ty)
    return Instruction(op, ty, [a, b], flags=flags)


def _cast(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF | INT_FLAGS)
    v = cur.typed_value()
    cur.take("to")
    return Instruction(op, cur.type(), [v], flags=flags)


def _fneg(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF)
    v = cur.typed_value()
    return Instruction(op, v.type, [v], flags=flags)


def _cmp(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF | {"samesign"})
    pred = cur.take().text
    ty = cur.type()
    a = cur.value(ty)
    cur.take(",")
    b = cur.value(ty)
    rty: Type = IntType(1) if not isinstance(ty, VectorType) else VectorType(ty.count, IntType(1))
    return Instruction(op, rty, [a, b], flags=flags, predicate=pred)


def _phi(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF)
    ty = cur.type()
    vals: list[Value] = []
    blocks: list[Block] = []
    while cur.accept("["):
        vals.append(cur.value(ty))
        cur.take(",")
        assert cur.scope is not None
        blocks.append(cur.scope.block(cur.take().text))
        cur.take("]")
        cur.accept(",")
    return Instruction(op, ty, vals, flags=flags, incoming=blocks)


def _select(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF)
    c = cur.typed_value()
    cur.take(",")
    a = cur.typed_value()
    cur.take(",")
    b = cur.typed_value()
    return Instruction(op, a.type, [c, a, b], flags=flags)


def _ret(cur: Cursor, op: str) -> Instruction:
    if cur.accept("void"):
        return Instruction(op, VOID, [])
    return Instruction(op, VOID, [cur.typed_value()])


def _br(cur: Cursor, op: str) -> Instruction:
    if cur.at("label"):
        return Instruction(op, VOID, [cur.block_ref()])
    c = cur.typed_value()
    cur.take(",")
    t = cur.block_ref()
    cur.take(",")
    f = cur.block_ref()
    return Instruction(op, VOID, [c, t, f])


def _switch(cur: Cursor, op: str) -> Instruction:
    c = cur.typed_value()
    cur.take(",")
    default = cur.block_ref()
    cases: list[tuple[Constant, Block]] = []
    cur.take("[")
    while not cur.accept("]"):
        v = cur.typed_value()
        cur.take(",")
        assert isinstance(v, Constant)
        cases.append((v, cur.block_ref()))
    return Instruction(op, VOID, [c, default], cases=cases)


def _unreachable(cur: Cursor, op: str) -> Instruction:
    return Instruction(op, VOID, [])


def _alloca(cur: Cursor, op: str) -> Instruction:
    ty = cur.type()
    ops: list[Value] = []
    if cur.at(",") and cur.peek(1) is not None and cur.peek(1).text != "align":  # type: ignore[union-attr]
        cur.take(",")
        ops.append(cur.typed_value())
    inst = Instruction(op, PointerType(), ops, source_type=ty)
    return _align(cur, inst)


def _load(cur: Cursor, op: str) -> Instruction:
    if cur.at("atomic"):
        raise cur.error("unsupported atomic load")
    volatile = cur.accept("volatile")
    ty = cur.type()
    cur.take(",")
    p = cur.typed_value()
    return _align(cur, Instruction(op, ty, [p], volatile=volatile))


def _store(cur: Cursor, op: str) -> Instruction:
    if cur.at("atomic"):
        raise cur.error("unsupported atomic store")
    volatile = cur.accept("volatile")
    v = cur.typed_value()
    cur.take(",")
    p = cur.typed_value()
    return _align(cur, Instruction(op, VOID, [v, p], volatile=volatile))


def _gep(cur: Cursor, op: str) -> Instruction:
    flags = cur.words({"inbounds", "nuw", "nusw"})
    src = cur.type()
    ops: list[Value] = []
    while cur.accept(","):
        ops.append(cur.typed_value())
    rty = ops[0].type
    for idx in ops[1:]:
        if isinstance(idx.type, VectorType):
            rty = VectorType(idx.type.count, PointerType())
    return Instruction(op, rty, ops, flags=flags, source_type=src)


def _extractvalue(cur: Cursor, op: str) -> Instruction:
    agg = cur.typed_value()
    idx = _indices(cur)
    ty = agg.type
    assert cur.scope is not None
    for i in idx:
        ty = cur.scope.resolve(ty)
        ty = ty.elements[i] if isinstance(ty, StructType) else ty.element  # type: ignore[attr-defined]
    return Instruction(op, ty, [agg], indices=idx)


def _insertvalue(cur: Cursor, op: str) -> Instruction:
    agg = cur.typed_value()
    cur.take(",")
    v = cur.typed_value()
    return Instruction(op, agg.type, [agg, v], indices=_indices(cur))


def _indices(cur: Cursor) -> tuple[int, ...]:
    out = []
    while cur.at(",") and cur.peek(1) is not None and cur.peek(1).kind == "number":  # type: ignore[union-attr]
        cur.take(",")
        out.append(int(cur.take().text))
    return tuple(out)


def _extractelement(cur: Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    cur.take(",")
    idx = cur.typed_value()
    assert isinstance(v.type, VectorType)
    return Instruction(op, v.type.element, [v, idx])


def _insertelement(cur: Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    cur.take(",")
    e = cur.typed_value()
    cur.take(",")
    idx = cur.typed_value()
    return Instruction(op, v.type, [v, e, idx])


def _shufflevector(cur: Cursor, op: str) -> Instruction:
    a = cur.typed_value()
    cur.take(",")
    b = cur.typed_value()
    cur.take(",")
    mask = cur.typed_value()
    assert isinstance(a.type, VectorType) and isinstance(mask.type, VectorType)
    return Instruction(op, VectorType(mask.type.count, a.type.element), [a, b, mask])


def _freeze(cur: Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    return Instruction(op, v.type, [v])


def _call(cur: Cursor, op: str) -> Instruction:
    flags = cur.words(FMF)
    cconv = cur.words({t.text for t in cur.toks if t.kind == "word" and CCONV.match(t.text)})
    ret_attrs = " ".join(cconv + (cur.attrs_until_value(),)).strip()
    ty = cur.type()
    fn_type = ty if isinstance(ty, FunctionType) else None
    ret = fn_type.ret if fn_type else ty
    callee_tok = cur.peek()
    callee = cur.value(PointerType())
    if callee_tok is not None and callee_tok.kind == "global":
        callee = GlobalRef(unquote(callee_tok.text))
    cur.take("(")
    args: list[Value] = []
    arg_attrs: list[str] = []
    while not cur.accept(")"):
        aty = cur.type()
        arg_attrs.append(cur.attrs_until_value())
        args.append(cur.value(aty))
        cur.accept(",")
    inst = Instruction(op, ret, args, flags=flags, callee=callee, fn_type=fn_type,
                       arg_attrs=arg_attrs, ret_attrs=ret_attrs)
    inst.fn_attrs = cur.rest()
    return inst


def _fence(cur: Cursor, op: str) -> Instruction:
    return Instruction(op, VOID, [], ordering=cur.rest())


def _atomicrmw(cur: Cursor, op: str) -> Instruction:
    flags = cur.words({"volatile"}) + (cur.take().text,)
    p = cur.typed_value()
    cur.take(",")
    v = cur.typed_value()
    inst = Instruction(op, v.type, [p, v], flags=flags, ordering=_ordering(cur))
    return _align(cur, inst)


def _cmpxchg(cur: Cursor, op: str) -> Instruction:
    flags = cur.words({"weak", "volatile"})
    p = cur.typed_value()
    cur.take(",")
    expected = cur.typed_value()
    cur.take(",")
    new = cur.typed_value()
    ty = StructType((new.type, IntType(1)))
    inst = Instruction(op, ty, [p, expected, new], flags=flags, ordering=_ordering(cur))
    return _align(cur, inst)


def _ordering(cur: Cursor) -> str:
    start = cur.peek()
    while not cur.done() and not cur.at(","):
        cur.i += 1
    return cur.text[start.start:cur.toks[cur.i - 1].end] if start is not None else ""


_HANDLERS = {
    "fence": _fence, "atomicrmw": _atomicrmw, "cmpxchg": _cmpxchg,
    "fneg": _fneg, "icmp": _cmp, "fcmp": _cmp, "phi": _phi, "select": _select, "ret": _ret,
    "br": _br, "switch": _switch, "unreachable": _unreachable, "alloca": _alloca,
    "load": _load, "store": _store, "getelementptr": _gep, "extractvalue": _extractvalue,
    "insertvalue": _insertvalue, "extractelement": _extractelement,
    "insertelement": _insertelement, "shufflevector": _shufflevector, "freeze": _freeze,
    "call": _call,
}
