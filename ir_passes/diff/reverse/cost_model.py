"""The cost model deciding how the reverse pass keeps each value it needs, as the tape
report prints it (`--stage tape`): the cheapest applicable way wins, in this order."""
from __future__ import annotations

from .plan import RECOMPUTE_COST
from .tape import SLOT

RULES = (
    "direct: constants, arguments, values computed once on every path to the return (free)",
    "iv: induction variables (start + step * counter; start and step defined outside the "
    "loop) (a multiply-add per use)",
    f"recompute: chains of up to {RECOMPUTE_COST} pure integer/address/comparison or "
    f"{RECOMPUTE_COST // 2} float-arithmetic instructions (a float one counts twice), or loads of memory the function never writes (or, in one call, does not write after "
    "the load), whose leaves are free or hoisted "
    "(cloned per use; LLVM hoists invariant parts out of the reverse loops); in its own "
    "block, a product of two active values, whose adjoint reads them anyway; a float add, "
    "subtract, multiply or negation of one math call's result, kept anyway, and values it "
    "can rebuild (a sigmoid's 1 + exp(-x) beside exp(-x)); and, with "
    "vector math, a libmvec-vectorised math call in a one-block loop varying with every "
    "loop around it (a vector call per use against 8 bytes per element to memory and back)",
    "spill: values computed at most once per call (one stack slot per call)",
    f"hoist: values invariant in the loops around the use ({SLOT} bytes per run of the "
    "outermost such loop, taped at its exits, read from a stack slot by its reverse)",
    f"table: values invariant in the outermost loop around them, inside loops with trip "
    f"counts known when it starts ({SLOT} bytes per iteration of those inner loops, stored "
    "by the forward pass, read back at the same slot; in one call only)",
    f"tape: everything else: math-call results, loads of written memory, loop-carried "
    f"values ({SLOT} bytes, an i1 one, an i32 or float four, per execution of the block that "
    "needs it)",
    "loops whose trip count is known at entry and that push only in their own blocks "
    "reserve trips * frame bytes before they start: their pushes are plain stores",
)


def cost_model_lines() -> list[str]:
    """The rules as `;` comment lines."""
    return ["; placement (cheapest first):"] + [f";   {i + 1}. {r}" for i, r in
                                                 enumerate(RULES[:-1])] + [f";   {RULES[-1]}"]
