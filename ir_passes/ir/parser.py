"""LLVM 22 assembly text -> `Module` objects. The only place IR text is read (with its
helpers: `parse_cursor` for types and values, `parse_instructions`, `parse_scope`).

Covers the textual IR that LLVM prints for Numba and clang output: every instruction except
exception handling and atomics, which raise `InvalidIRError` naming the opcode. Globals,
attribute groups and metadata nodes are kept verbatim (see `Module`).
"""
from __future__ import annotations

import re

from ..errors import InvalidIRError
from .lexer import bracket_depth, tokenize, unquote
from .parse_cursor import CCONV, Cursor
from .parse_instructions import parse_instruction
from .parse_scope import Scope, local_name
from .types import FunctionType, Type
from .values import Block, Function, Module

__all__ = ["parse_function", "parse_module", "parse_type"]

_LABEL_LINE = re.compile(r'^(?:"((?:[^"\\]|\\.)*)"|([-a-zA-Z$._0-9]+)):')


def parse_module(text: str) -> Module:
    mod = Module()
    lines = text.splitlines()
    for line in lines:                 # named types first: bodies may use them before
        if line.startswith("%") and " = type " in line:
            name, _, body = line.partition(" = type ")
            if body.strip() != "opaque":
                mod.named_types[name.strip()] = Cursor(body, None).type()
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
    cur = Cursor(line, None)
    cur.take()  # define / declare
    prefix: list[str] = []
    linkage = ""
    while True:
        tok = cur.peek()
        assert tok is not None
        if tok.text in _PREFIX or CCONV.match(tok.text):
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
        names.append(local_name(tok.text) if tok is not None and tok.kind == "local" else None)
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
    scope = Scope(fn, named_types)
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
        block.append(parse_instruction(text, scope))
    scope.resolve_forwards()


def parse_type(text: str) -> Type:
    """Parse one LLVM type, e.g. `[2 x double]` or `{ double, float }`."""
    cur = Cursor(text, None)
    ty = cur.type()
    if not cur.done():
        raise cur.error("trailing text after type")
    return ty
