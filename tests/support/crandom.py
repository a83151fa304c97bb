"""Run many random C programs through the C front end and count OK / refused / WRONG / CRASH.

    python -m tests.support.crandom [-n 2000] [--start 0] [-j 2] [--features all|a,b,...]
                                    [--opt -O0,-O2] [--batch 25] [--timeout 300]

Programs (tests/support/cprogen.py, seeds start..start+n) are checked by
tests/support/ccheck.py in worker subprocesses, `--batch` programs per worker, `-j` workers
at a time: a segfault, an LLVM assertion abort or a hang (`--timeout` seconds per program,
SIGALRM) kills only its worker; the program it was running is counted as CRASH with its seed
and the worker is restarted on the rest of its batch. Prints the table per optimisation level,
the most common refusal messages and every WRONG / CRASH seed with its first line. Reproduce
one program with `--start SEED -n 1 -j 1 -v` (prints the C source and the full report).
`--json FILE` appends each record as it comes; `--report FILE` prints the report of one.

It lives in tests/support, not examples/: it is a test tool built on the test checkers
(tests/support/gradcheck.py), shared with tests/test_random_c_programs.py, and not
something a user of enzyme_py would copy.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from tests.support.cprogen import ALL_FEATURES, FEATURES, generate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATUSES = ("ok", "refused", "wrong", "crash", "skipped")


def run(items: list[tuple[int, str]], features, jobs: int = 1, batch: int = 25,
        timeout: float = 300, progress=None) -> list[dict]:
    """One record per (seed, opt level) of `items`: seed, opt, status, mode, message."""
    chunks = [items[i:i + batch] for i in range(0, len(items), batch)]
    lock, records = threading.Lock(), []

    def work(chunk):
        for rec in _run_chunk(chunk, features, timeout):
            with lock:
                records.append(rec)
                if progress:
                    progress(rec, len(records), len(items))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for f in [pool.submit(work, c) for c in chunks]:
            f.result()
    return sorted(records, key=lambda r: (r["seed"], r["opt"]))


def _run_chunk(items: list, features, timeout: float):
    """Records for `items`, restarting the worker after each crash."""
    while items:
        cmd = [sys.executable, "-m", "tests.support.crandom", "--worker",
               "--features", ",".join(sorted(features)), "--timeout", str(timeout),
               *[f"{s}:{o}" for s, o in items]]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        err: list[str] = []
        reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
        reader.start()
        done, current = set(), None
        for line in proc.stdout:
            if line.startswith("START "):
                seed, opt = line.split()[1:3]
                current = (int(seed), opt)
            elif line.startswith("RESULT "):
                rec = json.loads(line[7:])
                done.add((rec["seed"], rec["opt"]))
                yield rec
        code = proc.wait()
        reader.join()
        left = [it for it in items if it not in done]
        if not left:
            return
        if current is None or current in done:
            raise RuntimeError(f"worker exited ({code}) before starting a program:\n"
                               + "".join(err[-20:]))
        why = (f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}")
        tail = "".join(err[-12:]).strip()
        yield {"seed": current[0], "opt": current[1], "status": "crash", "mode": "process",
               "message": f"worker {why}\n{tail}"}
        items = [it for it in left if it != current]


def _worker(specs: list[str], features, timeout: float) -> None:
    _die_with_parent()
    from tests.support.ccheck import check
    for spec in specs:
        seed, opt = spec.split(":")
        print(f"START {seed} {opt}", flush=True)
        prog = generate(int(seed), features)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)     # a hang kills the worker
        signal.setitimer(signal.ITIMER_REAL, timeout)
        out = check(prog, opt)
        signal.setitimer(signal.ITIMER_REAL, 0)
        print("RESULT " + json.dumps({"seed": int(seed), "opt": opt, "status": out.status,
                                      "mode": out.mode, "message": out.message,
                                      "features": sorted(features)}), flush=True)


def _die_with_parent() -> None:
    """Linux: SIGTERM when the runner dies, so a killed run leaves no workers behind."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def kind(message: str) -> str:
    """A refusal message without its specifics (names, numbers, lines, types' sizes)."""
    first = message.splitlines()[0] if message else ""
    first = re.sub(r"^(UnsupportedError|ActivityError): (cannot differentiate: )?", "", first)
    first = re.sub(r"\S+\.c:\d+", "FILE:LINE", first)
    first = re.sub(r"[%@][\w.\"$-]+", "%v", first)
    first = re.sub(r"\b\d+\b", "N", first)
    return first[:110]


def table(records: list[dict]) -> str:
    """The counts per optimisation level and in total."""
    opts = sorted({r["opt"] for r in records})
    rows = [f"{'':8}" + "".join(f"{s.upper():>9}" for s in STATUSES) + f"{'total':>9}"]
    for name, sel in [(o, [r for r in records if r["opt"] == o]) for o in opts] + [
            ("all", records)]:
        c = Counter(r["status"] for r in sel)
        rows.append(f"{name:8}" + "".join(f"{c[s]:>9}" for s in STATUSES) + f"{len(sel):>9}")
    return "\n".join(rows)


def uses(record: dict) -> frozenset:
    """The features the record's program contains (regenerated from its seed)."""
    return generate(record["seed"], record.get("features", ALL_FEATURES)).uses


def by_feature(records: list[dict]) -> str:
    """The counts among the programs that contain each feature."""
    used = [(r, uses(r)) for r in records]
    rows = [f"{'programs using':16}" + "".join(f"{s.upper():>9}" for s in STATUSES)]
    for feat in FEATURES:
        c = Counter(r["status"] for r, u in used if feat in u)
        if c:
            rows.append(f"{feat:16}" + "".join(f"{c[s]:>9}" for s in STATUSES))
    return "\n".join(rows)


def report(records: list[dict], top: int = 12) -> str:
    out = [table(records), "", by_feature(records), "", "most common refusals:"]
    kinds = Counter(kind(r["message"]) for r in records if r["status"] == "refused")
    out += [f"{n:6}  {k}" for k, n in kinds.most_common(top)]
    for status in ("wrong", "crash"):
        bad = [r for r in records if r["status"] == status]
        if bad:
            out += ["", f"{status.upper()} ({len(bad)}):"]
            out += [f"  seed {r['seed']} {r['opt']} [{r['mode']}] uses {','.join(sorted(uses(r)))}"
                    f"\n      {(r['message'].splitlines() or [''])[0][:150]}" for r in bad]
    return "\n".join(out)


def parse_features(text: str) -> frozenset:
    if text == "all":
        return ALL_FEATURES
    feats = frozenset(f for f in text.split(",") if f)
    unknown = feats - ALL_FEATURES
    if unknown:
        raise SystemExit(f"unknown features {sorted(unknown)}; known: "
                         + ", ".join(f"{k} ({v})" for k, v in FEATURES.items()))
    return feats


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.support.crandom",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="programs (default 2000)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="worker processes at a time")
    ap.add_argument("--features", default="all", help="all, or a comma list of "
                    + ", ".join(FEATURES))
    ap.add_argument("--opt", default="-O0,-O2", help="clang levels, comma separated")
    ap.add_argument("--alternate", action="store_true",
                    help="each seed at one level, cycling through --opt (half the work)")
    ap.add_argument("--batch", type=int, default=25, help="programs per worker process")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per program")
    ap.add_argument("--json", help="append the records to this file as they come (JSON lines)")
    ap.add_argument("--report", metavar="FILE", help="print the report of a --json file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print sources and reports")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("specs", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    features = parse_features(a.features)
    if a.worker:
        _worker(a.specs, features, a.timeout)
        return 0
    if a.report:
        with open(a.report) as f:
            print(report([json.loads(line) for line in f if line.strip()]))
        return 0
    opts = [o for o in a.opt.split(",") if o]
    sink = open(a.json, "a") if a.json else None
    print(f"C random programs: seeds {a.start}..{a.start + a.n - 1}, opt {','.join(opts)}, "
          f"features {','.join(sorted(features))}", flush=True)
    t0 = time.time()

    def progress(rec, k, total):
        if sink:
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
        if a.verbose:
            print(generate(rec["seed"], features).source)
        if a.verbose or rec["status"] in ("wrong", "crash"):
            msg = rec["message"] if a.verbose else kind(rec["message"])
            print(f"[{k}/{total}] seed {rec['seed']} {rec['opt']}: {rec['status']} "
                  f"{rec['mode']} {msg}", flush=True)
        elif k % 100 == 0:
            print(f"[{k}/{total}] {time.time() - t0:.0f}s", flush=True)

    seeds = range(a.start, a.start + a.n)
    items = ([(s, opts[s % len(opts)]) for s in seeds] if a.alternate
             else [(s, o) for s in seeds for o in opts])
    records = run(items, features, a.jobs, a.batch, a.timeout, progress)
    print(f"\n{len(records)} checks in {time.time() - t0:.0f}s wall\n")
    print(report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
