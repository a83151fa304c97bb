"""enzyme_py quickstart: differentiate Numba-compiled loops in reverse and forward mode.

Run:  python examples/quickstart.py      (about 10 s, most of it compiling)

1. A least-squares loss over arrays: a loop with tanh/exp, an in-place smoothing pass over the
   prediction buffer, then a reduction. Reverse mode gives the gradient in one call; vector
   forward mode (width=4) gives the same gradient as four directional derivatives in one call.
2. A scalar ODE (logistic growth with harvesting, midpoint rule, 2000 steps): the gradient of
   the final state with respect to the initial value and two parameters, in both modes.
3. The reverse-mode derivative called inside an @njit gradient-descent loop that fits the
   loss's parameters: no Python in the hot path.

Every derivative is checked against central finite differences; the script exits with
status 1 if any check fails.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

# Import enzyme_py before compiling any @njit function the differentiated code calls: it
# records the IR of Numba libraries compiled from then on (see README, "Limitations").
import enzyme_py  # noqa: F401  (imported for that side effect as well)
import numba
from enzyme_py import autodiff, derive_diff

FAILURES: list[str] = []
TOL = 1e-6          # max relative error allowed against central finite differences


# --------------------------------------------------------------------------- checking helpers

def rel_error(got, ref) -> float:
    """max_k |got_k - ref_k| / max_k |ref_k| (a norm-wise relative error)."""
    got = np.atleast_1d(np.asarray(got, dtype=float))
    ref = np.atleast_1d(np.asarray(ref, dtype=float))
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def check(label: str, got, ref, tol: float | None = None) -> None:
    tol = TOL if tol is None else tol
    err = rel_error(got, ref)
    ok = err <= tol
    print(f"    {label:<44s} max rel. error {err:8.1e}   {'ok' if ok else 'FAILED'}")
    if not ok:
        FAILURES.append(label)


def central_fd(fun, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Gradient of the scalar function `fun` at the 1-D point `x` by central differences."""
    g = np.empty_like(x)
    for k in range(x.shape[0]):
        step = h * max(1.0, abs(x[k]))
        xp, xm = x.copy(), x.copy()
        xp[k] += step
        xm[k] -= step
        g[k] = (fun(xp) - fun(xm)) / (2.0 * step)
    return g


def fmt(v) -> str:
    return np.array2string(np.asarray(v), precision=6, suppress_small=False, separator=", ")


# --------------------------------------------------------------------------- 1. array loss

def loss(w, x, y, pred):
    """Mean squared error of a 4-parameter model; `pred` is a scratch buffer, updated in place."""
    n = x.shape[0]
    for i in range(n):
        pred[i] = w[0] * math.tanh(w[1] * x[i] + w[2]) + w[3] * math.exp(-x[i] * x[i])
    for i in range(1, n):                       # causal smoothing, in place
        pred[i] += 0.25 * (pred[i - 1] - pred[i])
    s = 0.0
    for i in range(n):
        r = pred[i] - y[i]
        s += r * r
    return s / n


loss_nb = numba.njit(loss)
# Reverse mode: w and the buffer are "dup" (array + shadow), the data are "const".
# d_loss(w, d_w, x, y, pred, d_pred) accumulates the gradient into d_w and returns ().
d_loss = derive_diff(loss_nb, "d_loss", ("dup", "const", "const", "dup"), mode="reverse")
# Vector forward mode: the tangent of w is a (4, 4) identity (four directions at once), the
# buffer's tangent has shape (4, n); the call returns (value, [dloss/dw_0 ... dloss/dw_3]).
fwd_loss = derive_diff(loss_nb, "fwd_loss", ("dup", "const", "const", "dup"), mode="forward",
                       width=4)


def demo_loss(x, y, w):
    n = x.shape[0]
    pred, d_pred, d_w = np.zeros(n), np.zeros(n), np.zeros(4)
    print("1. array loss: tanh/exp model, in-place smoothing, squared-error reduction "
          f"(n={n})")
    grads = d_loss(w, d_w, x, y, pred, d_pred)           # d_w += dloss/dw
    assert grads == ()                                   # no "active" scalars: nothing returned
    value, grad_fwd = fwd_loss(w, np.eye(4), x, y, pred, np.zeros((4, n)))
    fd = central_fd(lambda v: loss_nb(v, x, y, np.zeros(n)), w)
    print(f"    loss(w)              = {value:.10f}")
    print(f"    reverse  dloss/dw    = {fmt(d_w)}")
    print(f"    forward  dloss/dw    = {fmt(grad_fwd)}   (width=4: one call)")
    print(f"    central differences  = {fmt(fd)}")
    check("loss: reverse vs finite differences", d_w, fd)
    check("loss: forward vs finite differences", grad_fwd, fd)
    check("loss: forward vs reverse", grad_fwd, d_w, 1e-12)


# --------------------------------------------------------------------------- 2. scalar ODE

@autodiff(mode="reverse", args=("active", "active", "active", "const", "const"))
def logistic(y0, r, h, dt, steps):
    """Logistic growth with a harvesting term, integrated with the midpoint rule."""
    y = y0
    for _ in range(steps):
        k1 = r * y * (1.0 - y) - h * math.sin(y)
        ym = y + 0.5 * dt * k1
        k2 = r * ym * (1.0 - ym) - h * math.sin(ym)
        y = y + dt * k2
    return y


# Forward mode of the same primal: scalars are "dup" (value, tangent); one direction per call.
fwd_logistic = derive_diff(logistic.primal, "fwd_logistic",
                           ("dup", "dup", "dup", "const", "const"), mode="forward")


def demo_ode(y0, r, h, dt, steps):
    print(f"\n2. scalar ODE: logistic growth with harvesting, midpoint rule, {steps} steps")
    p = np.array([y0, r, h])
    value = logistic(y0, r, h, dt, steps)
    grad_rev = np.array(logistic.derivative(y0, r, h, dt, steps))    # (dy/dy0, dy/dr, dy/dh)
    grad_fwd = np.empty(3)
    for k in range(3):                                                # one direction per call
        t = np.eye(3)[k]
        _, grad_fwd[k] = fwd_logistic(y0, t[0], r, t[1], h, t[2], dt, steps)
    fd = central_fd(lambda q: logistic(q[0], q[1], q[2], dt, steps), p)
    print(f"    y(T)                  = {value:.10f}")
    print(f"    reverse  dy/d(y0,r,h) = {fmt(grad_rev)}")
    print(f"    forward  dy/d(y0,r,h) = {fmt(grad_fwd)}")
    print(f"    central differences   = {fmt(fd)}")
    check("ODE: reverse vs finite differences", grad_rev, fd)
    check("ODE: forward vs finite differences", grad_fwd, fd)
    check("ODE: forward vs reverse", grad_fwd, grad_rev, 1e-12)


# --------------------------------------------------------------------------- 3. optimisation

@numba.njit
def fit(w, x, y, lr, iters):
    """Plain gradient descent on `loss`, entirely in Numba: the derivative is an njit callee."""
    pred = np.zeros_like(x)
    d_pred = np.zeros_like(x)
    d_w = np.zeros_like(w)
    for _ in range(iters):
        d_w[:] = 0.0                    # the gradient is accumulated into d_w: reset it
        d_loss(w, d_w, x, y, pred, d_pred)
        w -= lr * d_w
    return loss_nb(w, x, y, pred)


def demo_fit(x, y, w_true, w0):
    print("\n3. gradient descent in an @njit loop calling d_loss (fits the model of part 1)")
    start = loss_nb(w0, x, y, np.zeros_like(x))
    w = w0.copy()
    fit(w.copy(), x, y, 0.5, 1)                             # compile outside the timing
    t0 = time.perf_counter()
    final = fit(w, x, y, 0.5, 2000)
    dt = time.perf_counter() - t0
    print(f"    loss {start:.3e} -> {final:.3e} after 2000 steps ({dt * 1e3:.1f} ms, "
          f"{dt / 2000 * 1e6:.1f} us per gradient step)")
    print(f"    w = {fmt(w)}   (true {fmt(w_true)})")
    ok = final < 1e-20 and np.allclose(w, w_true, rtol=0, atol=1e-8)
    print(f"    {'converged: ok' if ok else 'did not converge: FAILED'}")
    if not ok:
        FAILURES.append("gradient descent")


def main() -> int:
    t0 = time.perf_counter()
    n = 200
    x = np.linspace(-2.0, 2.0, n)
    w_true = np.array([1.5, 2.0, -0.3, 0.7])
    y = np.zeros(n)
    pred = np.zeros(n)
    loss_nb(w_true, x, y, pred)
    y[:] = pred                                     # data generated by the model itself
    w0 = np.array([1.0, 1.0, 0.0, 0.0])

    demo_loss(x, y, w0)
    demo_ode(y0=0.1, r=1.3, h=0.05, dt=0.005, steps=2000)
    demo_fit(x, y, w_true, w0)

    print(f"\n{'all checks passed' if not FAILURES else 'FAILED: ' + ', '.join(FAILURES)}"
          f" ({time.perf_counter() - t0:.1f} s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
