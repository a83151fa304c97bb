"""The kernels of bench_kernels.py written the natural vectorised JAX way, for
`jax.jit(jax.grad(f, argnums))` (float64). Each takes the same arguments as its loop version;
`JAX_KERNELS` maps the loop version's name to (JAX function, differentiated arguments).
Imported only when JAX is installed."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m):
    n, d = x.shape
    K = alphas.shape[0]
    rows, cols = zip(*[(l, j) for j in range(d) for l in range(j + 1, d)])
    Q = jnp.zeros((K, d, d)).at[:, np.array(rows), np.array(cols)].set(icf[:, d:])
    Q = Q + jax.vmap(jnp.diag)(jnp.exp(icf[:, :d]))
    sum_qs = jnp.sum(icf[:, :d], axis=1)
    xc = x[:, None, :] - means[None, :, :]                         # (n, K, d)
    qxc = jnp.einsum("kij,nkj->nki", Q, xc)
    main_term = alphas + sum_qs - 0.5 * jnp.sum(qxc * qxc, axis=2)
    slse = jnp.sum(jax.nn.logsumexp(main_term, axis=1))
    frob = jnp.sum(jnp.exp(icf[:, :d]) ** 2) + jnp.sum(icf[:, d:] ** 2)
    prior = 0.5 * wishart_gamma ** 2 * frob - wishart_m * jnp.sum(sum_qs)
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return constant + slse - n * jax.nn.logsumexp(alphas) + prior


def heat_swap(u, v, r, steps):
    a, b = jnp.asarray(u), jnp.asarray(v)
    for _ in range(steps):
        c = a[1:-1, 1:-1]
        b = b.at[1:-1, 1:-1].set(c + r * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2]
                                          + a[1:-1, 2:] - 4.0 * c))
        a, b = b, a
    return jnp.sum(a * a)


def matmul_loss(A, B, C):
    P = A @ B
    return jnp.sum(P * P)


def sin2x(x):
    return jnp.sum(jnp.sin(x) ** 2 * x)


def logsumexp(x):
    m = jnp.max(x)
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


def _rodrigues(rot, X):
    sqtheta = jnp.sum(rot * rot, axis=1, keepdims=True)
    theta = jnp.sqrt(jnp.where(sqtheta != 0.0, sqtheta, 1.0))
    w = rot / theta
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    rotated = X * cos + jnp.cross(w, X) * sin + w * jnp.sum(w * X, axis=1, keepdims=True) \
        * (1.0 - cos)
    return jnp.where(sqtheta != 0.0, rotated, X + jnp.cross(rot, X))


def ba_objective(cams, X, w, feats, obs):
    cam = cams[obs[:, 0]]
    Xcam = _rodrigues(cam[:, 0:3], X[obs[:, 1]] - cam[:, 3:6])
    proj = Xcam[:, :2] / Xcam[:, 2:3]
    rsq = jnp.sum(proj * proj, axis=1, keepdims=True)
    proj = proj * (1.0 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq)
    err = w[:, None] * (proj * cam[:, 6:7] + cam[:, 7:9] - feats)
    return jnp.sum(err * err) + jnp.sum((1.0 - w * w) ** 2)


def lstm_objective(main_params, extra_params, state, sequence):
    layers, b = state.shape[0] // 2, state.shape[1]

    def step(s, xy):
        x, y_gold = xy
        x = x * extra_params[0]
        out = []
        for layer in range(layers):
            wt, bias = main_params[2 * layer], main_params[2 * layer + 1]
            h, cell = s[2 * layer], s[2 * layer + 1]
            gates = jnp.concatenate([x, h, x, h]) * wt + bias
            forget = jax.nn.sigmoid(gates[:b])
            ingate = jax.nn.sigmoid(gates[b:2 * b])
            outgate = jax.nn.sigmoid(gates[2 * b:3 * b])
            cell = cell * forget + ingate * jnp.tanh(gates[3 * b:])
            x = outgate * jnp.tanh(cell)
            out += [x, cell]
        y = x * extra_params[1] + extra_params[2]
        y = y - jnp.log(jnp.sum(jnp.exp(y)) + 2.0)
        return jnp.stack(out), jnp.sum(y_gold * y)

    _, terms = jax.lax.scan(step, state, (sequence[:-1], sequence[1:]))
    return -jnp.sum(terms) / ((sequence.shape[0] - 1) * b)


JAX_KERNELS = {f.__name__: f for f in (gmm_objective, heat_swap, matmul_loss, sin2x, logsumexp,
                                       ba_objective, lstm_objective)}


def jax_gradient(name: str, diff: tuple[int, ...], static: tuple[int, ...] = ()):
    """`jax.jit(jax.grad(f, diff))` of the JAX version of loop kernel `name` (arguments at
    `static` are compile-time constants, e.g. a step count)."""
    return jax.jit(jax.grad(JAX_KERNELS[name], argnums=diff), static_argnums=static)
