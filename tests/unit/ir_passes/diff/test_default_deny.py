"""Default deny: every opcode the IR parser knows and every intrinsic with a rule or a record,
on a float and on a SIMD vector operand, is either differentiated by both synthesizers or
refused with an `UnsupportedError` naming it; nothing is inactive because of its type.

Each case is a tiny C-ABI function `void f(ptr %out, ptr %a, ptr %b)` (all `dup`) that loads
active values of type T (`double` or `<2 x double>`) from `a` and `b`, applies the operation,
and stores a T into `out`, differentiated through `enzyme_py.c` (the IR front end). A case that
is differentiated is also run: forward and reverse must agree (`<J t, w> == <t, J^T w>`) and,
for operations with a derivative, J t must not vanish (a dropped derivative would pass the
inner product with zeros on both sides).
"""
from __future__ import annotations

import numpy as np
import pytest

from ir_passes.diff.rules import all_rules
from ir_passes.errors import UnsupportedError
from ir_passes.ir.parse_cursor import BINARY, CASTS
from ir_passes.ir.parse_instructions import _HANDLERS
from tests.unit.ir_passes.diff.rules.test_rule_table import CASES
from tests.unit.ir_passes.diff.rules.test_vector_rules import REDUCTION_CASES

TYPES = {"double": ("double", "i64", "i1", "f64"), "vector": ("<2 x double>", "<2 x i64>",
                                                              "<2 x i1>", "v2f64")}
DIFF, ZERO, REFUSE = "differentiated", "no derivative", "refused"


def _body(op: str, kind: str) -> tuple[str, str] | None:
    """(outcome expected, IR lines computing %r of type T from %x, %y) for opcode `op`."""
    T, I, C, _ = TYPES[kind]
    vec = kind == "vector"
    lanes = "<2 x i32> <i32 1, i32 0>"
    if op in ("fadd", "fsub", "fmul", "fdiv", "frem"):
        return DIFF, f"%r = {op} {T} %x, %y"
    if op in ("add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr",
              "and", "or", "xor"):
        rhs = "splat (i64 1)" if vec else "1"
        return ZERO, (f"%i = fptosi {T} %x to {I}\n%j = {op} {I} %i, {rhs}\n"
                      f"%k = sitofp {I} %j to {T}\n%r = fadd {T} %k, %y")
    if op == "fneg":
        return DIFF, f"%r = fneg {T} %x"
    if op in ("fcmp", "icmp"):
        cmp = f"%c = fcmp olt {T} %x, %y" if op == "fcmp" else \
            f"%i = fptosi {T} %x to {I}\n%c = icmp slt {I} %i, {'zeroinitializer' if vec else 0}"
        return DIFF, f"{cmp}\n%r = select {C} %c, {T} %x, {T} %y"
    if op in ("fptosi", "fptoui"):
        return ZERO, f"%i = {op} {T} %x to {I}\n%k = sitofp {I} %i to {T}\n%r = fadd {T} %k, %y"
    if op in ("sitofp", "uitofp", "trunc", "zext", "sext"):
        small = "<2 x i32>" if vec else "i32"
        conv = {"trunc": f"%i = fptosi {T} %x to {I}\n%s = trunc {I} %i to {small}\n"
                         f"%k = sitofp {small} %s to {T}",
                "zext": f"%s = fptosi {T} %x to {small}\n%i = zext {small} %s to {I}\n"
                        f"%k = sitofp {I} %i to {T}",
                "sext": f"%s = fptosi {T} %x to {small}\n%i = sext {small} %s to {I}\n"
                        f"%k = sitofp {I} %i to {T}"}.get(op, f"%i = fptosi {T} %x to {I}\n"
                                                           f"%k = {op} {I} %i to {T}")
        return ZERO, f"{conv}\n%r = fadd {T} %k, %y"
    if op in ("fpext", "fptrunc"):
        F = "<2 x float>" if vec else "float"
        return DIFF, f"%f = fptrunc {T} %x to {F}\n%r = fpext {F} %f to {T}"
    if op == "bitcast":
        if vec:     # float lanes that change type: refused
            return REFUSE, ("%z = fadd <2 x double> %x, %y\n"
                            "%f = bitcast <2 x double> %z to <4 x float>\n"
                            "%g = fmul <4 x float> %f, %f\n"
                            "%r = bitcast <4 x float> %g to <2 x double>")
        return DIFF, "%v = bitcast double %x to <1 x double>\n%w = fmul <1 x double> %v, %v\n" \
                     "%r = bitcast <1 x double> %w to double"
    if op in ("ptrtoint", "inttoptr", "addrspacecast", "getelementptr", "alloca"):
        return ZERO, ("%p = getelementptr i8, ptr %b, i64 0\n%q = addrspacecast ptr %p to "
                      "ptr addrspace(1)\n%n = ptrtoint ptr addrspace(1) %q to i64\n"
                      "%s = alloca double\n%u = inttoptr i64 %n to ptr\n"
                      f"%r = fmul {T} %x, %y")
    if op == "select":
        return DIFF, f"%c = fcmp ogt {T} %x, %y\n%r = select {C} %c, {T} %x, {T} %y"
    if op == "freeze":
        return DIFF, f"%f = freeze {T} %x\n%r = fmul {T} %f, %y"
    if op in ("extractvalue", "insertvalue"):
        return DIFF, (f"%s = insertvalue {{ {T}, {T} }} poison, {T} %x, 0\n"
                      f"%t = insertvalue {{ {T}, {T} }} %s, {T} %y, 1\n"
                      f"%u = extractvalue {{ {T}, {T} }} %t, 0\n"
                      f"%v = extractvalue {{ {T}, {T} }} %t, 1\n%r = fmul {T} %u, %v")
    if op in ("extractelement", "insertelement", "shufflevector"):
        if not vec:
            return DIFF, ("%v = insertelement <2 x double> zeroinitializer, double %x, i32 1\n"
                          "%w = shufflevector <2 x double> %v, <2 x double> poison, " + lanes +
                          "\n%e = extractelement <2 x double> %w, i32 0\n%r = fmul double %e, %y")
        return DIFF, ("%e = extractelement <2 x double> %x, i32 1\n"
                      "%v = insertelement <2 x double> %y, double %e, i32 0\n"
                      "%r = shufflevector <2 x double> %v, <2 x double> %x, <2 x i32> <i32 3, i32 0>")
    if op in ("phi", "br", "switch", "unreachable", "ret"):
        return DIFF, (f"%c = fcmp olt {T} %x, %y\n%c0 = {'extractelement <2 x i1> %c, i32 0' if vec else 'and i1 %c, true'}\n"
                      "%k = zext i1 %c0 to i32\n"
                      "switch i32 %k, label %other [ i32 0, label %zero i32 7, label %never ]\n"
                      "never:\nunreachable\nzero:\nbr label %join\nother:\n"
                      f"%m = fmul {T} %x, %x\nbr label %join\njoin:\n"
                      f"%r = phi {T} [ %y, %zero ], [ %m, %other ]")
    if op == "load" or op == "store":
        return DIFF, f"%r = fmul {T} %x, %y"
    if op == "call":
        return DIFF, f"%r = call {T} @llvm.sqrt.{TYPES[kind][3]}({T} %x)"
    if op == "fence":
        return DIFF, f"fence seq_cst\n%r = fmul {T} %x, %y"
    if op == "atomicrmw":
        return REFUSE, (f"%old = atomicrmw fadd ptr %out, {T} %x seq_cst, align 16\n"
                        f"%r = fmul {T} %old, %y")
    if op == "cmpxchg":
        return REFUSE, ("%bits = load i64, ptr %a\n%pair = cmpxchg ptr %out, i64 0, i64 %bits "
                        f"seq_cst seq_cst\n%r = fmul {T} %x, %y")
    return None


def _module(body: str, kind: str, decls: str = "") -> str:
    T = TYPES[kind][0]
    lines = "\n".join("  " + ln if not ln.endswith(":") else ln for ln in body.split("\n"))
    return (f"{decls}\ndefine void @f(ptr noalias %out, ptr noalias %a, ptr noalias %b) {{\n"
            f"entry:\n  %x = load {T}, ptr %a, align 8\n  %y = load {T}, ptr %b, align 8\n"
            f"{lines}\n  store {T} %r, ptr %out, align 8\n  ret void\n}}\n")


OPCODES = sorted(set(_HANDLERS) | BINARY | CASTS)


def _intrinsic_body(name: str, kind: str) -> tuple[str, str]:
    """A call of rule `name` (an `llvm.` intrinsic) on T operands (an i32 exponent for powi)."""
    T, _, _, suffix = TYPES[kind]
    c = CASES[name]
    args = ", ".join(f"i32 {2 + i}" if i in c.ints else f"{T} {'%x' if i % 2 == 0 else '%y'}"
                     for i in range(len(c.points[0])))
    ints = "".join(".i32" for _ in c.ints)
    return DIFF, f"%r = call {T} @{name}.{suffix}{ints}({args})"


INTRINSICS = sorted(n for n in all_rules() if n.startswith("llvm.") and n in CASES)
NONDIFF_INTRINSICS = {n for n in INTRINSICS if all_rules()[n].nondiff}

# Intrinsics without a rule or record: refused, naming the call (`kind` -> IR lines).
UNKNOWN = {
    ("llvm.masked.load", "vector"): "%r = call <2 x double> @llvm.masked.load.v2f64.p0(ptr %a, "
                                    "<2 x i1> <i1 true, i1 false>, <2 x double> %y)",
    ("llvm.ldexp", "double"): "%n = fptosi double %y to i32\n"
                              "%r = call double @llvm.ldexp.f64.i32(double %x, i32 %n)",
    ("llvm.ldexp", "vector"): "%n = fptosi <2 x double> %y to <2 x i32>\n"
                              "%r = call <2 x double> @llvm.ldexp.v2f64.v2i32(<2 x double> %x, "
                              "<2 x i32> %n)",
    ("llvm.sincos", "double"): "%s = call { double, double } @llvm.sincos.f64(double %x)\n"
                               "%r = extractvalue { double, double } %s, 0",
    ("llvm.sincos", "vector"): "%s = call { <2 x double>, <2 x double> } "
                               "@llvm.sincos.v2f64(<2 x double> %x)\n"
                               "%r = extractvalue { <2 x double>, <2 x double> } %s, 1",
}


def _derive(text: str, mode: str):
    from enzyme_py.c import derive
    return derive(text, "f", "dup,dup,dup", mode=mode)


def _check(text: str, expected: str, name: str) -> None:
    """Both modes: differentiated (and consistent, non-vanishing when a derivative exists) or
    refused naming `name`, as `expected` says."""
    if expected == REFUSE:
        for mode in ("forward", "reverse"):
            with pytest.raises(UnsupportedError, match=name):
                _derive(text, mode)
        return
    fwd, rev = _derive(text, "forward"), _derive(text, "reverse")
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.2, 0.9, 2), rng.uniform(0.2, 0.9, 2)   # inside every rule's domain
    ta, tb, w = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
    out, jt = np.zeros(2), np.zeros(2)
    fwd(out, jt, a.copy(), ta.copy(), b.copy(), tb.copy())
    ga, gb, seed = np.zeros(2), np.zeros(2), w.copy()
    rev(np.zeros(2), seed, a.copy(), ga, b.copy(), gb)
    lhs, rhs = float(jt @ w), float(ta @ ga + tb @ gb)
    rtol = 1e-6 if "float" in text else 1e-12       # float32 tangents and adjoints
    assert abs(lhs - rhs) <= rtol * (1 + abs(lhs)), f"{name}: <J t, w> {lhs} vs <t, J^T w> {rhs}"
    if expected == DIFF:
        assert np.any(jt != 0), f"{name}: derivative vanished (J t = {jt})"


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("op", OPCODES)
def test_every_opcode_is_differentiated_or_refused(op: str, kind: str):
    case = _body(op, kind)
    assert case is not None, f"opcode '{op}' has no case here: add one"
    expected, body = case
    _check(_module(body, kind), expected, op)


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("name", INTRINSICS)
def test_every_intrinsic_rule_is_differentiated(name: str, kind: str):
    _, body = _intrinsic_body(name, kind)
    _check(_module(body, kind), ZERO if name in NONDIFF_INTRINSICS else DIFF, name)


@pytest.mark.parametrize("name", sorted(REDUCTION_CASES))
def test_every_vector_reduction_is_differentiated(name: str):
    start = "double %y0, " if REDUCTION_CASES[name][0] else ""
    body = (("%y0 = extractelement <2 x double> %y, i32 0\n" if start else "") +
            f"%s = call double @{name}.v2f64({start}<2 x double> %x)\n"
            "%r = insertelement <2 x double> %y, double %s, i32 1")
    _check(_module(body, "vector"), DIFF, name)


@pytest.mark.parametrize("name,kind", sorted(UNKNOWN))
def test_unknown_intrinsics_are_refused_by_name(name: str, kind: str):
    _check(_module(UNKNOWN[name, kind], kind), REFUSE, name)


def test_named_struct_values_are_refused():
    text = "%struct.pair = type { double, double }\n" + _module(
        "%s = load %struct.pair, ptr %a, align 8\ncall void @sink(%struct.pair %s)\n"
        "%r = fmul double %x, %y", "double", "declare void @sink(%struct.pair)")
    _check(text, REFUSE, "named struct type %struct.pair")


def test_integer_vector_copies_of_floats_are_not_dropped():
    """`<2 x i64>` loads of float memory copied into float memory: forward copies the tangent
    bits with them; reverse refuses them by name (never zero)."""
    text = _module("%v = load <2 x i64>, ptr %b, align 8\nstore <2 x i64> %v, ptr %out, "
                   "align 8\n%r = fmul double %x, %y", "double").replace(
        "store double %r, ptr %out", "store double %r, ptr %a")
    fwd = _derive(text, "forward")
    b, tb, out, jt = np.array([0.3, 0.7]), np.array([0.25, -2.0]), np.zeros(2), np.zeros(2)
    fwd(out, jt, np.ones(2), np.zeros(2), b, tb.copy())
    np.testing.assert_array_equal(jt, tb)
    with pytest.raises(UnsupportedError, match="integer load from shadowed"):
        _derive(text, "reverse")


def test_vector_values_in_vector_forward_mode_are_refused():
    """Width k > 1 gives every float a `<k x T>` tangent; a SIMD vector's would be a vector
    of vectors: refused by name (the same function on doubles is differentiated)."""
    from enzyme_py.inspection import inspect
    scalar = _module("%r = fmul double %x, %y", "double")
    assert "define" in inspect(scalar, "dup,dup,dup", "forward", func="f", width=2)
    with pytest.raises(UnsupportedError, match=r"SIMD vector <2 x double> of active values in "
                                               r"vector forward mode \(width 2\)"):
        inspect(_module("%r = fmul <2 x double> %x, %y", "vector"), "dup,dup,dup", "forward",
                func="f", width=2)
