"""Control-flow facts of a function: predecessors, reverse post-order, dominators, loops."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.values import Block, Function


def reverse_post_order(fn: Function) -> list[Block]:
    """Blocks reachable from the entry, every block after its dominators."""
    seen: set[int] = set()
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(fn.entry, 0)]
    seen.add(id(fn.entry))
    while stack:
        block, i = stack.pop()
        succs = block.successors()
        if i < len(succs):
            stack.append((block, i + 1))
            nxt = succs[i]
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, 0))
        else:
            order.append(block)
    order.reverse()
    return order


def dominators(fn: Function) -> dict[Block, Block | None]:
    """Immediate dominator of every reachable block (Cooper, Harvey & Kennedy)."""
    rpo = reverse_post_order(fn)
    index = {b: i for i, b in enumerate(rpo)}
    preds = fn.predecessors()
    idom: dict[Block, Block | None] = {rpo[0]: rpo[0]}
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = None
            for p in preds[b]:
                if p in idom:
                    new = p if new is None else _intersect(p, new, idom, index)
            if idom.get(b) is not new:
                idom[b] = new
                changed = True
    idom[rpo[0]] = None
    return idom


def _intersect(a: Block, b: Block, idom: dict, index: dict) -> Block:
    while a is not b:
        while index[a] > index[b]:
            a = idom[a]
        while index[b] > index[a]:
            b = idom[b]
    return a


def dominates(idom: dict[Block, Block | None], a: Block, b: Block) -> bool:
    node: Block | None = b
    while node is not None:
        if node is a:
            return True
        node = idom.get(node)
    return False


@dataclass(eq=False)
class Loop:
    header: Block
    blocks: set[Block] = field(default_factory=set)
    latches: list[Block] = field(default_factory=list)
    parent: Loop | None = None

    @property
    def depth(self) -> int:
        return 1 + (self.parent.depth if self.parent else 0)


def find_loops(fn: Function) -> list[Loop]:
    """Natural loops (by back edges to a dominating header), nested via `parent`."""
    idom = dominators(fn)
    preds = fn.predecessors()
    loops: dict[Block, Loop] = {}
    for block in reverse_post_order(fn):
        for succ in block.successors():
            if dominates(idom, succ, block):
                loop = loops.setdefault(succ, Loop(succ))
                loop.latches.append(block)
                work = [block]
                loop.blocks.add(succ)
                while work:
                    b = work.pop()
                    if b not in loop.blocks:
                        loop.blocks.add(b)
                        work.extend(preds[b])
    ordered = sorted(loops.values(), key=lambda l: len(l.blocks))
    for i, inner in enumerate(ordered):
        for outer in ordered[i + 1:]:
            if inner.header in outer.blocks:
                inner.parent = outer
                break
    return ordered


def blocks_reaching(fn: Function, targets: list[Block]) -> set[Block]:
    """Blocks from which some block of `targets` is reachable (targets included)."""
    preds = fn.predecessors()
    seen = set(targets)
    work = list(targets)
    while work:
        for p in preds[work.pop()]:
            if p not in seen:
                seen.add(p)
                work.append(p)
    return seen


def other_successor(branch: Block, target: Block) -> Block | None:
    """The other successor of a two-way branch to `target`."""
    succs = branch.successors()
    if len(succs) != 2 or target not in succs or succs[0] is succs[1]:
        return None
    return succs[1] if succs[0] is target else succs[0]


def decides(idom: dict[Block, Block | None], d: Block, side: Block, block: Block) -> bool:
    """Whether, when `block` is entered from `side`, the last run of `d` took `d`'s other
    branch (not the one to `block`): every path to `side` runs `d` (it dominates `side`),
    none runs from `block` to `side` without running `d` again, and the other branch
    reaches `side`. (A triangle d -> side -> block is the smallest case.)"""
    start = other_successor(d, block)
    return (start is not None and dominates(idom, d, side)
            and not reaches_avoiding(block, side, (d,))
            and reaches_avoiding(start, side, (d, block)))


def reaches_avoiding(start: Block, goal: Block, avoid: tuple[Block, ...]) -> bool:
    """Whether `goal` is reached from `start` on paths through none of `avoid`: then
    entering `goal` means the branch into `start` was taken since a block of `avoid` ran."""
    if start in avoid:
        return False
    seen, work = {start}, [start]
    while work:
        blk = work.pop()
        if blk is goal:
            return True
        for succ in blk.successors():
            if succ not in seen and succ not in avoid:
                seen.add(succ)
                work.append(succ)
    return False
