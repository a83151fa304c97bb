"""FileCheck assertions through the `filecheck` package (pure Python, in-process, no LLVM).

``check(text, checks)`` matches ``text`` against ``checks``: lines such as ``CHECK:``,
``CHECK-NEXT:``, ``CHECK-NOT:``, ``CHECK-SAME:``, ``CHECK-DAG:``, ``CHECK-LABEL:``, with
``[[X:%[^ ]+]]`` captures and ``{{regex}}``, so expectations do not depend on the value names
the printer invents. A mismatch raises AssertionError with filecheck's report and the input.
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
        check_file = os.path.join(tmp, "checks")
        input_file = os.path.join(tmp, "input")
        with open(check_file, "w", encoding="utf-8") as fh:
            fh.write(checks)
        with open(input_file, "w", encoding="utf-8") as fh:
            fh.write(text)
        report = io.StringIO()
        with contextlib.redirect_stdout(report), contextlib.redirect_stderr(report):
            matcher = Matcher.from_opts(Options(match_filename=check_file, input_file=input_file))
            matcher.stderr = report
            code = matcher.run()
    if code != 0:
        raise AssertionError(f"FileCheck failed:\n{report.getvalue()}\n--- checks ---\n{checks}"
                             f"--- input ---\n{text}")


__all__ = ["check"]
