"""Tokens of one line (or joined lines) of LLVM 22 assembly; used only by the parser."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidIRError

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>;.*)
  | (?P<string>c?"(?:[^"\\]|\\.)*")
  | (?P<local>%(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+))
  | (?P<global>@(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+))
  | (?P<meta>!(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9\\]*))
  | (?P<attrgrp>\#[0-9]+)
  | (?P<hexfp>0x[KLMHR]?[0-9A-Fa-f]+)
  | (?P<number>[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)
  | (?P<word>[a-zA-Z_][a-zA-Z0-9_.]*)
  | (?P<ellipsis>\.\.\.)
  | (?P<punct>[()\[\]{}<>,=*:|])
""", re.VERBOSE)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str   # string local global meta attrgrp hexfp number word ellipsis punct
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise InvalidIRError(f"cannot tokenize IR near: {text[pos:pos + 40]!r}")
        kind = m.lastgroup
        assert kind is not None
        if kind not in ("ws", "comment"):
            tokens.append(Token(kind, m.group(), m.start(), m.end()))
        pos = m.end()
    return tokens


def bracket_depth(line: str) -> int:
    """Net count of open brackets on a line, ignoring strings and comments."""
    if '"' not in line and ";" not in line:     # brackets are then punctuation only
        return sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))
    depth = 0
    for tok in tokenize(line):
        if tok.kind == "punct":
            if tok.text in "([{":
                depth += 1
            elif tok.text in ")]}":
                depth -= 1
    return depth


def unquote(name: str) -> str:
    """`%"a b"` -> `a b`; `%x` -> `x` (sigil removed)."""
    body = name[1:]
    if body.startswith('"'):
        body = body[1:-1]
    return body
