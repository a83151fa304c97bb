"""Control-flow graphs as Graphviz DOT: the primal and its derivative side by side.

`cfg_dot(primal, info, derivative)` draws one cluster per function, one node per block
listing its instructions (as the printer prints them), edges labelled by branch outcome
(T / F, switch case values) and loop back edges dashed. Highlighting:
- primal: active instructions (red), pointers into shadowed memory (orange), and blocks
  holding active code filled; from the `ActivityInfo` the pass itself uses;
- derivative: blocks with no primal counterpart (reverse pass, tape and edge bookkeeping)
  filled blue, and, inside blocks cloned from the primal, instructions that are not clones
  of a primal instruction (shadows, tangents, tape pushes) in blue. An instruction counts as
  a clone when a primal instruction has the same opcode and name (clones keep names).
Each node's tooltip gives the Python lines (`!enzyme.loc`) its instructions came from.

Produces text only (rendering to SVG/PNG with Graphviz is the front end's business).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..diagnostics import Diagnostics
from ..ir.printer import Namer, print_instruction
from ..ir.values import Block, Function, Instruction, Module
from .activity import ActivityInfo
from .cfg import find_loops

__all__ = ["cfg_dot", "function_cluster"]

ACTIVE = "#c00000"
SHADOW = "#b36b00"
DERIVED = "#0040c0"
ACTIVE_FILL = "#ffecec"
DERIVED_FILL = "#e6eeff"


@dataclass(frozen=True)
class _Style:
    font: str | None = None     # instruction colour
    bold: bool = False


def cfg_dot(primal: Function, info: ActivityInfo, derivative: Function | None = None, *,
            module: Module | None = None, title: str | None = None, max_rows: int = 40) -> str:
    """A DOT digraph with the primal (and the derivative, if given) as two clusters.

    `module` (holding the primal) supplies source locations for tooltips; `max_rows` caps the
    instructions shown per block (the rest is summarised as "... N more").
    """
    lines = [
        'digraph "enzyme_py" {',
        '  graph [fontname="monospace", fontsize=11, newrank=true, labelloc=t, labeljust=l'
        + (f', label="{_esc_attr(title)}"' if title else "") + "];",
        '  node [shape=plain, fontname="monospace", fontsize=9];',
        '  edge [fontname="monospace", fontsize=8];',
    ]
    diag = Diagnostics(module, primal) if module is not None else None
    source = diag.source if diag is not None else None
    lines += function_cluster(primal, "primal", f"primal @{primal.name}",
                              _primal_style(info), _primal_fill(info), source, max_rows)
    if derivative is not None:
        inst_style, fill = _derivative_roles(primal, derivative)
        lines += function_cluster(derivative, "derivative", f"derivative @{derivative.name}",
                                  inst_style, fill, source, max_rows)
    lines.append('  legend [shape=note, fontsize=8, label=<' + _legend(derivative is not None)
                 + ">];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def function_cluster(fn: Function, key: str, title: str,
                     style: Callable[[Instruction], _Style],
                     fill: Callable[[Block], str | None],
                     source: Callable[[Instruction], str | None] | None = None,
                     max_rows: int = 40) -> list[str]:
    """The `subgraph cluster_<key>` lines of one function."""
    namer = Namer(fn)
    ids = {id(b): f"{key}_{i}" for i, b in enumerate(fn.blocks)}
    back = {(id(latch), id(loop.header)) for loop in find_loops(fn) for latch in loop.latches}
    out = [f"  subgraph cluster_{key} {{",
           f'    label="{_esc_attr(title)}"; style=rounded; color=gray50; fontsize=12;']
    for block in fn.blocks:
        label = _block_label(block, namer, style, fill, max_rows)
        out.append(f"    {ids[id(block)]} [label=<{label}>{_tooltip(block, source)}];")
    for block in fn.blocks:
        for succ, label in _edges(block, namer):
            attrs = [f'label="{_esc_attr(label)}"'] if label else []
            if (id(block), id(succ)) in back:
                attrs.append("style=dashed")
            if id(succ) in ids:
                out.append(f"    {ids[id(block)]} -> {ids[id(succ)]}"
                           + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    out.append("  }")
    return out


# ---------------------------------------------------------------- highlighting

def _primal_style(info: ActivityInfo) -> Callable[[Instruction], _Style]:
    def style(inst: Instruction) -> _Style:
        if inst.opcode == "store":
            return _Style(ACTIVE, True) if inst.operands[1] in info.shadowed else _Style()
        if inst in info.shadowed:
            return _Style(SHADOW)
        if info.is_active(inst):
            return _Style(ACTIVE, True)
        return _Style()
    return style


def _primal_fill(info: ActivityInfo) -> Callable[[Block], str | None]:
    def fill(block: Block) -> str | None:
        hot = any(_primal_style(info)(i).font == ACTIVE for i in block.instructions)
        return ACTIVE_FILL if hot else None
    return fill


def _derivative_roles(primal: Function, derivative: Function):
    """(instruction style, block fill) for the derivative: new blocks and new code in blue."""
    block_names = {b.name for b in primal.blocks if b.name}
    clones = {(i.opcode, i.name) for i in primal.instructions() if i.name}

    def new_block(block: Block) -> bool:
        # the entry holds the synthesizer's allocas; blocks it creates are always named, and
        # clones keep the primal block's name (or lack of one)
        return block is derivative.entry or (block.name is not None
                                             and block.name not in block_names)

    def style(inst: Instruction) -> _Style:
        if inst.block is not None and new_block(inst.block):
            return _Style()
        if inst.is_terminator or (inst.opcode, inst.name) in clones:
            return _Style()
        return _Style(DERIVED)

    def fill(block: Block) -> str | None:
        return DERIVED_FILL if new_block(block) else None
    return style, fill


# ---------------------------------------------------------------- DOT text

def _block_label(block: Block, namer: Namer, style: Callable[[Instruction], _Style],
                 fill: Callable[[Block], str | None], max_rows: int) -> str:
    bg = fill(block)
    rows = [f'<TR><TD ALIGN="LEFT"><B>{_esc_html(namer.ref(block)[1:])}:</B></TD></TR>']
    insts = block.instructions
    shown = insts if len(insts) <= max_rows else insts[:max_rows - 1]
    for inst in shown:
        text = _esc_html(_clip(print_instruction(inst, namer, keep_metadata=False)))
        st = style(inst)
        if st.bold:
            text = f"<B>{text}</B>"
        if st.font:
            text = f'<FONT COLOR="{st.font}">{text}</FONT>'
        rows.append(f'<TR><TD ALIGN="LEFT">{text}</TD></TR>')
    if len(shown) < len(insts):
        rows.append(f'<TR><TD ALIGN="LEFT"><I>... {len(insts) - len(shown)} more</I></TD></TR>')
    bgattr = f' BGCOLOR="{bg}"' if bg else ""
    return (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"{bgattr}>'
            + "".join(rows) + "</TABLE>")


def _edges(block: Block, namer: Namer) -> list[tuple[Block, str]]:
    term = block.terminator
    if term is None:
        return []
    if term.opcode == "br" and len(term.operands) == 3:
        _, t, f = term.operands
        return [(t, "T"), (f, "F")]  # type: ignore[list-item]
    if term.opcode == "switch":
        default: Block = term.operands[1]  # type: ignore[assignment]
        return [(default, "default")] + [(b, c.text) for c, b in term.cases]
    return [(s, "") for s in term.successors()]


def _tooltip(block: Block, source: Callable[[Instruction], str | None] | None) -> str:
    if source is None:
        return ""
    seen: list[str] = []
    for inst in block.instructions:
        loc = source(inst)
        if loc and loc not in seen:
            seen.append(loc)
    return f', tooltip="{_esc_attr(", ".join(seen))}"' if seen else ""


def _legend(with_derivative: bool) -> str:
    items = [(ACTIVE, "active (primal)"), (SHADOW, "pointer into shadowed memory")]
    if with_derivative:
        items.append((DERIVED, "derivative code in a primal block"))
    rows = "".join(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{c}">{_esc_html(t)}</FONT></TD></TR>'
                   for c, t in items)
    rows += f'<TR><TD ALIGN="LEFT" BGCOLOR="{ACTIVE_FILL}">block with active code</TD></TR>'
    if with_derivative:
        rows += (f'<TR><TD ALIGN="LEFT" BGCOLOR="{DERIVED_FILL}">block of the reverse pass '
                 "or bookkeeping</TD></TR>")
    rows += '<TR><TD ALIGN="LEFT">dashed edge: loop back edge</TD></TR>'
    return f'<TABLE BORDER="0" CELLSPACING="0">{rows}</TABLE>'


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _esc_html(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _esc_attr(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
