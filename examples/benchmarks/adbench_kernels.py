"""ADBench's bundle adjustment (BA) and LSTM objectives written the way a Numba user writes
them: explicit loops over observations, coordinates, layers and time steps (for
bench_kernels.py; the JAX versions are in jax_kernels.py).

BA: the sum of squared residuals of ADBench's BA: per observation the reprojection error
`w * (project(camera, point) - feature)` (Rodrigues rotation, radial distortion k1, k2,
focal length, principal point; a camera is 11 numbers: rotation 3, centre 3, focal 1,
principal point 2, distortion 2), plus the weight error `1 - w^2`.

LSTM: ADBench's LSTM objective (per-element gates, `layers` layers of `hidden` units): the
negative mean log-likelihood of the next character of a one-hot `sequence`; the state is
copied into a temporary first (the inputs are not written).
"""
from __future__ import annotations

import math

import numba
import numpy as np


def ba_objective(cams, X, w, feats, obs):
    total = 0.0
    for i in range(obs.shape[0]):
        c = obs[i, 0]
        p = obs[i, 1]
        r0 = cams[c, 0]
        r1 = cams[c, 1]
        r2 = cams[c, 2]
        x0 = X[p, 0] - cams[c, 3]
        x1 = X[p, 1] - cams[c, 4]
        x2 = X[p, 2] - cams[c, 5]
        sqtheta = r0 * r0 + r1 * r1 + r2 * r2
        if sqtheta != 0.0:                       # Rodrigues' rotation formula
            theta = math.sqrt(sqtheta)
            costheta = math.cos(theta)
            sintheta = math.sin(theta)
            w0 = r0 / theta
            w1 = r1 / theta
            w2 = r2 / theta
            tmp = (w0 * x0 + w1 * x1 + w2 * x2) * (1.0 - costheta)
            y0 = x0 * costheta + (w1 * x2 - w2 * x1) * sintheta + w0 * tmp
            y1 = x1 * costheta + (w2 * x0 - w0 * x2) * sintheta + w1 * tmp
            y2 = x2 * costheta + (w0 * x1 - w1 * x0) * sintheta + w2 * tmp
        else:
            y0 = x0 + r1 * x2 - r2 * x1
            y1 = x1 + r2 * x0 - r0 * x2
            y2 = x2 + r0 * x1 - r1 * x0
        u = y0 / y2
        v = y1 / y2
        rsq = u * u + v * v
        distortion = 1.0 + cams[c, 9] * rsq + cams[c, 10] * rsq * rsq
        e0 = w[i] * (u * distortion * cams[c, 6] + cams[c, 7] - feats[i, 0])
        e1 = w[i] * (v * distortion * cams[c, 6] + cams[c, 8] - feats[i, 1])
        we = 1.0 - w[i] * w[i]
        total += e0 * e0 + e1 * e1 + we * we
    return total


def ba_data(rng, n_cams: int = 20, n_points: int = 250, n_obs: int = 1000):
    """Cameras near the origin looking at points 3-5 units in front of them."""
    cams = np.empty((n_cams, 11))
    cams[:, 0:3] = 0.1 * rng.standard_normal((n_cams, 3))
    cams[:, 3:6] = 0.2 * rng.standard_normal((n_cams, 3))
    cams[:, 6] = 1.0 + 0.1 * rng.standard_normal(n_cams)
    cams[:, 7:9] = 0.05 * rng.standard_normal((n_cams, 2))
    cams[:, 9:11] = 0.01 * rng.standard_normal((n_cams, 2))
    X = rng.standard_normal((n_points, 3))
    X[:, 2] = rng.uniform(3.0, 5.0, n_points)
    w = rng.uniform(0.5, 1.5, n_obs)
    feats = 0.3 * rng.standard_normal((n_obs, 2))
    obs = np.stack([rng.integers(0, n_cams, n_obs), rng.integers(0, n_points, n_obs)], axis=1)
    return cams, X, w, feats, obs.astype(np.int64)


@numba.njit
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def lstm_objective(main_params, extra_params, state, sequence):
    """main_params: (2 * layers, 4 * hidden) weights and biases per layer; extra_params:
    (3, hidden) input weights, output weights, output bias; state: (2 * layers, hidden)
    hidden and cell per layer; sequence: (steps, hidden)."""
    layers = state.shape[0] // 2
    b = state.shape[1]
    s = np.empty_like(state)
    for r in range(state.shape[0]):
        for j in range(b):
            s[r, j] = state[r, j]
    x = np.empty(b)
    y = np.empty(b)
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        for j in range(b):
            x[j] = sequence[t, j] * extra_params[0, j]
        for layer in range(layers):
            wt = main_params[2 * layer]
            bias = main_params[2 * layer + 1]
            for j in range(b):
                h = s[2 * layer, j]
                forget = _sigmoid(x[j] * wt[j] + bias[j])
                ingate = _sigmoid(h * wt[b + j] + bias[b + j])
                outgate = _sigmoid(x[j] * wt[2 * b + j] + bias[2 * b + j])
                change = math.tanh(h * wt[3 * b + j] + bias[3 * b + j])
                cell = s[2 * layer + 1, j] * forget + ingate * change
                s[2 * layer + 1, j] = cell
                s[2 * layer, j] = outgate * math.tanh(cell)
                x[j] = s[2 * layer, j]
        lse = 0.0
        for j in range(b):
            y[j] = x[j] * extra_params[1, j] + extra_params[2, j]
            lse += math.exp(y[j])
        lse = math.log(lse + 2.0)
        for j in range(b):
            total += sequence[t + 1, j] * (y[j] - lse)
    return -total / ((sequence.shape[0] - 1) * b)


def lstm_data(rng, layers: int = 2, hidden: int = 10, steps: int = 50):
    main_params = 0.5 * rng.standard_normal((2 * layers, 4 * hidden))
    extra_params = 0.5 * rng.standard_normal((3, hidden))
    state = 0.5 * rng.standard_normal((2 * layers, hidden))
    sequence = np.zeros((steps, hidden))
    sequence[np.arange(steps), rng.integers(0, hidden, steps)] = 1.0
    return main_params, extra_params, state, sequence
