"""Which Numba function a call or store came from, kept through inlining.

Inlined helper code carries the source line of the call that brought it in, so the line
cannot tell Numba's own implementation of `np.linalg.cholesky` from a user's store on the same
line, or from a user's `@njit` helper called there. A record whose rule exempts writes made
by a library function's own implementation (`ReadInReverse.allowed`) asks for its callee to be
`watch`ed: every raw module calling a watched function then gets each call and store tagged
with `!enzyme.fn !{!"<defining function>"}` before linking, and `same_origin` compares tags.
An instruction whose tag LLVM dropped has none, so the exemption never applies to it.
"""
from __future__ import annotations

import re

from ir_passes.ir.values import Instruction

ORIGIN_KIND = "enzyme.fn"
_watched: set[str] = set()
_DEFINE = re.compile(r'^define [^@]*@("(?:[^"\\]|\\.)*"|[\w.$]+)\(')
_NODE = re.compile(r"^!(\d+) = ", re.M)


def watch(symbol: str) -> None:
    """Tag the calls and stores of every function that calls `symbol` with their origin."""
    _watched.add(symbol)


def tag_origins(text: str) -> str:
    """`text` (a raw module) with its calls and stores tagged by their defining function,
    when it calls a watched function (else unchanged)."""
    if not any(f"@{symbol}(" in text or f'@"{symbol}"(' in text for symbol in _watched):
        return text
    first_free = 1 + max(map(int, _NODE.findall(text)), default=-1)
    nodes: dict[str, int] = {}
    lines, origin = [], None
    for line in text.splitlines():
        define = _DEFINE.match(line)
        if define:
            origin = define.group(1).strip('"')
        elif line == "}":
            origin = None
        elif origin is not None and _is_call_or_store(line):
            number = nodes.setdefault(origin, first_free + len(nodes))
            line += f", !{ORIGIN_KIND} !{number}"
        lines.append(line)
    lines += [f'!{n} = !{{!"{name}"}}' for name, n in nodes.items()]
    return "\n".join(lines) + "\n"


def _is_call_or_store(line: str) -> bool:
    body = line.lstrip()
    if body.startswith("%"):
        body = body.split("= ", 1)[-1]
    return body.startswith(("store ", "call ", "tail call "))


def same_origin(a: Instruction, b: Instruction) -> bool:
    """Whether `a` and `b` both carry an origin tag, the same one."""
    tag = a.metadata.get(ORIGIN_KIND)
    return tag is not None and tag == b.metadata.get(ORIGIN_KIND)
