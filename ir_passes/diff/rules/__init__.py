"""The derivative rule registry (importing this package registers every rule)."""
from . import arithmetic, math, reductions  # noqa: F401  (registration side effects)
from .registry import Rule, all_rules, defrule, defzero, lookup

__all__ = ["Rule", "all_rules", "defrule", "defzero", "lookup"]
