"""What front ends (enzyme_py's Numba, IR and C front ends) use of ir_passes, in one place.

A front end describes the function to differentiate (`DiffSpec`, `ParamSpec`, checked with
`check_activities`), wraps it in a `Target` and asks `Stages` for the derivative; it may
register rules (`defrule`) and read the analyses for its inspection tools. The IR data model
and its reader, printer and builder (`ir_passes.ir`) are public on their own, as are the
errors (`ir_passes.errors`). The model of known functions (`ir_passes.known`) is imported
from there while it is being reshaped.
"""
from .analysis.activity import ActivityInfo
from .analysis.cfg_dot import cfg_dot
from .canonicalize import canonicalize_module, parse, run_module_passes
from .diagnostics import Diagnostics
from .diff.activity_check import (ParamKind, ParamType, check_activities, check_mode,
                                  parse_activity)
from .diff.returns import find_return_type
from .diff.reverse.parked_shadows import release_symbol
from .diff.reverse.plan import written_bases
from .diff.reverse.tape_captured import differentiable_tapes
from .diff.rules import defrule, lookup
from .diff.rules.registry import Partials
from .diff.spec import Activity, DiffSpec, ParamSpec, ReturnLeaf, SplitSpec
from .known.array_layout import DATA as ARRAY_DATA
from .known.memory import TAPE_ALLOCATE
from .pipeline import ALIASES, STAGES, StageError, Stages, Target, derivative_symbol, stage_name
from .source_lines import source_summary

__all__ = ["ALIASES", "ARRAY_DATA", "Activity", "ActivityInfo", "Diagnostics", "DiffSpec",
           "ParamKind", "ParamSpec", "ParamType", "Partials", "ReturnLeaf", "SplitSpec", "STAGES",
           "StageError", "Stages", "TAPE_ALLOCATE", "Target", "canonicalize_module", "cfg_dot",
           "check_activities", "check_mode", "defrule", "derivative_symbol",
           "differentiable_tapes", "find_return_type", "lookup", "parse", "parse_activity",
           "release_symbol", "run_module_passes", "source_summary", "stage_name",
           "written_bases"]
