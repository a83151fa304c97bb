"""Recursive-descent reading of the tokens of one IR line: types, values, attributes.

Also the opcode and keyword sets the instruction and header parsers share.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import InvalidIRError
from .lexer import Token, tokenize, unquote
from .types import (LABEL, METADATA, VOID, ArrayType, FloatType, FunctionType, IntType,
                    NamedStructType, PointerType, StructType, TokenType, Type, VectorType)
from .values import Block, ConstFloat, ConstInt, Constant, GlobalRef, Value

if TYPE_CHECKING:
    from .parse_scope import Scope

__all__ = ["BINARY", "CASTS", "CCONV", "FMF", "INT_FLAGS", "Cursor"]

_FLOAT_KINDS = {"half", "bfloat", "float", "double", "x86_fp80", "fp128"}
FMF = {"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"}
INT_FLAGS = {"nuw", "nsw", "exact", "disjoint", "nneg", "samesign", "inbounds", "nusw"}
BINARY = {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and",
           "or", "xor", "fadd", "fsub", "fmul", "fdiv", "frem"}
CASTS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
         "ptrtoint", "inttoptr", "bitcast", "addrspacecast"}
_CONST_WORDS = {"true", "false", "null", "undef", "poison", "zeroinitializer", "none"}
_CONST_EXPR = CASTS | BINARY | {"getelementptr", "blockaddress", "dso_local_equivalent",
                                 "no_cfi", "splat", "icmp", "fcmp", "select", "extractelement",
                                 "insertelement", "shufflevector", "ptrauth"}
CCONV = re.compile(r"^(ccc|fastcc|coldcc|tailcc|swiftcc|cc\d+|\w+_cc|\w+cc)$")


class Cursor:
    """Recursive-descent reader over the tokens of one instruction or header."""

    def __init__(self, text: str, scope: Scope | None) -> None:
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
        """Parameter attributes between a type and its value (`noundef`, `align 8`, `range(..)`)."""
        parts: list[str] = []
        while (tok := self.peek()) is not None and tok.kind == "word" \
                and not _is_type_start(tok) and tok.text not in _CONST_WORDS \
                and not (tok.text in _CONST_EXPR and self._paren_next()):
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
