"""Reverse mode: time of the gradient relative to the primal, both compiled by Numba.

Run:  python examples/benchmarks/bench_reverse.py [--repeats N] [--clock cpu|wall]

Not a test: it prints a table. Each row times the primal and its reverse-mode derivative side
by side in one run (interleaved, median of repeats, warm-up calls excluded) and compares the
ratio with the target of 3.0x. Before timing, every derivative is checked against a reference
(a hand-written adjoint or central finite differences), so a fast wrong derivative cannot PASS.

Functions returning a float are differentiated with `return_primal=True` (value and gradient,
what an optimiser needs): without it the derivative may skip primal work the gradient does not
need (e.g. `log1p` in the softplus reduction, whose derivative needs only `exp`) and beat the
primal.

Seeding: array outputs are seeded through their shadow, which the derivative consumes (API.md),
so only the first call of the heat stencil sees a non-zero d_out; the work done does not depend
on the values, so neither does the timing. Gradients likewise accumulate over the repeats.

Variants: the Gaussian mixture is timed as written (it allocates a K-vector; if the pass
cannot handle that yet the row says "unsupported: ...") and with a caller-provided scratch
buffer marked dup; the heat step also in a branch-free form (boundary loops split out).

Peers: "hand" is a hand-written Numba adjoint of the same loop (where one is short); "jax" is
`jax.jit(jax.grad(...))` of the same computation written with jax.numpy, timed only if JAX is
installed (it is not a dependency). Both are given relative to the Numba primal of the row.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import enzyme_py  # noqa: F401  (import before compiling @njit callees, see README)
import numba
from enzyme_py import UnsupportedError, derive_diff

from _timing import compare, fmt_time, machine_note, median_time, set_clock, table

TARGET = 3.0
N_RED = 1_000_000
RK4_STEPS = 10_000
HEAT_N = 300
GMM_N, GMM_K, GMM_D = 2000, 10, 8
LOG_SQRT_2PI = 0.9189385332046727


# --------------------------------------------------------------------------- kernels

def reduce_arith(x, w):
    """Weighted sum of squares: pure arithmetic."""
    s = 0.0
    for i in range(x.shape[0]):
        r = x[i] - 0.5
        s += w[i] * r * r
    return s


def reduce_softplus(x, w):
    """Weighted softplus loss: one exp and one log1p per element."""
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * math.log1p(math.exp(-x[i]))
    return s


@numba.njit
def pendulum_rhs(y, v, k, c):
    return v, -k * math.sin(y) - c * v


def rk4_pendulum(y0, v0, k, c, dt, steps):
    """Damped pendulum, classical RK4; the right-hand side is an @njit callee."""
    y = y0
    v = v0
    for _ in range(steps):
        a1, b1 = pendulum_rhs(y, v, k, c)
        a2, b2 = pendulum_rhs(y + 0.5 * dt * a1, v + 0.5 * dt * b1, k, c)
        a3, b3 = pendulum_rhs(y + 0.5 * dt * a2, v + 0.5 * dt * b2, k, c)
        a4, b4 = pendulum_rhs(y + dt * a3, v + dt * b3, k, c)
        y += dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        v += dt / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
    return y


def heat_step(u, out, r):
    """One explicit 2-D heat-equation step into out (boundary copied)."""
    ny, nx = u.shape
    for i in range(ny):
        for j in range(nx):
            if i == 0 or j == 0 or i == ny - 1 or j == nx - 1:
                out[i, j] = u[i, j]
            else:
                out[i, j] = u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                           + u[i, j + 1] - 4.0 * u[i, j])


def heat_step_split(u, out, r):
    """`heat_step` with the boundary in separate loops: no branch in the interior loop."""
    ny, nx = u.shape
    for j in range(nx):
        out[0, j] = u[0, j]
        out[ny - 1, j] = u[ny - 1, j]
    for i in range(1, ny - 1):
        out[i, 0] = u[i, 0]
        out[i, nx - 1] = u[i, nx - 1]
        for j in range(1, nx - 1):
            out[i, j] = u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                       + u[i, j + 1] - 4.0 * u[i, j])


def gmm_loglik_scratch(x, mu, log_sigma, logit_w, lp):
    """`gmm_loglik` without allocation: `lp` (K,) is a caller-provided scratch buffer."""
    n, d = x.shape
    K = mu.shape[0]
    m = logit_w[0]
    for k in range(1, K):
        if logit_w[k] > m:
            m = logit_w[k]
    z = 0.0
    for k in range(K):
        z += math.exp(logit_w[k] - m)
    log_norm = m + math.log(z)
    total = 0.0
    for i in range(n):
        best = -1e300
        for k in range(K):
            q = 0.0
            ls = 0.0
            for j in range(d):
                r = (x[i, j] - mu[k, j]) * math.exp(-log_sigma[k, j])
                q += r * r
                ls += log_sigma[k, j]
            lp[k] = logit_w[k] - log_norm - 0.5 * q - ls
            if lp[k] > best:
                best = lp[k]
        s = 0.0
        for k in range(K):
            s += math.exp(lp[k] - best)
        total += best + math.log(s)
    return total - n * d * LOG_SQRT_2PI


_gmm_loglik_scratch = numba.njit(gmm_loglik_scratch)


def gmm_loglik(x, mu, log_sigma, logit_w):
    """Log-likelihood of x (n, d) under a diagonal Gaussian mixture of K components.
    Allocates the K-vector of per-component log densities (and calls an @njit function)."""
    return _gmm_loglik_scratch(x, mu, log_sigma, logit_w, np.empty(mu.shape[0]))


# --------------------------------------------------------------------------- hand-written adjoints

@numba.njit
def reduce_arith_adj(x, dx, w):
    for i in range(x.shape[0]):
        dx[i] += 2.0 * w[i] * (x[i] - 0.5)


@numba.njit
def reduce_softplus_adj(x, dx, w):
    for i in range(x.shape[0]):
        e = math.exp(-x[i])
        dx[i] -= w[i] * e / (1.0 + e)


@numba.njit
def heat_step_adj(u, du, dout, r):
    ny, nx = u.shape
    for i in range(ny):
        for j in range(nx):
            g = dout[i, j]
            dout[i, j] = 0.0
            if i == 0 or j == 0 or i == ny - 1 or j == nx - 1:
                du[i, j] += g
            else:
                du[i, j] += (1.0 - 4.0 * r) * g
                rg = r * g
                du[i - 1, j] += rg
                du[i + 1, j] += rg
                du[i, j - 1] += rg
                du[i, j + 1] += rg


# --------------------------------------------------------------------------- checks

def rel_error(got, ref) -> float:
    got, ref = np.ravel(np.asarray(got, float)), np.ravel(np.asarray(ref, float))
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def fd_entries(fun, arr: np.ndarray, index_list, h: float = 1e-6) -> np.ndarray:
    """Central differences of scalar `fun()` w.r.t. chosen entries of `arr` (perturbed in place)."""
    out = []
    for idx in index_list:
        old = arr[idx]
        step = h * max(1.0, abs(old))
        arr[idx] = old + step
        fp = fun()
        arr[idx] = old - step
        fm = fun()
        arr[idx] = old
        out.append((fp - fm) / (2.0 * step))
    return np.array(out)


# --------------------------------------------------------------------------- JAX (optional)

def jax_peers(data: dict) -> dict[str, float]:
    """Median seconds of jax.jit(grad) for each row, or {} if JAX is not installed."""
    try:
        import jax
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy.special import logsumexp

    def timed(fn, *args):
        fn(*args)                                   # compile
        return median_time(lambda: jax.block_until_ready(fn(*args)))

    out = {}
    x, w = jnp.asarray(data["x"]), jnp.asarray(data["w"])
    out["reduction, arithmetic"] = timed(
        jax.jit(jax.grad(lambda x, w: jnp.sum(w * (x - 0.5) ** 2))), x, w)
    out["reduction, exp+log1p"] = timed(
        jax.jit(jax.grad(lambda x, w: jnp.sum(w * jnp.log1p(jnp.exp(-x))))), x, w)

    def rk4(y0, v0, k, c):
        dt = data["dt"]

        def rhs(y, v):
            return v, -k * jnp.sin(y) - c * v

        def body(_, s):
            y, v = s
            a1, b1 = rhs(y, v)
            a2, b2 = rhs(y + 0.5 * dt * a1, v + 0.5 * dt * b1)
            a3, b3 = rhs(y + 0.5 * dt * a2, v + 0.5 * dt * b2)
            a4, b4 = rhs(y + dt * a3, v + dt * b3)
            return (y + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4),
                    v + dt / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4))
        return lax.fori_loop(0, RK4_STEPS, body, (y0, v0))[0]
    out["RK4 ODE"] = timed(jax.jit(jax.grad(rk4, argnums=(0, 1, 2, 3))), *data["rk4_args"])

    r = data["r"]

    def heat(u):
        c = u[1:-1, 1:-1]
        inner = c + r * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * c)
        return u.at[1:-1, 1:-1].set(inner)
    vjp = jax.jit(lambda u, v: jax.vjp(heat, u)[1](v)[0])
    out["heat stencil"] = timed(vjp, jnp.asarray(data["u"]), jnp.asarray(data["d_out"]))

    def gmm(x, mu, ls, lw):
        n, d = x.shape
        t = (x[:, None, :] - mu[None, :, :]) * jnp.exp(-ls)[None, :, :]
        lp = lw - logsumexp(lw) - 0.5 * jnp.sum(t * t, axis=-1) - jnp.sum(ls, axis=-1)
        return jnp.sum(logsumexp(lp, axis=1)) - n * d * LOG_SQRT_2PI
    g = jax.jit(jax.grad(gmm, argnums=(1, 2, 3)))
    gmm_time = timed(g, *(jnp.asarray(a) for a in data["gmm_args"]))
    out["GMM, allocating"] = out["GMM, scratch buffer"] = gmm_time
    return out


# --------------------------------------------------------------------------- driver

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="process CPU time (default; robust on a shared machine) or wall time")
    args = ap.parse_args()
    set_clock(args.clock)
    repeats = args.repeats

    rng = np.random.default_rng(0)
    rows = []          # (name, primal s, derivative s, check error, hand s) or (name, message)

    def bench(name, primal_call, deriv_call, check_err, hand_call=None):
        fns = [primal_call, deriv_call] + ([hand_call] if hand_call else [])
        times = compare(fns, repeats)
        rows.append((name, times[0], times[1], check_err, times[2] if hand_call else None))
        print(f"  measured: {name}", file=sys.stderr)

    # 1-2. reductions over 1e6 elements: gradient w.r.t. x.
    x = rng.uniform(-2.0, 2.0, N_RED)
    w = rng.uniform(0.5, 1.5, N_RED)
    for name, fn, adj in (("reduction, arithmetic", reduce_arith, reduce_arith_adj),
                          ("reduction, exp+log1p", reduce_softplus, reduce_softplus_adj)):
        p = numba.njit(fn)
        d = derive_diff(p, f"d_{fn.__name__}", ("dup", "const"), return_primal=True)
        dx, dx_ref = np.zeros(N_RED), np.zeros(N_RED)
        d(x, dx, w)
        adj(x, dx_ref, w)
        bench(f"{name} (n=1e6)", lambda: p(x, w), lambda: d(x, dx, w), rel_error(dx, dx_ref),
              lambda: adj(x, dx_ref, w))

    # 3. scalar RK4 ODE, 1e4 steps: gradient w.r.t. (y0, v0, k, c).
    rk4_args = (1.0, 0.0, 2.0, 0.1)
    dt = 1e-3
    p = numba.njit(rk4_pendulum)
    d = derive_diff(p, "d_rk4", ("active",) * 4 + ("const", "const"), return_primal=True)
    grad = np.array(d(*rk4_args, dt, RK4_STEPS)[1])
    q = np.array(rk4_args)
    fd = fd_entries(lambda: p(*q, dt, RK4_STEPS), q, range(4))
    bench("RK4 ODE (1e4 steps)", lambda: p(*rk4_args, dt, RK4_STEPS),
          lambda: d(*rk4_args, dt, RK4_STEPS), rel_error(grad, fd))

    # 4. one step of a 2-D heat stencil: vector-Jacobian product seeded through d_out.
    r = 0.2
    u = rng.standard_normal((HEAT_N, HEAT_N))
    out = np.zeros_like(u)
    d_out_seed = rng.standard_normal(u.shape)
    p = numba.njit(heat_step)
    d = derive_diff(p, "d_heat_step", ("dup", "dup", "const"))
    du, du_ref, du_hand = np.zeros_like(u), np.zeros_like(u), np.zeros_like(u)
    d(u, du, out, d_out_seed.copy(), r)
    heat_step_adj(u, du_ref, d_out_seed.copy(), r)
    d_out, d_out_hand = d_out_seed.copy(), d_out_seed.copy()
    bench("heat stencil (300x300)", lambda: p(u, out, r), lambda: d(u, du, out, d_out, r),
          rel_error(du, du_ref), lambda: heat_step_adj(u, du_hand, d_out_hand, r))

    # 4b. the same step written without a branch in the interior loop (a variant, see README)
    p = numba.njit(heat_step_split)
    d = derive_diff(p, "d_heat_step_split", ("dup", "dup", "const"))
    du = np.zeros_like(u)
    d(u, du, out, d_out_seed.copy(), r)
    bench("heat stencil, branch-free variant", lambda: p(u, out, r),
          lambda: d(u, du, out, d_out, r), rel_error(du, du_ref),
          lambda: heat_step_adj(u, du_hand, d_out_hand, r))

    # 5-6. Gaussian-mixture log-likelihood: gradient w.r.t. mu, log_sigma, logit_w.
    gx = rng.standard_normal((GMM_N, GMM_D))
    mu = rng.standard_normal((GMM_K, GMM_D))
    ls = 0.2 * rng.standard_normal((GMM_K, GMM_D))
    lw = rng.standard_normal(GMM_K)
    dmu, dls, dlw = np.zeros_like(mu), np.zeros_like(ls), np.zeros_like(lw)
    fd_idx = [(0, 0), (3, 5), (9, 7)]

    def gmm_check(primal, extra=()):
        fd = np.concatenate([fd_entries(lambda: primal(gx, mu, ls, lw, *extra), mu, fd_idx),
                             fd_entries(lambda: primal(gx, mu, ls, lw, *extra), ls, fd_idx),
                             fd_entries(lambda: primal(gx, mu, ls, lw, *extra), lw, [0, 4])])
        got = np.concatenate([[dmu[i] for i in fd_idx], [dls[i] for i in fd_idx],
                              [dlw[0], dlw[4]]])
        return rel_error(got, fd)

    p = numba.njit(gmm_loglik)
    d = derive_diff(p, "d_gmm", ("const", "dup", "dup", "dup"), return_primal=True)
    try:
        d(gx, mu, dmu, ls, dls, lw, dlw)
    except UnsupportedError as exc:
        rows.append(("GMM, allocating (n=2000 K=10 d=8)", f"unsupported: {_one_line(exc)}"))
    else:
        bench("GMM, allocating (n=2000 K=10 d=8)", lambda: p(gx, mu, ls, lw),
              lambda: d(gx, mu, dmu, ls, dls, lw, dlw), gmm_check(p))

    lp, d_lp = np.zeros(GMM_K), np.zeros(GMM_K)
    dmu[:], dls[:], dlw[:] = 0.0, 0.0, 0.0
    p = numba.njit(gmm_loglik_scratch)
    d = derive_diff(p, "d_gmm_scratch", ("const", "dup", "dup", "dup", "dup"),
                    return_primal=True)
    d(gx, mu, dmu, ls, dls, lw, dlw, lp, d_lp)
    bench("GMM, scratch buffer dup (same sizes)", lambda: p(gx, mu, ls, lw, lp),
          lambda: d(gx, mu, dmu, ls, dls, lw, dlw, lp, d_lp), gmm_check(p, (lp,)))

    jax_times = jax_peers(dict(x=x, w=w, dt=dt, rk4_args=rk4_args, r=r, u=u,
                               d_out=d_out_seed, gmm_args=(gx, mu, ls, lw)))

    print(_report(rows, jax_times))
    return 0


def _one_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    where = next((ln for ln in lines[1:] if ln.startswith("at ")), "")
    return lines[0] + (f" ({where})" if where else "")


def _report(rows, jax_times) -> str:
    header = ["kernel", "primal", "reverse", "ratio", "target", "status", "check", "peers"]
    body, notes = [], []
    for row in rows:
        if len(row) == 2:
            body.append([row[0], "-", "-", "-", f"{TARGET:.1f}x", "unsupported", "-", "-"])
            notes.append(f"{row[0]}: {row[1]}")
            continue
        name, tp, td, err, th = row
        ratio = td / tp
        ok = err < 1e-6
        status = ("PASS" if ratio <= TARGET else "MISS") if ok else "WRONG"
        peers = []
        if th is not None:
            peers.append(f"hand {th / tp:.2f}x")
        jt = next((t for k, t in jax_times.items() if name.startswith(k)), None)
        peers.append(f"jax {jt / tp:.2f}x" if jt is not None else "jax -")
        body.append([name, fmt_time(tp), fmt_time(td), f"{ratio:.2f}x", f"{TARGET:.1f}x",
                     status, "ok" if ok else f"err {err:.0e}", ", ".join(peers)])
    lines = [f"reverse mode / primal (median of repeats, Numba {numba.__version__}; "
             "check: derivative vs hand adjoint or central differences)",
             f"  {machine_note()}", "",
             table(header, body)]
    lines += [""] + [f"  {n}" for n in notes] if notes else []
    lines.append("")
    lines.append("  peers: hand = hand-written Numba adjoint / primal; jax = jax.jit(grad) / "
                 "Numba primal" + ("" if jax_times else " (JAX not installed: skipped)"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
