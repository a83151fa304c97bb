"""The numpy soundness sweep as a table: every numpy function / array method Numba supports
that takes float arrays, differentiated in forward and reverse mode and compared with
central finite differences (and forward with reverse).

    python examples/numpy_sweep.py [--category linalg] [--only SUBSTRING] [--errors]

Prints one row per entry (function, forward outcome, reverse outcome, the first line of the
error), then the counts per mode. Exits with status 1 if any derivative is wrong or any
entry crashes (``--known`` lets the entries marked ``known_wrong`` pass).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import enzyme_py  # noqa: E402,F401  (before any kernel compiles, as the test suite does)
from tests.sweep.numpy_entries import ENTRIES  # noqa: E402
from tests.sweep.runner import MODES, OUTCOMES, run  # noqa: E402


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--category", help="only this category (unary, binary, reduction, ...)")
    ap.add_argument("--only", help="only entries whose name contains this text")
    ap.add_argument("--errors", action="store_true", help="print the full message of "
                    "every wrong or crashing entry after the table")
    ap.add_argument("--known", action="store_true",
                    help="do not fail on entries marked known_wrong")
    return ap.parse_args()


def main() -> int:
    opts = _parse()
    entries = [e for e in ENTRIES if (not opts.category or e.category == opts.category)
               and (not opts.only or opts.only in e.name)]
    width = max(len(e.name) for e in entries) + 2
    print(f"{'function':<{width}}{'forward':<19}{'reverse':<19}{'CPU s':>6}  "
          "first line of the error")
    counts = {mode: Counter() for mode in MODES}
    failures = []
    start = time.process_time()
    for entry in entries:
        results = [run(entry, mode) for mode in MODES]
        for r in results:
            counts[r.mode][r.outcome] += 1
            if r.outcome in ("wrong", "crash") and not (opts.known and
                                                        entry.is_known_wrong(r.mode)):
                failures.append(r)
        note = next((r.first_line for r in results if r.first_line), "")
        marks = ["WRONG*" if r.outcome == "wrong" and entry.is_known_wrong(r.mode)
                 else r.outcome.upper() if r.outcome in ("wrong", "crash") else r.outcome
                 for r in results]
        seconds = sum(r.seconds for r in results)
        print(f"{entry.name:<{width}}{marks[0]:<19}{marks[1]:<19}{seconds:6.1f}  {note[:100]}",
              flush=True)
    print(f"\n{len(entries)} entries tried, {time.process_time() - start:.0f} s CPU "
          "(WRONG* = marked known_wrong)")
    for mode in MODES:
        parts = ", ".join(f"{counts[mode][o]} {o}" for o in OUTCOMES)
        print(f"  {mode:<8}: {parts}")
    if opts.errors:
        for r in failures:
            print(f"\n== {r.entry.name} [{r.mode}] {r.outcome}\n{r.message}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
