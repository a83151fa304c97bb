"""A Numba simulation as a layer inside a JAX training loop.

A damped oscillator x'' = -k x - c x' is simulated by a Numba kernel (a plain time-stepping
loop writing into an array). `enzyme_py.jax.primitive` makes it a JAX function whose gradient
is enzyme_py's compiled reverse derivative, so a `jax.jit`-compiled gradient-descent step can
fit k and c (parametrised by their logs in JAX) to a noisy observed trajectory. Exits
non-zero if the fit does not recover the true parameters.

Run: python examples/jax_simulation_layer.py
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

import enzyme_py.jax

jax.config.update("jax_enable_x64", True)
STEPS, DT = 400, 0.05


def simulate(params, state0):
    """Positions of the oscillator with params = [k, c] from state0 = [x, v] (symplectic
    Euler): a Numba kernel, not JAX code."""
    k, c = params[0], params[1]
    x, v = state0[0], state0[1]
    out = np.empty(STEPS)
    for i in range(STEPS):
        v += DT * (-k * x - c * v)
        x += DT * v
        out[i] = x
    return out


layer = enzyme_py.jax.primitive(
    simulate, out=lambda params, state0: jax.ShapeDtypeStruct((STEPS,), params.dtype))


def loss(log_params, state0, observed):
    trajectory = layer(jnp.exp(log_params), state0)        # the Numba layer
    return jnp.mean((trajectory - observed) ** 2)


def main() -> int:
    truth, state0 = np.array([2.0, 0.3]), np.array([1.0, 0.0])
    rng = np.random.default_rng(0)
    observed = simulate(truth, state0) + 0.01 * rng.standard_normal(STEPS)

    value_and_grad = jax.jit(jax.value_and_grad(loss))
    log_params = jnp.log(jnp.array([1.5, 0.15]))
    lr, first = 0.1, None
    for step in range(1001):
        value, g = value_and_grad(log_params, state0, observed)
        first = value if first is None else first
        log_params = log_params - lr * g / (1e-3 + jnp.linalg.norm(g))  # normalised step
        lr *= 0.997
        if step % 200 == 0:
            print(f"step {step:4d}  loss {float(value):.3e}  k, c = {np.exp(log_params)}")
    fitted = np.exp(np.asarray(log_params))
    print(f"fitted k, c = {fitted}, true {truth}; loss {float(first):.3e} -> {float(value):.3e}")
    return 0 if np.allclose(fitted, truth, rtol=0.05) else 1


if __name__ == "__main__":
    sys.exit(main())
