"""The derivative rule registry (importing this package registers every rule)."""
from . import arithmetic, math, reductions  # noqa: F401  (registration side effects)
from .registry import Arm, Rule, all_rules, defrule, defselect, defzero, lookup

__all__ = ["Arm", "Rule", "all_rules", "defrule", "defselect", "defzero", "lookup"]
