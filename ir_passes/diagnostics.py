"""Diagnostics for one function: printable instruction text and its Python source location.

Front ends attach `!enzyme.loc !N` to instructions with `!N = !{!"file.py:LINE"}`; this module
reads it back to point errors at the user's code.
"""
from __future__ import annotations

import re

from .errors import UnsupportedError
from .ir.printer import Namer, print_instruction
from .ir.values import Function, Instruction, Module

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

    def unsupported(self, what: str, inst: Instruction | None = None,
                    hint: str | None = None) -> UnsupportedError:
        return UnsupportedError(
            what, function=self.fn.name,
            block=inst.block.name if inst is not None and inst.block is not None else None,
            instruction=self.text(inst) if inst is not None else None,
            source=self.source(inst) if inst is not None else None, hint=hint)
