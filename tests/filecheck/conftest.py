"""The golden-IR tier: each `*.ll` file below this folder is one test of one behaviour.

A file holds an LLVM function, a `; RUN: <enzyme-py inspect arguments>` line (the file's
path is added as the target) and FileCheck lines matched against what the command prints.
`; RUN-FAIL:` instead expects exit status 1 and matches the CHECK lines against the error.
The command runs in this process (`enzyme_py.cli.main`), so a file costs a fraction of a
second: no Numba compilation is involved.
"""
from __future__ import annotations

import contextlib
import io
import shlex

import pytest

from enzyme_py.cli import main
from tests.support.filecheck import check


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".ll":
        return GoldenFile.from_parent(parent, path=file_path)
    return None


class GoldenFile(pytest.File):
    def collect(self):
        yield GoldenTest.from_parent(self, name=self.path.stem)


class GoldenTest(pytest.Item):
    def runtest(self) -> None:
        text = self.path.read_text(encoding="utf-8")
        runs = [(line.startswith("; RUN-FAIL:"), line.split(":", 1)[1])
                for line in text.splitlines() if line.startswith(("; RUN:", "; RUN-FAIL:"))]
        if len(runs) != 1:
            raise AssertionError(f"{self.path.name}: expected one RUN or RUN-FAIL line")
        fails, args = runs[0]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["inspect", str(self.path), *shlex.split(args)])
        assert code == (1 if fails else 0), f"exit status {code}\n{err.getvalue()}"
        check(err.getvalue() if fails else out.getvalue(),
              "\n".join(line for line in text.splitlines() if line.startswith("; CHECK")))

    def reportinfo(self):
        return self.path, 0, f"golden IR: {self.path.relative_to(self.path.parents[2])}"
