"""FileCheck-style assertions (the `filecheck` package, run in-process, no LLVM needed).

`check(text, patterns)` matches `patterns` (lines of `CHECK:`, `CHECK-NEXT:`, `CHECK-NOT:`,
`CHECK-SAME:`, `CHECK-DAG:`, `{{regex}}`, `[[VAR:regex]]` captures) against `text`, so
expected-output tests do not depend on the value names the printer invents.
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import textwrap

from filecheck.matcher import Matcher
from filecheck.options import Options


def check(text: str, patterns: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        checks = os.path.join(tmp, "checks")
        inp = os.path.join(tmp, "input")
        with open(checks, "w") as f:
            f.write(textwrap.dedent(patterns))
        with open(inp, "w") as f:
            f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            matcher = Matcher.from_opts(Options(match_filename=checks, input_file=inp))
            matcher.stderr = out
            code = matcher.run()
    assert code == 0, f"FileCheck failed:\n{out.getvalue()}\n--- input ---\n{text}"
