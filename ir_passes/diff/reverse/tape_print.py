"""The tape report as `;`-comment text for the IR inspection tool."""
from __future__ import annotations

from typing import Mapping

from .cost_model import cost_model_lines
from .retained import Retention
from .tape import SLOT
from .tape_entries import TapeReport, resolve_sizes
from .tape_sizes import Expr

__all__ = ["print_tape"]


def print_tape(report: TapeReport, sizes: Mapping[str, int] | None = None) -> str:
    """The report as `;`-comment text (like print-activity): loops, taped, spilled,
    recomputed, predecessor choices, total."""
    sizes = resolve_sizes(report, sizes or {})
    out = [f"; tape of @{report.function} (reverse mode)"] + cost_model_lines()
    if report.loops:
        out.append("; loops (trip count per entry):")
        rows = [(l.header, f"depth {l.depth}", f"in {l.parent}" if l.parent else "",
                 f"trips = {l.trips}" if l.trips is not None else "trips = ? (data-dependent)",
                 _loc(l.source)) for l in report.loops]
        out += _table(rows)
    taped = report.taped
    out.append(f"; taped ({len(taped)} value(s), {SLOT}-byte slots (i1: 1, i32/float: 4) pushed "
               "at the end of the block's forward execution):")
    if taped:
        rows = [("value", "type", "block", "loop", "bytes/iter", "total bytes", "needed for",
                 "source")]
        for e in taped:
            total = report.entry_bytes(e)
            rows.append((e.value, e.type, e.block, e.loops[-1] if e.loops else "-",
                         str(e.bytes_per_iteration), _amount(total, sizes), e.reason,
                         _loc(e.source)))
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    tabled = report.tabled
    if tabled:
        out.append(f"; in tables ({len(tabled)} value(s) invariant in their outermost loop: "
                   "stored per inner iteration, read back at the same slot):")
        rows = [("value", "type", "block", "loops", "table bytes", "needed for", "source")]
        rows += [(e.value, e.type, e.block, " > ".join(e.loops),
                  _amount(report.table_bytes(e), sizes), e.reason, _loc(e.source))
                 for e in tabled]
        out += _table(rows)
    spilled = report.spilled
    out.append(f"; spilled ({len(spilled)} value(s) computed at most once: one stack slot per "
               "call, stored after the definition):")
    if spilled:
        rows = [("value", "type", "read by the reverse of", "needed for", "source")]
        rows += [(e.value, e.type, e.block, e.reason, _loc(e.source)) for e in spilled]
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    again = report.recomputed
    out.append(f"; recomputed in the reverse pass instead of taped ({len(again)}):")
    if again:
        rows = [("value", "type", "how", "block", "needed for", "source")]
        for e in again:
            loop = e.loops[-1] if e.loops else "?"
            how = "recompute" if e.kind is Retention.RECOMPUTE else f"iv of loop {loop}" \
                if e.kind is Retention.IV else f"backwards in loop {loop}"
            rows.append((e.value, e.type, how, e.block, e.reason, _loc(e.source)))
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    if report.choices:
        out.append(f"; predecessor choices recomputed from the branch condition instead of "
                   f"taped ({len(report.choices)}): "
                   + ", ".join(f"{e.block} from {e.value}" for e in report.choices))
    total = report.total_bytes()
    line = f"; total tape per call: {_amount(total, sizes)} bytes"
    if total is None:
        line += " (some trip counts are data-dependent)"
    elif total.symbols() and total.evaluate(sizes) is None:
        missing = sorted(s for s in total.symbols() if s not in sizes)
        line += f" (give --sizes {', '.join(f'{s}=N' for s in missing)} for a number)"
    out.append(line)
    if tabled:
        tables = Expr.const(0)
        for e in tabled:
            n = report.table_bytes(e)
            tables = None if n is None or tables is None else tables + n
        out.append(f"; tables per call: {_amount(tables, sizes)} bytes")
    return "\n".join(out) + "\n"


def _amount(e: Expr | None, sizes: Mapping[str, int]) -> str:
    if e is None:
        return "?"
    v = e.evaluate(sizes)
    if v is None or e.value is not None:
        return str(e)
    return f"{e} = {v}"


def _loc(source: str | None) -> str:
    if not source:
        return ""
    path, _, line = source.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}" if path else source


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(";   " + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip() for r in rows]
