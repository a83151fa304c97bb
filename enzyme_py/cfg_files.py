"""Control-flow graph files: a .dot as text, or .svg / .png rendered by Graphviz `dot`."""
from __future__ import annotations

import os
import shutil
import subprocess

from .sources import InspectionError

__all__ = ["check_cfg_path", "render_dot"]


def check_cfg_path(path: str | os.PathLike) -> str | None:
    """Refuse a --cfg name `render_dot` cannot write; the `dot` program it needs, or None."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".dot", ".gv"):
        return None
    if ext not in (".svg", ".png"):
        raise InspectionError(f"--cfg {path}: expected a .dot, .svg or .png file name")
    dot = shutil.which("dot")
    if dot is None:
        raise InspectionError(
            f"rendering {path} needs Graphviz's 'dot' program, which is not on PATH: install "
            "Graphviz (Debian/Ubuntu: apt-get install graphviz; conda: conda install graphviz; "
            "macOS: brew install graphviz), or write the graph as .dot instead")
    return dot


def render_dot(dot_text: str, path: str | os.PathLike) -> None:
    """Write DOT text to a .dot file, or render it to .svg / .png with Graphviz."""
    path = os.fspath(path)
    dot = check_cfg_path(path)
    if dot is None:
        with open(path, "w") as f:
            f.write(dot_text)
        return
    ext = os.path.splitext(path)[1].lower()
    proc = subprocess.run([dot, f"-T{ext[1:]}", "-o", path], input=dot_text.encode(),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise InspectionError(f"Graphviz dot failed on {path}: "
                              f"{proc.stderr.decode(errors='replace').strip()}")
