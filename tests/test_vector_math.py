"""Vector math (glibc's libmvec through VFABI call-site annotations, `ir_passes.vector_math`):
derivatives are annotated by default and LLVM's vectoriser calls `_ZGV...` variants;
`vector_math=False` keeps scalar libm. Accuracy against scalar libm (<= 4 ulp, special values
identical), derivatives still right (finite differences, inner product), and the annotation
is a no-op where libmvec is missing."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import llvmlite.binding as llvm
import numba

from enzyme_py import autodiff, derive_diff, inspect
from ir_passes import vector_math
from ir_passes.canonicalize import optimize
from ir_passes.vector_math import annotate, libmvec_variants, vector_calls
from tests.support.gradcheck import check_inner_product, check_reverse

HAS_LIBMVEC = bool(libmvec_variants())
needs_libmvec = pytest.mark.skipif(not HAS_LIBMVEC, reason="no glibc libmvec on this host "
                                   "(x86-64 Linux only): vector math is off")
scalar_derive = functools.partial(derive_diff, vector_math=False)


def sinsum(x):
    s = 0.0
    for i in range(x.shape[0]):
        v = math.sin(x[i])
        s += v * v * x[i]
    return s


@functools.cache
def d_sinsum(vector_math: bool):
    d = derive_diff(sinsum, "d_sinsum_vm" if vector_math else "d_sinsum_scalar", ("dup",),
                    vector_math=vector_math)
    x = np.linspace(-3.0, 3.0, 1001)
    dx = np.zeros_like(x)
    d(x, dx)
    return d, x, dx


# ---------------------------------------------------------------- what is compiled

@needs_libmvec
def test_optimized_derivative_calls_a_vector_variant():
    d, _, _ = d_sinsum(True)
    calls = vector_calls(d.enzyme.inspect("optimized"))
    assert any(c.endswith("_cos") for c in calls), calls
    # what Numba linked (the wrapper's final module holds the derivative) calls it too
    linked = d.inspect_llvm(d.signatures[0])
    assert any(c.endswith("_cos") for c in vector_calls(linked))


def test_vector_math_false_calls_scalar_libm_only():
    d, _, _ = d_sinsum(False)
    optimized = d.enzyme.inspect("optimized")
    assert vector_calls(optimized) == []
    assert "@llvm.cos.f64(" in optimized
    assert vector_calls(d.inspect_llvm(d.signatures[0])) == []


@needs_libmvec
def test_inspect_follows_the_derivatives_setting():
    on = inspect(sinsum, ("dup",), stage="optimized", types="float64[::1]")
    off = inspect(sinsum, ("dup",), stage="optimized", types="float64[::1]", vector_math=False)
    assert vector_calls(on) and not vector_calls(off)
    d, _, _ = d_sinsum(False)
    assert not vector_calls(inspect(d, ("dup",), stage="optimized", types="float64[::1]"))


@pytest.mark.parametrize("vm", [True, False])
def test_sinsum_gradient_is_right(vm):
    derive = None if vm else scalar_derive
    check_reverse(sinsum, (np.linspace(-3.0, 3.0, 37),), derive=derive)
    check_inner_product(sinsum, (np.linspace(-3.0, 3.0, 37),), derive=derive)
    _, x, dx = d_sinsum(vm)
    exact = 2.0 * np.sin(x) * np.cos(x) * x + np.sin(x) ** 2
    np.testing.assert_allclose(dx, exact, rtol=1e-13, atol=1e-14)


def test_vector_math_must_be_a_bool():
    with pytest.raises(TypeError, match=r"vector_math must be True or False, not 'no'"):
        derive_diff(sinsum, None, ("dup",), vector_math="no")


def test_autodiff_passes_vector_math_on():
    f = autodiff(sinsum, args=("dup",), vector_math=False)
    assert f.derivative.enzyme.vector_math is False
    assert autodiff(sinsum, args=("dup",)).derivative.enzyme.vector_math is True


# ---------------------------------------------------------------- accuracy against scalar libm

def sin_cos(x, y, z):
    for i in range(x.shape[0]):
        y[i] = math.sin(x[i])
        z[i] = math.cos(x[i])


def exp_log(x, y, z):
    for i in range(x.shape[0]):
        y[i] = math.exp(x[i])
        z[i] = math.log(x[i])


def tanh_pow(x, y, z):
    for i in range(x.shape[0]):
        y[i] = math.tanh(x[i])
        z[i] = math.pow(x[i], 1.5)


SPECIAL = [0.0, -0.0, 1e300, -1e300, 1.7e308, -1.7e308, 5e-324, -5e-324, 1e-310, -1e-310,
           2.2250738585072014e-308, math.inf, -math.inf, math.nan, -1.0, -2.5, 1.0, 709.78,
           710.0, -745.1, -746.0, 1e5, -1e5, 1e22, -1e22, 20.0, -20.0, 1e-8, -1e-8]


def accuracy_inputs(n: int = 4096) -> np.ndarray:
    """Random values over many magnitudes, both signs, with every special value placed at
    several positions (so that they land in vector lanes, not only in a scalar remainder)."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-10.0, 10.0, n // 2),
                        np.exp(rng.uniform(-40.0, 40.0, n // 2)) * rng.choice([-1.0, 1.0],
                                                                              n // 2)])
    rng.shuffle(x)
    for k, v in enumerate(SPECIAL):
        x[[17 * k + 3, 1000 + 31 * k, n - 9 - 5 * k]] = v
    return x


def ulp_errors(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the last place of ref (0 where both are the same non-finite
    value, inf where they differ in kind: nan vs number, inf vs finite, signed zeros)."""
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - ref) / np.spacing(np.abs(ref))
    same = (got == ref) & (np.signbit(got) == np.signbit(ref))
    err[same | (np.isnan(got) & np.isnan(ref))] = 0.0
    err[np.isnan(err) | (np.isinf(got) != np.isinf(ref))] = np.inf
    return err


@functools.cache
def forward_results(kernel, vm: bool):
    df = derive_diff(kernel, f"fwd_{kernel.__name__}_{vm}", ("dup",) * 3, mode="forward",
                     vector_math=vm)
    x = accuracy_inputs()
    outs = [np.zeros_like(x) for _ in range(4)]
    with np.errstate(all="ignore"):
        df(x, np.ones_like(x), *outs)
    return outs, vector_calls(df.enzyme.inspect("optimized"))


#: kernel -> names in y, t_y, z, t_z order; the tangents' ulp bound (one extra rounding for
#: 1.5 * pow(x, 0.5); tanh' = 1 - tanh^2 is compared in absolute terms, it cancels)
ACCURACY = [(sin_cos, ("sin", "cos"), (4, 4)), (exp_log, ("exp", "log"), (4, 4)),
            (tanh_pow, ("tanh", "pow"), (None, 5))]


@needs_libmvec
@pytest.mark.parametrize("kernel, names, tangent_ulps", ACCURACY,
                         ids=[k.__name__ for k, _, _ in ACCURACY])
def test_vectorised_derivative_matches_scalar_libm(kernel, names, tangent_ulps):
    (y, ty, z, tz), calls = forward_results(kernel, True)
    (y0, ty0, z0, tz0), scalar_calls = forward_results(kernel, False)
    assert scalar_calls == []
    for name in names:
        assert any(c.endswith("_" + name) for c in calls), (name, calls)
    for what, got, ref in (("y", y, y0), ("z", z, z0)):
        err = ulp_errors(got, ref)
        assert err.max() <= 4, f"{what}: {err.max()} ulp at x = {accuracy_inputs()[err.argmax()]}"
    for what, got, ref, bound in (("t_y", ty, ty0, tangent_ulps[0]),
                                  ("t_z", tz, tz0, tangent_ulps[1])):
        if bound is None:       # absolute: |tanh'| <= 1, error from 4 ulp of tanh twice
            ok = (np.abs(got - ref) <= 1e-15) | (np.isnan(got) & np.isnan(ref))
            assert ok.all(), f"{what} at x = {accuracy_inputs()[~ok][:4]}"
            continue
        err = ulp_errors(got, ref)
        assert err.max() <= bound, f"{what}: {err.max()} ulp at x = " \
                                   f"{accuracy_inputs()[err.argmax()]}"


@needs_libmvec
def test_special_values_agree_exactly_in_kind():
    """nan, ±inf and signed zeros come out where scalar libm gives them."""
    x = accuracy_inputs()
    special = np.isin(x, SPECIAL) | np.isnan(x)
    for kernel, _, _ in ACCURACY:
        got = forward_results(kernel, True)[0]
        ref = forward_results(kernel, False)[0]
        for g, r in zip(got, ref):
            g, r = g[special], r[special]
            assert np.array_equal(np.isnan(g), np.isnan(r)), kernel.__name__
            assert np.array_equal(np.where(np.isinf(g), g, 0), np.where(np.isinf(r), r, 0))
            zeros = r == 0
            assert np.array_equal(np.signbit(g[zeros]), np.signbit(r[zeros]))


# ---------------------------------------------------------------- the annotation itself

MAP_MODULE = """
@llvm.compiler.used = appending global [1 x ptr] [ptr @keep], section "llvm.metadata"

define void @keep() {
  ret void
}

define void @map(ptr noalias %x, ptr noalias %y, ptr noalias %u, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %px
  %s = call double @llvm.sin.f64(double %v), !enzyme.loc !0
  %t = tail call double @tanh(double %s) #0
  %py = getelementptr inbounds double, ptr %y, i64 %i
  store double %t, ptr %py
  %pu = getelementptr inbounds float, ptr %u, i64 %i
  %w = load float, ptr %pu
  %e = call float @llvm.exp.f32(float %w)
  store float %e, ptr %pu
  %i1 = add nuw nsw i64 %i, 1
  %d = icmp eq i64 %i1, %n
  br i1 %d, label %exit, label %loop
exit:
  ret void
}

declare double @llvm.sin.f64(double)
declare double @tanh(double) #0
declare float @llvm.exp.f32(float)

attributes #0 = { nounwind memory(read) }
!0 = !{!"f.py:3"}
"""


@needs_libmvec
def test_annotated_calls_vectorise_and_the_module_verifies():
    text = annotate(MAP_MODULE)
    llvm.parse_assembly(text).verify()
    used = next(line for line in text.splitlines() if line.startswith("@llvm.compiler.used"))
    assert "ptr @keep" in used and "_sin" in used and "_tanh" in used and "_expf" in used
    calls = vector_calls(optimize(text))
    for suffix in ("_sin", "_tanh", "_expf"):
        assert any(c.endswith(suffix) for c in calls), (suffix, calls)
    assert vector_calls(optimize(MAP_MODULE)) == []
    again = annotate(text)              # a derivative of a derivative is annotated twice
    llvm.parse_assembly(again).verify()
    assert again.count("declare <2 x double> @_ZGVbN2v_sin(") == 1


@pytest.fixture
def fresh_variants():
    libmvec_variants.cache_clear()
    yield
    libmvec_variants.cache_clear()


@pytest.mark.parametrize("what", ["not x86-64", "no libmvec"])
def test_no_op_without_libmvec(what, monkeypatch, fresh_variants):
    if what == "not x86-64":
        monkeypatch.setattr(vector_math.platform, "machine", lambda: "aarch64")
    else:
        monkeypatch.setattr(vector_math, "LIBMVEC", "libmvec-not-there.so.9")
    assert libmvec_variants() == {}
    assert annotate(MAP_MODULE) == MAP_MODULE


@needs_libmvec
def test_cli_no_vector_math(capsys):
    from enzyme_py.cli import main
    args = ["inspect", "tests/unit/enzyme_py/cli/samples.py:sin_sum", "--types", "float64[::1], int64",
            "--args", "dup,const", "--stage", "optimized"]
    assert main(args) == 0
    assert vector_calls(capsys.readouterr().out)
    assert main(args + ["--no-vector-math"]) == 0
    assert vector_calls(capsys.readouterr().out) == []


def exp_sin_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(math.sin(x[i]))
    return s


def test_derivative_of_an_annotated_derivative():
    """Reverse over forward: the inner derivative's module (annotated, with its libmvec
    declarations) is captured and differentiated again."""
    f = derive_diff(exp_sin_sum, "f_exp_sin_sum", ("dup",), mode="forward")

    @numba.njit
    def directional(x, v):
        return f(x, v)[1]

    hvp = derive_diff(directional, "hvp_exp_sin_sum", ("dup", "const"))
    x = np.linspace(-2.0, 2.0, 101)
    hx = np.zeros_like(x)
    hvp(x, hx, np.ones_like(x))            # the Hessian is diagonal: H @ 1 is its diagonal
    exact = np.exp(np.sin(x)) * (np.cos(x) ** 2 - np.sin(x))
    np.testing.assert_allclose(hx, exact, rtol=1e-13, atol=1e-14)


def test_ir_files_are_inspected_as_the_c_front_end_compiles_them():
    """IR targets (the C front end compiles without vector math) default to scalar libm."""
    args = ("tests/unit/enzyme_py/cli/kernels.ll", ["dup", "dup", "active", "const"])
    off = inspect(*args, func="axpy", stage="optimized")
    assert "vector-function-abi-variant" not in off and vector_calls(off) == []
    if HAS_LIBMVEC:
        on = inspect(*args, func="axpy", stage="optimized", vector_math=True)
        assert "vector-function-abi-variant" in on
