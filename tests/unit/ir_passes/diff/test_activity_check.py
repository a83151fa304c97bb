"""The shared activity check, as the synthesizers apply it to a `DiffSpec` (`activity_seeds`):
the same messages the Numba and IR front ends give, for direct users of ir_passes."""
import re

import pytest

from ir_passes.diff.seeds import activity_seeds
from ir_passes.diff.spec import Activity, DiffSpec, ParamSpec
from ir_passes.errors import ActivityError
from ir_passes.ir.parser import parse_module

A, C, D = Activity.ACTIVE, Activity.CONST, Activity.DUP

ARGS = ("ptr %retptr, ptr %excinfo, double %x, i64 %n, ptr %a.meminfo, ptr %a.parent, "
        "i64 %a.nitems, i64 %a.itemsize, ptr %a.data, i64 %a.shape, i64 %a.stride")
FN = parse_module(f"define i32 @f({ARGS}) {{\nentry:\n  store double %x, ptr %retptr\n"
                  "  ret i32 0\n}\n").functions["f"]


def _spec(mode: str, x: Activity, n: Activity, a: Activity) -> DiffSpec:
    params = (ParamSpec("x", x, (2,)), ParamSpec("n", n, (3,)),
              ParamSpec("a", a, tuple(range(4, 11)), 1))
    return DiffSpec(primal="f", name="d_f", mode=mode, params=params, ret=C, ret_type=None)


@pytest.mark.parametrize("mode, acts, message", [
    ("reverse", (D, C, C), "parameter 'x' is a float passed by value (double): in reverse mode "
     "mark it 'active' to get its gradient returned"),
    ("forward", (A, C, C), "parameter 'x': 'active' is for reverse mode; in forward mode mark "
     "it 'dup' and pass its tangent"),
    ("reverse", (C, A, C), "parameter 'n' has type i64: only float scalars and float arrays "
     "can be differentiated; mark it 'const' if it is not differentiated"),
    ("reverse", (C, C, A), "parameter 'a' is an array: arrays are passed by reference, mark "
     "it 'dup' and pass a shadow array"),
])
def test_activity_that_does_not_fit_the_type(mode, acts, message):
    with pytest.raises(ActivityError, match=f"^{re.escape(message)}$"):
        activity_seeds(FN, _spec(mode, *acts))


@pytest.mark.parametrize("mode, x", [("reverse", A), ("forward", D)])
def test_fitting_activities_seed_the_float_and_the_array_data(mode, x):
    varied, shadowed = activity_seeds(FN, _spec(mode, x, C, D))
    assert [a.name for a in varied] == ["x"]
    assert [a.name for a in shadowed] == ["a.data"]
