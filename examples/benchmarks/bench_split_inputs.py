"""What split mode pays for keeping argument values: tape bytes and time, with and without
`unchanged=` (API.md "Split mode").

Run:  python examples/benchmarks/bench_split_inputs.py [--repeats N] [--only NAME]

Not a test: it prints one table. For each kernel of bench_kernels.py, `fwd` then `rev` of
`derive_diff(..., mode="split")` as the caller may use them (arguments may change between the
halves, so what `rev` reads from them is kept: arrays the function only reads are copied
whole into the state, values read from arrays it writes are taped), against the same with
`unchanged=` naming every array parameter (read again by `rev`, as reverse mode does).
Columns: `tape` and `tape unch.` are `tape.nbytes` (state + tape), `extra` their difference;
`fwd+rev` the min time of one `fwd` plus `rev` (process CPU time, interleaved, warm-up calls
excluded) and `ratio` kept/unchanged. Both gradients are compared with reverse mode's before
timing; the script exits non-zero when one differs.
"""
from __future__ import annotations

import argparse
import inspect
import sys

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import derive_diff

from bench_kernels import _cases, _fresh, _fmt_bytes, _with_shadows, min_times
from _timing import fmt_time, machine_note, table


def _halves(p, fn, args, dup, unchanged: bool):
    acts = tuple("dup" if i in dup else "const" for i in range(len(args)))
    names = tuple(inspect.signature(fn).parameters)
    arrays = tuple(n for n, a in zip(names, args) if isinstance(a, np.ndarray))
    tag = "unchanged" if unchanged else "kept"
    return derive_diff(p, f"split_{tag}_{fn.__name__}", acts, mode="split",
                       unchanged=arrays if unchanged else ())


def _round(fwd, rev, args, dup):
    """One fwd, then rev, on fresh arguments and zero shadows: (gradients, tape bytes)."""
    shadows = {i: np.zeros_like(args[i]) for i in dup}
    call = _with_shadows(_fresh(args), dup, shadows)
    value, tape = fwd(*call)
    nbytes = tape.nbytes
    rev(*call, 1.0, tape)
    return shadows, nbytes


def measure(case, repeats: int):
    name, fn, args, diff, scratch, _ = case
    dup = set(diff) | set(scratch)
    p = numba.njit(fn)
    acts = tuple("dup" if i in dup else "const" for i in range(len(args)))
    once = {i: np.zeros_like(args[i]) for i in dup}
    derive_diff(p, f"rev_{fn.__name__}", acts)(*_with_shadows(_fresh(args), dup, once))
    halves = [_halves(p, fn, args, dup, unchanged) for unchanged in (False, True)]
    nbytes, worst = [], 0.0
    for fwd, rev in halves:
        grads, n = _round(fwd, rev, args, dup)
        nbytes.append(n)
        for i in diff:
            scale = max(float(np.max(np.abs(once[i]))), 1e-300)
            worst = max(worst, float(np.max(np.abs(grads[i] - once[i]))) / scale)
    times = min_times([lambda h=h: _round(*h, args, dup) for h in halves], repeats)
    return name, nbytes, times, worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", default=None, help="run the kernels whose name contains this")
    opts = ap.parse_args()
    rows, failed = [], False
    for case in _cases(np.random.default_rng(0)):
        if opts.only and opts.only not in case[0]:
            continue
        name, nbytes, times, worst = measure(case, opts.repeats)
        failed |= worst > 1e-10
        rows.append([name, _fmt_bytes(nbytes[0]), _fmt_bytes(nbytes[1]),
                     _fmt_bytes(nbytes[0] - nbytes[1]), fmt_time(times[0]), fmt_time(times[1]),
                     f"{times[0] / times[1]:.2f}", f"{worst:.1e}"])
        print(f"  done: {name}", file=sys.stderr)
    print(table(["kernel", "tape", "tape unch.", "extra", "fwd+rev", "fwd+rev unch.", "ratio",
                 "grad err"], rows))
    print(machine_note())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
