"""The tape report's immutable rows: loops with their trip counts, retained values, totals."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .retained import Need, Retention
from .tape import SLOT
from .tape_sizes import Expr, counter_symbol

__all__ = ["LoopTrips", "TapeEntry", "TapeReport", "resolve_sizes"]


@dataclass(frozen=True)
class LoopTrips:
    header: str
    depth: int
    parent: str | None
    trips: Expr | None            # iterations per entry into the loop; None: unknown
    source: str | None


REBUILT = (Retention.RECOMPUTE, Retention.IV, Retention.RECURRENCE)   # kept without the tape


@dataclass(frozen=True)
class TapeEntry:
    value: str                    # printed primal name ("%.178.le", "%e'" for a shadow)
    type: str
    kind: Retention               # tape | spill | recompute | iv (as `retained.Retained`)
    what: Need                    # value | shadow | choice
    block: str                    # primal block whose reverse needs it (spill: all, ", ")
    loops: tuple[str, ...]        # enclosing loop headers, outermost first
    reason: str                   # what the reverse pass needs it for (a description)
    source: str | None            # Python "file:line" of the value, when known
    slot_bytes: int = SLOT        # its size on the tape (`tape.slot_bytes`)

    @property
    def bytes_per_iteration(self) -> int:
        return self.slot_bytes if self.kind is Retention.TAPE else 0


@dataclass(frozen=True)
class TapeReport:
    function: str
    entries: tuple[TapeEntry, ...]
    loops: tuple[LoopTrips, ...]
    symbols: tuple[str, ...]      # size names a `sizes` mapping may give

    @property
    def taped(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind is Retention.TAPE)

    @property
    def spilled(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind is Retention.SPILL)

    @property
    def tabled(self) -> tuple[TapeEntry, ...]:
        """Values kept in a table over the inner loops of their nest (`tables.py`)."""
        return tuple(e for e in self.entries if e.kind is Retention.TABLE)

    def table_bytes(self, entry: TapeEntry) -> Expr | None:
        """The bytes of a tabled value's table: a slot per iteration of its inner loops
        (`entry.loops[1:]`, whose trip counts do not depend on the outer loops')."""
        n = self._executions(entry.loops[1:])
        return None if n is None else Expr.const(entry.slot_bytes) * n

    @property
    def recomputed(self) -> tuple[TapeEntry, ...]:
        """Values recomputed or rebuilt (induction variables, recurrences), not predecessor
        choices."""
        return tuple(e for e in self.entries if e.kind in REBUILT and e.what is not Need.CHOICE)

    @property
    def choices(self) -> tuple[TapeEntry, ...]:
        """Predecessor choices recomputed from a branch condition (`value`) instead of taped."""
        return tuple(e for e in self.entries if e.what is Need.CHOICE)

    def bytes_by_block(self) -> dict[str, int]:
        """Tape bytes pushed per execution of each block (compare `taped_bytes`)."""
        out: dict[str, int] = {}
        for e in self.taped:
            out[e.block] = out.get(e.block, 0) + e.bytes_per_iteration
        return out

    def trips(self, header: str) -> Expr | None:
        return next(l.trips for l in self.loops if l.header == header)

    def executions(self, entry: TapeEntry) -> Expr | None:
        """How many times the entry's block pushes per call (product of enclosing trips)."""
        return self._executions(entry.loops)

    def _executions(self, loops: tuple[str, ...]) -> Expr | None:
        """Executions of a block inside `loops` (outermost first): the product of their trip
        counts, summed over an outer loop's counter when an inner trip count depends on it."""
        total = Expr.const(1)
        for header in reversed(loops):
            t = self.trips(header)
            if t is None:
                return None
            total = Expr.sum(counter_symbol(header), t, total)
        return total

    def entry_bytes(self, entry: TapeEntry) -> Expr | None:
        n = self.executions(entry)
        return None if n is None else Expr.const(entry.bytes_per_iteration) * n

    def total_bytes(self) -> Expr | None:
        """Tape bytes per call, summed by loop nest; None when some trip count is unknown."""
        per_nest: dict[tuple[str, ...], int] = {}
        for e in self.taped:
            per_nest[e.loops] = per_nest.get(e.loops, 0) + e.bytes_per_iteration
        total = Expr.const(0)
        for nest in sorted(per_nest, key=len, reverse=True):
            n = self._executions(nest)
            if n is None:
                return None
            total = total + Expr.const(per_nest[nest]) * n
        return total


def resolve_sizes(report: TapeReport, sizes: Mapping[str, int]) -> dict[str, int]:
    """`sizes` with array names expanded: `x=1000` sets every `x.shape[k]`."""
    out = dict(sizes)
    for sym in report.symbols:
        base = sym.split(".shape[")[0]
        if sym not in out and base != sym and base in sizes:
            out[sym] = sizes[base]
    return out
