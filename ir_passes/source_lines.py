"""Per Python source line (`!enzyme.loc`): its text and which instructions are active."""
from __future__ import annotations

import linecache
import os

from .analysis.activity import ActivityInfo
from .diagnostics import Diagnostics
from .ir.values import Function, Instruction, Module

__all__ = ["source_summary"]


def source_summary(module: Module, fn: Function, info: ActivityInfo) -> str:
    """Per Python line (`!enzyme.loc`): the line's text and which of its instructions are
    active, i.e. where in the user's source the derivative does work."""
    diag = Diagnostics(module, fn)
    lines: dict[str, list[tuple[Instruction, bool]]] = {}
    for inst in fn.instructions():
        loc = diag.source(inst)
        if loc is not None:
            active = inst.operands[1] in info.shadowed if inst.opcode == "store" else \
                info.is_active(inst)
            lines.setdefault(loc, []).append((inst, active))
    if not lines:
        return ""
    out = ["; active instructions by Python source line:"]
    rows = []
    for loc in sorted(lines, key=_line_key):
        path, _, number = loc.rpartition(":")
        code = linecache.getline(path, int(number)).strip() if number.isdigit() else ""
        active = [_op_name(i) for i, a in lines[loc] if a]
        idle = [_op_name(i) for i, a in lines[loc] if not a and i in info.varied]
        what = ", ".join(active) + (f" (varied, not useful: {', '.join(idle)})" if idle else "")
        rows.append((f"{os.path.basename(path)}:{number}", f"{len(active)}/{len(lines[loc])}",
                     code, what.strip()))
    widths = [max(len(r[k]) for r in rows) for k in range(3)]
    for r in rows:
        out.append((";   " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3])
                   .rstrip())
    return "\n".join(out) + "\n"


def _line_key(loc: str) -> tuple[str, int]:
    path, _, number = loc.rpartition(":")
    return path, int(number) if number.isdigit() else 0


def _op_name(inst: Instruction) -> str:
    return f"call {inst.callee_name}" if inst.opcode == "call" else inst.opcode
