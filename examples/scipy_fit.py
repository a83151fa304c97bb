"""Nonlinear least squares with SciPy, gradients and Hessian-vector products from enzyme_py.

Fit a damped oscillation y = a * exp(-k t) * cos(w t + p) to noisy samples. The objective is a
Numba-style loop; `enzyme_py.grad` gives its gradient and `enzyme_py.hvp` its Hessian-vector
products (reverse over forward), both compiled, so `scipy.optimize.minimize` can run a
Newton-CG trust-region method with exact second-order information. Exits non-zero if the fit
misses the true parameters or if the derivatives disagree with finite differences.

Run: python examples/scipy_fit.py   (needs scipy, installed with the test extras)
"""
import math
import sys

import numpy as np
from scipy.optimize import minimize

from enzyme_py import grad, hvp


def objective(theta, t, y):
    """0.5 * sum of squared residuals of the damped-oscillation model."""
    a, k, w, p = theta[0], theta[1], theta[2], theta[3]
    s = 0.0
    for i in range(t.shape[0]):
        r = a * math.exp(-k * t[i]) * math.cos(w * t[i] + p) - y[i]
        s += r * r
    return 0.5 * s


def main() -> int:
    rng = np.random.default_rng(1)
    truth = np.array([2.0, 0.3, 3.0, 0.5])
    t = np.linspace(0.0, 10.0, 400)
    y = truth[0] * np.exp(-truth[1] * t) * np.cos(truth[2] * t + truth[3])
    y += 0.02 * rng.standard_normal(t.size)

    g, hv = grad(objective), hvp(objective)
    start = np.array([1.5, 0.2, 2.9, 0.3])
    fd = np.array([(objective(start + e, t, y) - objective(start - e, t, y)) / 2e-6
                   for e in 1e-6 * np.eye(4)])
    if not np.allclose(g(start, t, y), fd, rtol=1e-5, atol=1e-6):
        print("gradient disagrees with finite differences:", g(start, t, y), fd)
        return 1
    v = np.array([0.3, -1.0, 0.5, 2.0])
    fd_hv = (g(start + 1e-6 * v, t, y) - g(start - 1e-6 * v, t, y)) / 2e-6
    if not np.allclose(hv(start, t, y, v), fd_hv, rtol=1e-5, atol=1e-5):
        print("Hessian-vector product disagrees with finite differences")
        return 1

    result = minimize(objective, start, args=(t, y), method="trust-ncg",
                      jac=lambda th, t, y: g(th, t, y),
                      hessp=lambda th, v, t, y: hv(th, t, y, v))
    print(f"{result.message} after {result.nit} iterations, {result.nfev} evaluations, "
          f"{result.nhev} Hessian-vector products")
    print(f"fitted a, k, w, p = {np.round(result.x, 4)}; true {truth}")
    return 0 if result.success and np.allclose(result.x, truth, rtol=0.05) else 1


if __name__ == "__main__":
    sys.exit(main())
