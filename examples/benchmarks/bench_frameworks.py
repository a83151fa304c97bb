"""Per-call overhead of the JAX and PyTorch wrappers (`enzyme_py.jax`, `enzyme_py.torch`).

One gradient of a least-squares loss over n points, four ways, measured interleaved in one run:
the reverse derivative called from Python with NumPy arrays (the floor), `jax.jit(jax.grad)`
of `enzyme_py.jax.primitive(loss)`, `loss.backward()` through `enzyme_py.torch.function`
(forward and backward), and, for scale, the same gradient in plain JAX and plain PyTorch.
The wrapper overhead is the difference to the floor. Needs jax and torch (either may be
missing: its rows are skipped).
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import compare, fmt_time, machine_note, table  # noqa: E402

from enzyme_py import derive_diff  # noqa: E402


def loss(w, x, y):
    s = 0.0
    for i in range(x.shape[0]):
        r = math.tanh(w[0] * x[i] + w[1]) - y[i]
        s += r * r
    return s


def main() -> None:
    rows = []
    for n in (16, 10_000):
        x = np.linspace(-1.0, 1.0, n)
        y, w = np.sin(2 * x), np.array([0.7, -0.3])
        d_loss = derive_diff(loss, "d_loss", ("dup", "const", "const"))

        def direct():
            d_w = np.zeros(2)
            d_loss(w, d_w, x, y)
            return d_w

        fns, names = [direct], ["derivative from Python (floor)"]
        fns_names = _jax_rows(w, x, y) + _torch_rows(w, x, y)
        for fn, name in fns_names:
            np.testing.assert_allclose(np.asarray(fn()), direct(), rtol=1e-9)
            fns.append(fn)
            names.append(name)
        times = compare(fns, repeats=15)
        for name, t in zip(names, times):
            rows.append((n, name, fmt_time(t), f"{fmt_time(t - times[0])}"
                         if name.startswith("enzyme_py") else "-", f"{t / times[0]:.2f}x"))
    print(table(("n", "gradient computed by", "time/call", "over the floor", "/ floor"), rows))
    print("The PyTorch path also runs the primal in its forward (the floor's derivative "
          "recomputes it), so its overhead includes one primal evaluation.")
    print(machine_note())


def _jax_rows(w, x, y) -> list:
    try:
        import jax
        import jax.numpy as jnp
        import enzyme_py.jax as ej
    except ImportError:
        return []
    jax.config.update("jax_enable_x64", True)
    wj, xj, yj = (jnp.asarray(a) for a in (w, x, y))
    ours = jax.jit(jax.grad(ej.primitive(loss)))
    plain = jax.jit(jax.grad(lambda v: jnp.sum((jnp.tanh(v[0] * xj + v[1]) - yj) ** 2)))
    return [(lambda: ours(wj, xj, yj).block_until_ready(), "enzyme_py.jax: jit(grad)"),
            (lambda: plain(wj).block_until_ready(), "plain JAX: jit(grad)")]


def _torch_rows(w, x, y) -> list:
    try:
        import torch
        import enzyme_py.torch as et
    except ImportError:
        return []
    torch.set_num_threads(1)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    f = et.function(loss)

    def ours():
        wt = torch.tensor(w, requires_grad=True)
        f(wt, xt, yt).backward()
        return wt.grad

    def plain():
        wt = torch.tensor(w, requires_grad=True)
        torch.sum((torch.tanh(wt[0] * xt + wt[1]) - yt) ** 2).backward()
        return wt.grad

    return [(ours, "enzyme_py.torch: forward + backward"), (plain, "plain PyTorch: backward")]


if __name__ == "__main__":
    main()
