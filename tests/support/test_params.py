"""The tiers of ``tests/_params.py``: which variants a seed runs, that consecutive seeds run
them all, that the base kernels of a battery always run, and the order work units go out in."""
from __future__ import annotations

import numpy as np
import pytest

from tests import _params
from tests.support.kernel import Kernel


class _Item:
    """What ``select_variants`` and ``heavy_first`` read of a pytest item."""

    def __init__(self, nodeid: str, marks=(), group: str | None = None):
        self.nodeid = nodeid
        self.marks = [m.mark for m in marks]
        if group is not None:
            self.marks.append(pytest.mark.xdist_group(name=group).mark)

    def iter_markers(self, name):
        return (m for m in self.marks if m.name == name)


def _items(params, test="t.py::test"):
    return [_Item(f"{test}[{p.id}]", p.marks) for p in params]


def _ids(items):
    return [i.nodeid for i in items]


def test_a_seed_keeps_its_window_and_seeds_cover_every_variant():
    params = _params.sampled([pytest.param(v, id=f"v{v}") for v in range(7)], keep=2)
    runs = [_params.select_variants(_items(params), seed)[0] for seed in range(4)]
    assert all(len(kept) == 2 for kept in runs)
    assert _ids(runs[1]) == _ids(_params.select_variants(_items(params), 1)[0])
    assert set().union(*map(_ids, runs)) == set(_ids(_items(params)))      # ceil(7 / 2) seeds


def test_two_tests_over_the_same_variants_pick_the_same_ones():
    ids = [pytest.param(v, id=f"k{v}") for v in range(5)]
    items = _items(_params.sampled(ids), "a.py::fwd") + _items(_params.sampled(ids), "a.py::rev")
    kept, dropped = _params.select_variants(items, seed=3)
    picked = {test: {i.nodeid.split("[")[1] for i in kept if test in i.nodeid}
              for test in ("fwd", "rev")}
    assert picked["fwd"] == picked["rev"] and len(picked["fwd"]) == 1
    assert len(dropped) == 8


def test_unmarked_and_named_cases_always_run():
    base = _Item("t.py::test[base]")
    variants = _items(_params.sampled([pytest.param(v, id=f"v{v}") for v in range(4)]))
    kept, dropped = _params.select_variants([base, *variants], seed=0)
    assert base in kept and len(kept) == 2
    named = dropped[0].nodeid.split("::")[1]
    kept, _ = _params.select_variants([base, *variants], seed=0, named=[named])
    assert dropped[0] in kept and len(kept) == 3


def test_an_item_with_two_variant_marks_runs_when_both_are_picked():
    kernels = _params.sampled([pytest.param(v, id=f"k{v}") for v in range(4)], family="k")
    seeds = _params.sampled([0, 1], family="seed")
    items = [_Item(f"t.py::test[{k.id}-{s.id}]", [*k.marks, *s.marks])
             for k in kernels for s in seeds]
    for seed in range(3):
        kept, _ = _params.select_variants(items, seed)
        picked_k = _params.select_variants(_items(kernels), seed)[0]
        picked_s = _params.select_variants(_items(seeds), seed)[0]
        assert len(kept) == 1 and len(picked_k) == len(picked_s) == 1
        assert kept[0].nodeid == (f"t.py::test[{picked_k[0].nodeid.split('[')[1][:-1]}-"
                                  f"{picked_s[0].nodeid.split('[')[1][:-1]}]")


def test_kernel_variants_are_dtype_layout_activity_changes_of_a_base():
    def f(a):
        return a.sum()

    def g(a):
        return a.sum()

    kernels = [Kernel("f", f, lambda r: (np.ones(3),)),
               Kernel("f_const", f, lambda r: (np.ones(3),), const=(0,)),
               Kernel("f_f32", f, lambda r: (np.ones(3, np.float32),)),
               Kernel("f_long", f, lambda r: (np.ones(4),)),              # another size
               Kernel("f_wide", f, lambda r: (np.ones((2, 3)),)),         # other shapes: a base
               Kernel("g", g, lambda r: (np.ones(3),))]
    marks = _params.kernel_variants(kernels)
    assert [n for n, m in marks.items() if not m] == ["f", "f_wide", "g"]
    family = "f_const|f_f32|f_long"
    assert [m[0].mark.args for n, m in marks.items() if m] == [
        (family, "f_const", 1), (family, "f_f32", 1), (family, "f_long", 1)]


def test_heavy_units_go_first_and_units_stay_together(monkeypatch, tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text('{"heavy": 50.0, "t.py::test_slow": 20.0}')
    monkeypatch.setattr(_params, "COSTS_FILE", str(costs))
    items = [_Item("t.py::test_a"), _Item("t.py::test_b[1]", group="heavy"),
             _Item("t.py::test_slow"), _Item("t.py::test_b[2]", group="heavy"),
             _Item("t.py::test_c")]
    assert _ids(_params.heavy_first(items)) == [
        "t.py::test_b[1]", "t.py::test_b[2]", "t.py::test_slow", "t.py::test_a", "t.py::test_c"]


def test_costs_are_recorded_per_work_unit(tmp_path):
    costs: dict[str, float] = {}
    for nodeid, seconds in [("t.py::a[x@y]@grp", 1.5), ("t.py::a[z]@grp", 0.5),
                            ("t.py::b[x@y]", 2.0), ("t.py::c", 0.2)]:
        _params.record_cost(costs, nodeid, seconds)
    assert costs == {"grp": 2.0, "t.py::b[x@y]": 2.0, "t.py::c": 0.2}
    _params.write_costs(costs, str(tmp_path / "c.json"))
    assert (tmp_path / "c.json").read_text().split() == ['{', '"grp":', '2.0,',
                                                         '"t.py::b[x@y]":', '2.0', '}']
