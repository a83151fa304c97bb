"""enzyme_py.jax.primitive: our compiled derivatives inside JAX (grad, jit, vmap, jvp)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install '.[jax]')")
jnp = jax.numpy

import enzyme_py.jax as ej  # noqa: E402
from enzyme_py import ActivityError  # noqa: E402
from tests.frameworks.kernels import (fit_loss, fit_loss_np,  # noqa: E402
                                      scaled_pair, softmax, softmax_np)
from tests.support.gradcheck import fd_gradient  # noqa: E402


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    x = np.linspace(-1.0, 1.0, 7)
    return np.array([0.7, -0.3]), x, np.sin(2 * x) + 0.1 * rng.standard_normal(7)


_loss = ej.primitive(fit_loss)
_loss_fwd = ej.primitive(fit_loss, mode="forward")


def test_value_and_gradient_match_jax_and_finite_differences(data):
    w, x, y = (jnp.asarray(a) for a in data)
    assert float(_loss(w, x, y)) == pytest.approx(float(fit_loss_np(*data)), rel=1e-12)
    g = jax.grad(_loss, argnums=(0, 1, 2))(w, x, y)
    ref = jax.grad(lambda *a: fit_loss_np(*a, xp=jnp), argnums=(0, 1, 2))(w, x, y)
    for ours, theirs in zip(g, ref):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g[0], fd_gradient(fit_loss, tuple(data))[0], rtol=1e-6)


def test_works_under_jit_and_vmap(data):
    w, x, y = (jnp.asarray(a) for a in data)
    ws = jnp.stack([w, w + 0.5, w - 0.25])
    grads = jax.jit(jax.vmap(jax.grad(_loss), in_axes=(0, None, None)))(ws, x, y)
    for k in range(3):
        expected = jax.grad(lambda v: fit_loss_np(v, x, y, xp=jnp))(ws[k])
        np.testing.assert_allclose(grads[k], expected, rtol=1e-10)


def test_forward_mode_agrees_with_reverse_mode(data):
    w, x, y = (jnp.asarray(a) for a in data)
    t = (jnp.array([0.3, -1.2]), jnp.linspace(0.1, 0.7, 7), jnp.cos(x))
    value, tangent = jax.jvp(_loss_fwd, (w, x, y), t)
    g = jax.grad(_loss, argnums=(0, 1, 2))(w, x, y)
    assert float(value) == pytest.approx(float(fit_loss_np(*data)))
    assert float(tangent) == pytest.approx(sum(float(jnp.vdot(a, b)) for a, b in zip(g, t)),
                                           rel=1e-10)
    np.testing.assert_allclose(jax.jacfwd(_loss_fwd)(w, x, y), g[0], rtol=1e-10)


def test_array_result_jacobians_agree():
    z = jnp.array([0.2, -1.0, 0.5, 2.0])
    rev = ej.primitive(softmax, out=lambda s: s)
    fwd = ej.primitive(softmax, out=lambda s: s, mode="forward")
    expected = jax.jacrev(lambda v: softmax_np(v, xp=jnp))(z)
    np.testing.assert_allclose(jax.jacrev(rev)(z), expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(jax.jacfwd(fwd)(z), expected, rtol=1e-10, atol=1e-14)


def test_tuple_result_with_a_float_scalar_input():
    x, k = jnp.array([1.0, 2.0, -0.5]), jnp.float64(1.5)
    pair = ej.primitive(scaled_pair, out=lambda sx, sk: (sx, jax.ShapeDtypeStruct((), sx.dtype)))

    def objective(x, k):
        a, b = pair(x, k)
        return jnp.sum(a * a) + 3.0 * b

    gx, gk = jax.grad(objective, argnums=(0, 1))(x, k)
    np.testing.assert_allclose(gx, 2 * k * k * x + 6.0 * x, rtol=1e-12)
    assert float(gk) == pytest.approx(float(2 * k * jnp.sum(x * x)), rel=1e-12)


def test_float32_inputs():
    with jax.enable_x64(False):
        w, x = jnp.array([0.7, -0.3], jnp.float32), jnp.linspace(-1, 1, 7, dtype=jnp.float32)
        y = jnp.sin(x)
        g = jax.grad(_loss)(w, x, y)
        assert g.dtype == jnp.float32
        ref = jax.grad(lambda v: fit_loss_np(v, x, y, xp=jnp))(w)
        np.testing.assert_allclose(g, ref, rtol=1e-4)


def test_bad_mode_is_an_activity_error():
    with pytest.raises(ActivityError, match="mode must be 'reverse' or 'forward'"):
        ej.primitive(fit_loss, mode="split")
