"""The bar chart of bench_kernels.py (matplotlib, optional: `pip install .[bench]`)."""
from __future__ import annotations

import math
from typing import Sequence

TARGETS = {"reverse/primal": 3.0, "forward/primal": 1.5, "ours/JAX": 1.0}


def save_chart(path: str, kernels: Sequence[str], series: dict[str, Sequence[float]],
               title: str) -> str:
    """Grouped bars (log scale) of each series per kernel, with the issue's targets as
    dashed lines; returns a sentence saying where it went, or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no chart: matplotlib is not installed (pip install .[bench])"
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(series)
    colors = ["tab:blue", "tab:orange", "tab:green"]
    for k, (label, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(kernels))]
        shown = [(x, v) for x, v in zip(xs, values) if v is not None and math.isfinite(v)]
        ax.bar([x for x, _ in shown], [v for _, v in shown], width, label=label,
               color=colors[k % len(colors)])
        if label in TARGETS:
            ax.axhline(TARGETS[label], color=colors[k % len(colors)], linestyle="--",
                       linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels(kernels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("time ratio (log scale; dashed: targets)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"chart saved to {path}"
