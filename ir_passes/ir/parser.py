"""LLVM 22 assembly text -> `Module` objects. The only place IR text is read.

Covers the textual IR that LLVM prints for Numba and clang output: every instruction except
exception handling and atomics, which raise `InvalidIRError` naming the opcode. Globals,
attribute groups and metadata nodes are kept verbatim (see `Module`).
"""
from __future__ import annotations

import re

from ..errors import InvalidIRError
from .lexer import Token, bracket_depth, tokenize, unquote
from .types import (LABEL, METADATA, VOID, ArrayType, FloatType, FunctionType, IntType,
                    NamedStructType, PointerType, StructType, TokenType, Type, VectorType)
from .values import (Block, ConstFloat, ConstInt, Constant, Function, GlobalRef, Instruction,
                     Module, Value)

_LABEL_LINE = re.compile(r'^(?:"((?:[^"\\]|\\.)*)"|([-a-zA-Z$._0-9]+)):')
_FLOAT_KINDS = {"half", "bfloat", "float", "double", "x86_fp80", "fp128"}
_FMF = {"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"}
_INT_FLAGS = {"nuw", "nsw", "exact", "disjoint", "nneg", "samesign", "inbounds", "nusw"}
_BINARY = {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and",
           "or", "xor", "fadd", "fsub", "fmul", "fdiv", "frem"}
CASTS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
         "ptrtoint", "inttoptr", "bitcast", "addrspacecast"}
_CONST_WORDS = {"true", "false", "null", "undef", "poison", "zeroinitializer", "none"}
_CONST_EXPR = CASTS | _BINARY | {"getelementptr", "blockaddress", "dso_local_equivalent",
                                 "no_cfi", "splat", "icmp", "fcmp", "select", "extractelement",
                                 "insertelement", "shufflevector", "ptrauth"}
_CCONV = re.compile(r"^(ccc|fastcc|coldcc|tailcc|swiftcc|cc\d+|\w+_cc|\w+cc)$")


class _Forward(Value):
    """A local referenced before its definition; replaced when the function is complete."""
    __slots__ = ()


class _Cursor:
    """Recursive-descent reader over the tokens of one instruction or header."""

    def __init__(self, text: str, scope: _Scope | None) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.scope = scope

    # ---- token access
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.text == text

    def take(self, text: str | None = None) -> Token:
        tok = self.peek()
        if tok is None or (text is not None and tok.text != text):
            raise self.error(f"expected {text!r}")
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def words(self, allowed: set[str]) -> tuple[str, ...]:
        out = []
        while (tok := self.peek()) is not None and tok.text in allowed:
            out.append(tok.text)
            self.i += 1
        return tuple(out)

    def balanced(self) -> str:
        """Consume a bracketed group starting at the current token; return its text."""
        start = self.take()
        depth = 1
        while depth:
            tok = self.take()
            if tok.kind == "punct" and tok.text in "([{<":
                depth += 1
            elif tok.kind == "punct" and tok.text in ")]}>":
                depth -= 1
        return self.text[start.start:self.toks[self.i - 1].end]

    def rest(self) -> str:
        tok = self.peek()
        return "" if tok is None else self.text[tok.start:]

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def error(self, msg: str) -> InvalidIRError:
        return InvalidIRError(f"{msg} in: {self.text.strip()}")

    # ---- types
    def type(self) -> Type:
        tok = self.take()
        t = tok.text
        if t == "void":
            ty: Type = VOID
        elif t in _FLOAT_KINDS:
            ty = FloatType(t)
        elif re.fullmatch(r"i\d+", t):
            ty = IntType(int(t[1:]))
        elif t == "ptr":
            ty = PointerType()
            if self.accept("addrspace"):
                self.take("(")
                ty = PointerType(int(self.take().text))
                self.take(")")
        elif t == "label":
            ty = LABEL
        elif t == "metadata":
            ty = METADATA
        elif t == "token":
            ty = TokenType()
        elif t == "[":
            n = int(self.take().text)
            self.take("x")
            ty = ArrayType(n, self.type())
            self.take("]")
        elif t == "<" and self.at("{"):
            ty = self._struct(packed=True)
            self.take(">")
        elif t == "<":
            scalable = self.accept("vscale")
            if scalable:
                self.take("x")
            n = int(self.take().text)
            self.take("x")
            ty = VectorType(n, self.type(), scalable)
            self.take(">")
        elif t == "{":
            self.i -= 1
            ty = self._struct(packed=False)
        elif tok.kind == "local":
            ty = NamedStructType(t)
        else:
            raise self.error(f"expected a type, got {t!r}")
        while True:
            if self.accept("*"):
                ty = PointerType()
            elif self.at("(") and self._function_type_follows():
                ty = self._fn_params(ty)
            else:
                return ty

    def _struct(self, packed: bool) -> StructType:
        self.take("{")
        elems: list[Type] = []
        while not self.accept("}"):
            elems.append(self.type())
            self.accept(",")
        return StructType(tuple(elems), packed)

    def _function_type_follows(self) -> bool:
        nxt = self.peek(1)
        return nxt is not None and (nxt.text in (")", "...") or _is_type_start(nxt))

    def _fn_params(self, ret: Type) -> FunctionType:
        self.take("(")
        params: list[Type] = []
        vararg = False
        while not self.accept(")"):
            if self.accept("..."):
                vararg = True
                continue
            params.append(self.type())
            self.accept(",")
        return FunctionType(ret, tuple(params), vararg)

    # ---- values
    def value(self, ty: Type) -> Value:
        tok = self.peek()
        if tok is None:
            raise self.error("expected a value")
        if tok.kind == "local":
            self.i += 1
            assert self.scope is not None
            return self.scope.ref(tok.text, ty)
        if tok.kind == "global":
            self.i += 1
            return GlobalRef(unquote(tok.text), ty)
        if tok.kind in ("number", "hexfp"):
            self.i += 1
            if isinstance(ty, FloatType):
                return ConstFloat(ty, _float_value(tok.text, ty), tok.text)
            if isinstance(ty, IntType):
                return ConstInt(ty, int(tok.text, 0))
            return Constant(ty, tok.text)
        if tok.text in ("true", "false"):
            self.i += 1
            return ConstInt(IntType(1), 1 if tok.text == "true" else 0) if ty == IntType(1) \
                else Constant(ty, tok.text)
        if tok.text in _CONST_WORDS:
            self.i += 1
            return Constant(ty, tok.text)
        if tok.text in ("[", "{", "<"):
            return Constant(ty, self.balanced())
        if tok.kind == "string":
            self.i += 1
            return Constant(ty, tok.text)
        if tok.text in _CONST_EXPR:
            start = tok.start
            self.i += 1
            while not self.at("("):
                self.i += 1
            self.balanced()
            return Constant(ty, self.text[start:self.toks[self.i - 1].end])
        if tok.kind == "meta" or tok.text == "!":
            return Constant(METADATA, self._metadata_operand())
        raise self.error(f"unexpected value {tok.text!r}")

    def _metadata_operand(self) -> str:
        tok = self.take()
        if tok.text == "!" or (tok.kind == "meta" and self.at("(")) or self.at("{"):
            if self.at("(") or self.at("{"):
                body = self.balanced()
                return self.text[tok.start:tok.end] + body
        return tok.text

    def typed_value(self) -> Value:
        ty = self.type()
        return self.value(ty)

    def block_ref(self) -> Block:
        self.take("label")
        tok = self.take()
        assert self.scope is not None
        return self.scope.block(tok.text)

    def attrs_until_value(self) -> str:
        """Parameter attributes between a type and its value (`noundef`, `align 8`, `range(...)`)."""
        parts: list[str] = []
        while (tok := self.peek()) is not None and tok.kind == "word" and not _is_type_start(tok) \
                and tok.text not in _CONST_WORDS and not (tok.text in _CONST_EXPR and self._paren_next()):
            self.i += 1
            text = tok.text
            if self.at("("):
                text += self.balanced()
            elif text == "align" or text == "dereferenceable":
                text += " " + self.take().text
            parts.append(text)
        return " ".join(parts)

    def _paren_next(self) -> bool:
        nxt = self.peek(1)
        return nxt is not None and nxt.text == "("


def _is_type_start(tok: Token) -> bool:
    t = tok.text
    return (t in ("void", "ptr", "label", "metadata", "token", "[", "{", "<")
            or t in _FLOAT_KINDS or bool(re.fullmatch(r"i\d+", t)) or tok.kind == "local")


def _float_value(text: str, ty: FloatType) -> float:
    if text.startswith("0x"):
        if text[2] in "KLMHR":
            raise InvalidIRError(f"unsupported float literal {text}")
        import struct
        return struct.unpack("<d", int(text, 16).to_bytes(8, "little"))[0]
    return float(text)


class _Scope:
    """Local names of one function being parsed."""

    def __init__(self, fn: Function, named_types: dict[str, Type]) -> None:
        self.fn = fn
        self.named_types = named_types
        self.values: dict[str, Value] = {}
        self.forwards: dict[str, _Forward] = {}
        self.blocks: dict[str, Block] = {}
        unnamed = 0
        for arg in fn.args:
            if arg.name is not None:
                self.values["%" + arg.name] = arg
            else:                      # `%0`, `%1`, ...: numbered in order
                self.values[f"%{unnamed}"] = arg
                unnamed += 1

    def resolve(self, ty: Type) -> Type:
        """The body of a named struct type (`%pair`), other types unchanged."""
        while isinstance(ty, NamedStructType) and ty.name in self.named_types:
            ty = self.named_types[ty.name]
        return ty

    def ref(self, token: str, ty: Type) -> Value:
        key = _canonical_local(token)
        if key in self.values:
            return self.values[key]
        fwd = self.forwards.get(key)
        if fwd is None:
            fwd = self.forwards[key] = _Forward(ty, key)
        return fwd

    def define(self, token: str, value: Value) -> None:
        key = _canonical_local(token)
        self.values[key] = value
        value.name = _local_name(token)

    def block(self, token: str) -> Block:
        key = _canonical_local(token)
        blk = self.blocks.get(key)
        if blk is None:
            blk = self.blocks[key] = Block(_local_name(token), self.fn)
        return blk

    def resolve_forwards(self) -> None:
        missing = [k for k in self.forwards if k not in self.values]
        if missing:
            raise InvalidIRError(f"undefined values {missing} in @{self.fn.name}")
        fix = {id(f): self.values[k] for k, f in self.forwards.items()}
        for inst in self.fn.instructions():
            if any(isinstance(op, _Forward) for op in inst.operands):
                inst.operands = [fix.get(id(op), op) if isinstance(op, _Forward) else op
                                 for op in inst.operands]


def _canonical_local(token: str) -> str:
    return "%" + unquote(token) if token.startswith("%") else "%" + token


def _local_name(token: str) -> str | None:
    """Keep real names; numbered temporaries become unnamed (the printer renames them)."""
    name = unquote(token) if token.startswith("%") else token
    return None if name.isdigit() else name


# ---------------------------------------------------------------- module level

def parse_module(text: str) -> Module:
    mod = Module()
    lines = text.splitlines()
    for line in lines:                 # named types first: bodies may use them before
        if line.startswith("%") and " = type " in line:
            name, _, body = line.partition(" = type ")
            if body.strip() != "opaque":
                mod.named_types[name.strip()] = _Cursor(body, None).type()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if not stripped or stripped.startswith(";"):
            continue
        if stripped.startswith("define"):
            body: list[str] = []
            while i < len(lines) and lines[i].rstrip() != "}":
                body.append(lines[i])
                i += 1
            i += 1
            fn = _parse_header(stripped, define=True)
            _parse_body(fn, body, mod.named_types)
            mod.add_function(fn)
        elif stripped.startswith("declare"):
            mod.add_function(_parse_header(stripped, define=False))
        elif stripped.startswith("attributes "):
            mod.attribute_groups[stripped.split()[1]] = stripped
        elif stripped.startswith("!"):
            key, _, rhs = stripped.partition("=")
            mod.metadata[key.strip()] = rhs.strip()
        elif stripped.startswith("@"):
            mod.globals[unquote(tokenize(stripped)[0].text)] = stripped
        elif stripped.startswith("%"):
            mod.type_defs[tokenize(stripped)[0].text] = stripped
        else:
            mod.header.append(stripped)
    return mod


def parse_function(text: str) -> Function:
    """Parse a single `define` (as printed by `str(llvm_function)`)."""
    fns = [f for f in parse_module(text).functions.values() if not f.is_declaration]
    if len(fns) != 1:
        raise InvalidIRError("expected exactly one function definition")
    return fns[0]


_LINKAGE = {"private", "internal", "available_externally", "linkonce", "weak", "common",
            "appending", "extern_weak", "linkonce_odr", "weak_odr", "external"}
_PREFIX = _LINKAGE | {"dso_local", "dso_preemptable", "default", "hidden", "protected",
                      "dllimport", "dllexport", "unnamed_addr", "local_unnamed_addr"}


def _parse_header(line: str, define: bool) -> Function:
    if define:
        line = line.rstrip().removesuffix("{").rstrip()
    cur = _Cursor(line, None)
    cur.take()  # define / declare
    prefix: list[str] = []
    linkage = ""
    while True:
        tok = cur.peek()
        assert tok is not None
        if tok.text in _PREFIX or _CCONV.match(tok.text):
            prefix.append(tok.text)
            linkage = tok.text if tok.text in _LINKAGE else linkage
            cur.i += 1
        else:
            break
    ret_attrs = cur.attrs_until_value()
    ret = cur.type()
    name = unquote(cur.take().text)
    cur.take("(")
    params: list[Type] = []
    names: list[str | None] = []
    attrs: list[str] = []
    vararg = False
    while not cur.accept(")"):
        if cur.accept("..."):
            vararg = True
            continue
        params.append(cur.type())
        attrs.append(cur.attrs_until_value())
        tok = cur.peek()
        names.append(_local_name(tok.text) if tok is not None and tok.kind == "local" else None)
        if tok is not None and tok.kind == "local":
            cur.i += 1
        cur.accept(",")
    fn = Function(name, FunctionType(ret, tuple(params), vararg), names, linkage)
    for arg, a in zip(fn.args, attrs):
        arg.attrs = a
    fn.prefix_attrs = " ".join(p for p in prefix if p not in _LINKAGE)
    fn.ret_attrs = ret_attrs
    tail = cur.rest()
    meta = re.search(r"(!\w+ !\d+\s*)+$", tail)
    if meta:
        fn.metadata = meta.group().strip()
        tail = tail[:meta.start()]
    fn.fn_attrs = tail.strip()
    return fn


def _parse_body(fn: Function, lines: list[str], named_types: dict[str, Type]) -> None:
    scope = _Scope(fn, named_types)
    block: Block | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        text = line.strip()
        if not text or text.startswith(";") or text.startswith("#dbg_"):
            continue
        label = _LABEL_LINE.match(text) if not line.startswith(" ") else None
        if label:
            block = scope.block("%" + (label.group(1) or label.group(2)))
            fn.blocks.append(block)
            continue
        while bracket_depth(text) > 0 and i < len(lines):   # multi-line switch
            text += " " + lines[i].strip()
            i += 1
        if block is None:
            block = scope.block("%0")
            fn.blocks.append(block)
        block.append(_parse_instruction(text, scope))
    scope.resolve_forwards()


# ---------------------------------------------------------------- instructions

def _parse_instruction(text: str, scope: _Scope) -> Instruction:
    cur = _Cursor(text, scope)
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
        if opcode in _BINARY:
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


def _strip_metadata(cur: _Cursor) -> dict[str, str]:
    """Remove trailing `, !kind !N` attachments from the token list."""
    meta: dict[str, str] = {}
    toks = cur.toks
    while len(toks) >= 3 and toks[-1].kind == "meta" and toks[-2].kind == "meta" \
            and toks[-3].text == ",":
        meta[toks[-2].text[1:]] = toks[-1].text
        del toks[-3:]
    return dict(reversed(list(meta.items())))


def _align(cur: _Cursor, inst: Instruction) -> Instruction:
    while cur.accept(","):
        if cur.accept("align"):
            inst.align = int(cur.take().text)
        else:
            inst.extra = (inst.extra + ", " + cur.rest()).lstrip(", ")
            break
    return inst


def _binary(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF | _INT_FLAGS)
    ty = cur.type()
    a = cur.value(ty)
    cur.take(",")
    b = cur.value(ty)
    return Instruction(op, ty, [a, b], flags=flags)


def _cast(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF | _INT_FLAGS)
    v = cur.typed_value()
    cur.take("to")
    return Instruction(op, cur.type(), [v], flags=flags)


def _fneg(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF)
    v = cur.typed_value()
    return Instruction(op, v.type, [v], flags=flags)


def _cmp(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF | {"samesign"})
    pred = cur.take().text
    ty = cur.type()
    a = cur.value(ty)
    cur.take(",")
    b = cur.value(ty)
    rty: Type = IntType(1) if not isinstance(ty, VectorType) else VectorType(ty.count, IntType(1))
    return Instruction(op, rty, [a, b], flags=flags, predicate=pred)


def _phi(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF)
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


def _select(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF)
    c = cur.typed_value()
    cur.take(",")
    a = cur.typed_value()
    cur.take(",")
    b = cur.typed_value()
    return Instruction(op, a.type, [c, a, b], flags=flags)


def _ret(cur: _Cursor, op: str) -> Instruction:
    if cur.accept("void"):
        return Instruction(op, VOID, [])
    return Instruction(op, VOID, [cur.typed_value()])


def _br(cur: _Cursor, op: str) -> Instruction:
    if cur.at("label"):
        return Instruction(op, VOID, [cur.block_ref()])
    c = cur.typed_value()
    cur.take(",")
    t = cur.block_ref()
    cur.take(",")
    f = cur.block_ref()
    return Instruction(op, VOID, [c, t, f])


def _switch(cur: _Cursor, op: str) -> Instruction:
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


def _unreachable(cur: _Cursor, op: str) -> Instruction:
    return Instruction(op, VOID, [])


def _alloca(cur: _Cursor, op: str) -> Instruction:
    ty = cur.type()
    ops: list[Value] = []
    if cur.at(",") and cur.peek(1) is not None and cur.peek(1).text != "align":  # type: ignore[union-attr]
        cur.take(",")
        ops.append(cur.typed_value())
    inst = Instruction(op, PointerType(), ops, source_type=ty)
    return _align(cur, inst)


def _load(cur: _Cursor, op: str) -> Instruction:
    if cur.at("atomic"):
        raise cur.error("unsupported atomic load")
    volatile = cur.accept("volatile")
    ty = cur.type()
    cur.take(",")
    p = cur.typed_value()
    return _align(cur, Instruction(op, ty, [p], volatile=volatile))


def _store(cur: _Cursor, op: str) -> Instruction:
    if cur.at("atomic"):
        raise cur.error("unsupported atomic store")
    volatile = cur.accept("volatile")
    v = cur.typed_value()
    cur.take(",")
    p = cur.typed_value()
    return _align(cur, Instruction(op, VOID, [v, p], volatile=volatile))


def _gep(cur: _Cursor, op: str) -> Instruction:
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


def _extractvalue(cur: _Cursor, op: str) -> Instruction:
    agg = cur.typed_value()
    idx = _indices(cur)
    ty = agg.type
    assert cur.scope is not None
    for i in idx:
        ty = cur.scope.resolve(ty)
        ty = ty.elements[i] if isinstance(ty, StructType) else ty.element  # type: ignore[attr-defined]
    return Instruction(op, ty, [agg], indices=idx)


def _insertvalue(cur: _Cursor, op: str) -> Instruction:
    agg = cur.typed_value()
    cur.take(",")
    v = cur.typed_value()
    return Instruction(op, agg.type, [agg, v], indices=_indices(cur))


def _indices(cur: _Cursor) -> tuple[int, ...]:
    out = []
    while cur.at(",") and cur.peek(1) is not None and cur.peek(1).kind == "number":  # type: ignore[union-attr]
        cur.take(",")
        out.append(int(cur.take().text))
    return tuple(out)


def _extractelement(cur: _Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    cur.take(",")
    idx = cur.typed_value()
    assert isinstance(v.type, VectorType)
    return Instruction(op, v.type.element, [v, idx])


def _insertelement(cur: _Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    cur.take(",")
    e = cur.typed_value()
    cur.take(",")
    idx = cur.typed_value()
    return Instruction(op, v.type, [v, e, idx])


def _shufflevector(cur: _Cursor, op: str) -> Instruction:
    a = cur.typed_value()
    cur.take(",")
    b = cur.typed_value()
    cur.take(",")
    mask = cur.typed_value()
    assert isinstance(a.type, VectorType) and isinstance(mask.type, VectorType)
    return Instruction(op, VectorType(mask.type.count, a.type.element), [a, b, mask])


def _freeze(cur: _Cursor, op: str) -> Instruction:
    v = cur.typed_value()
    return Instruction(op, v.type, [v])


def _call(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words(_FMF)
    cconv = cur.words({t.text for t in cur.toks if t.kind == "word" and _CCONV.match(t.text)})
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


def _fence(cur: _Cursor, op: str) -> Instruction:
    return Instruction(op, VOID, [], ordering=cur.rest())


def _atomicrmw(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words({"volatile"}) + (cur.take().text,)
    p = cur.typed_value()
    cur.take(",")
    v = cur.typed_value()
    inst = Instruction(op, v.type, [p, v], flags=flags, ordering=_ordering(cur))
    return _align(cur, inst)


def _cmpxchg(cur: _Cursor, op: str) -> Instruction:
    flags = cur.words({"weak", "volatile"})
    p = cur.typed_value()
    cur.take(",")
    expected = cur.typed_value()
    cur.take(",")
    new = cur.typed_value()
    ty = StructType((new.type, IntType(1)))
    inst = Instruction(op, ty, [p, expected, new], flags=flags, ordering=_ordering(cur))
    return _align(cur, inst)


def _ordering(cur: _Cursor) -> str:
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


def parse_type(text: str) -> Type:
    """Parse one LLVM type, e.g. `[2 x double]` or `{ double, float }`."""
    cur = _Cursor(text, None)
    ty = cur.type()
    if not cur.done():
        raise cur.error("trailing text after type")
    return ty
