"""The one error hierarchy of the differentiation pipeline.

Every diagnostic carries where it happened (function, block, instruction text and, when
known, the Python ``file:line`` the instruction came from) and how to work around it.
``enzyme_py`` re-exports these classes; ``ir_passes`` raises them.
"""
from __future__ import annotations


class EnzymePyError(Exception):
    """Root of every error raised by enzyme_py / ir_passes."""


class ActivityError(EnzymePyError, ValueError):
    """A bad activity specification (wrong count, unknown word, bad combination, wrong type)."""


class UnsupportedError(EnzymePyError, NotImplementedError):
    """A construct the pass cannot prove it differentiates correctly.

    The message names the instruction or called function, where it is, and the fix.
    """

    def __init__(self, what: str, *, function: str | None = None, block: str | None = None,
                 instruction: str | None = None, source: str | None = None,
                 hint: str | None = None, code: str | None = None) -> None:
        self.what = what
        self.function = function
        self.block = block
        self.instruction = instruction
        self.source = source
        self.hint = hint
        self.code = code
        super().__init__(self._format())

    def _format(self) -> str:
        lines = [f"cannot differentiate: {self.what}"]
        if self.instruction:
            lines.append(f"  instruction: {self.instruction.strip()}")
        where = ", ".join(p for p in (
            f"function {self.function}" if self.function else "",
            f"block {self.block}" if self.block else "") if p)
        if where:
            lines.append(f"  in {where}")
        if self.source:
            lines.append(f"  at {self.source}")
        if self.code:
            lines.append(f"  code: {self.code.strip()}")
        if self.hint:
            lines.append(f"  fix: {self.hint}")
        return "\n".join(lines)


class CheckpointWarning(UserWarning):
    """`checkpoint=True` asked, but a loop whose reverse tapes values per iteration keeps
    that tape: not eligible, or its checkpointed reverse could not be synthesized."""


class InvalidIRError(EnzymePyError, RuntimeError):
    """IR text we cannot parse, or synthesized IR that fails LLVM's verifier (a bug in the pass)."""


class ArgumentError(ActivityError):
    """Arguments of a derivative call that do not fit its activities: a missing, misshapen or
    read-only shadow, a read-only array the function writes, arrays sharing memory."""
