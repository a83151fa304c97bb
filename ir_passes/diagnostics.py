"""Diagnostics for one function: printable instruction text and its Python source location.

Front ends attach `!enzyme.loc !N` to instructions with `!N = !{!"file.py:LINE"}`; this module
reads it back to point errors at the user's code, and quotes that line when the file is readable.
"""
from __future__ import annotations

import linecache
import re

from .errors import UnsupportedError
from .known.calls import call_problem
from .ir.printer import Namer, print_instruction
from .ir.values import Block, Function, Instruction, Module

LOC_KIND = "enzyme.loc"


class Diagnostics:
    def __init__(self, module: Module, fn: Function) -> None:
        self.module = module
        self.fn = fn
        self._namer: Namer | None = None

    def text(self, inst: Instruction) -> str:
        if self._namer is None:
            self._namer = Namer(self.fn)
        return print_instruction(inst, self._namer, keep_metadata=False)

    def source(self, inst: Instruction) -> str | None:
        ref = inst.metadata.get(LOC_KIND)
        node = self.module.metadata.get(ref) if ref else None
        m = re.search(r'!"((?:[^"\\]|\\.)*)"', node) if node else None
        return m.group(1) if m else None

    def loop_source(self, header: Block) -> str | None:
        """The Python `file:line` of the first located instruction from the loop header
        `header` on, breadth first (its `for` test)."""
        work, seen = [header], set()
        while work:
            block = work.pop(0)
            if id(block) in seen:
                continue
            seen.add(id(block))
            source = next((s for s in map(self.source, block.instructions) if s), None)
            if source:
                return source
            work.extend(block.successors())
        return None

    def unsupported(self, what: str, inst: Instruction | None = None,
                    hint: str | None = None,
                    located: Instruction | None = None) -> UnsupportedError:
        """The error for `inst`; its source location is that of `inst`, else of `located`."""
        source = next((s for s in (self.source(i) for i in (inst, located) if i is not None)
                       if s), None) or (self._nearby_source(inst) if inst is not None else None)
        return UnsupportedError(
            what, function=self.fn.name,
            block=inst.block.name if inst is not None and inst.block is not None else None,
            instruction=self.text(inst) if inst is not None else None,
            source=source, hint=hint, code=_source_line(source))

    def _nearby_source(self, inst: Instruction) -> str | None:
        """The location of the closest instruction `inst` is computed from, for instructions
        that carry none (phis and selects LLVM merged from several lines)."""
        seen, work = {id(inst)}, list(inst.operands)
        while work and len(seen) < 64:
            v = work.pop(0)
            if not isinstance(v, Instruction) or id(v) in seen:
                continue
            seen.add(id(v))
            found = self.source(v)
            if found:
                return found
            work.extend(v.operands)
        return None

    def unsupported_call(self, inst: Instruction) -> UnsupportedError:
        """The error for an active call the pass has no derivative for (see known/calls.py)."""
        problem = call_problem(inst)
        return self.unsupported(problem.what, inst, problem.hint)


def _source_line(source: str | None) -> str | None:
    """The text of `file:line`, if the file can be read."""
    path, _, line = (source or "").rpartition(":")
    if not path or not line.isdigit():
        return None
    linecache.checkcache(path)
    return linecache.getline(path, int(line)).strip() or None
