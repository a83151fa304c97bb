"""FileCheck for the IR unit tests, through the `filecheck` package (pure Python, no LLVM).

``check(text, checks)`` matches ``text`` against ``checks`` (lines such as ``CHECK: ...``,
``CHECK-NEXT:``, ``CHECK-NOT:``, ``CHECK-LABEL:``, with ``[[X:%[^ ]+]]`` captures and
``{{regex}}``) and raises AssertionError with filecheck's report and the input on mismatch.
Captures keep expectations stable when values are renamed.
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import textwrap

from filecheck.matcher import Matcher
from filecheck.options import Options


def check(text: str, checks: str) -> None:
    checks = textwrap.dedent(checks).strip() + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        check_file = os.path.join(tmp, "checks.txt")
        input_file = os.path.join(tmp, "input.ll")
        with open(check_file, "w", encoding="utf-8") as fh:
            fh.write(checks)
        with open(input_file, "w", encoding="utf-8") as fh:
            fh.write(text)
        report = io.StringIO()
        with contextlib.redirect_stdout(report), contextlib.redirect_stderr(report):
            opts = Options(match_filename=check_file, input_file=input_file)
            code = Matcher.from_opts(opts).run()
    if code != 0:
        raise AssertionError(f"FileCheck failed:\n{report.getvalue()}\n--- checks ---\n{checks}"
                             f"--- input ---\n{text}")


__all__ = ["check"]
