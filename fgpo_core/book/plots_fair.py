"""Figures of the fair test (the chapter "Exact versus sampled on the real tables")."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import NullFormatter

from .palette import checked_study_palette, variant_styles
from .plots_page import PAGE_WIDTH, legend_below, set_alt

__all__ = ["plot_learning_curves"]


def plot_learning_curves(curves: pd.DataFrame, methods: list[str], labels: dict[str, str]):
    """Two panels: pooled test accuracy at each kept checkpoint against question visits (left) and
    against the reasoner answers read (right, log scale), mean over seeds with a band from the lowest
    to the highest seed. ``curves``: :func:`fgpo_core.reports.fair.learning_curves`. Each estimator keeps
    its registry colour; its variants (regularizers) differ by dash and marker."""
    pal = checked_study_palette(methods, "the learning curves")
    style = variant_styles(pal)
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.9), layout="constrained", sharey=True)
    handles = []
    for ax, (x, xlabel) in zip(
        axes, (("visits", "question visits"), ("reward_evaluations", "reasoner answers read (log scale)"))
    ):
        for m in methods:
            f = curves[curves.method == m]
            if f.empty:
                continue
            g = f.groupby("step")
            xs, acc = g[x].mean(), g["accuracy"]
            ls, mk = style[m]
            (h,) = ax.plot(xs, acc.mean(), c=pal[m], ls=ls, marker=mk, ms=4.5, lw=1.8, label=labels.get(m, m))
            ax.fill_between(xs, acc.min(), acc.max(), color=pal[m], alpha=0.10, lw=0)
            if x == "visits":
                handles.append(h)
        ax.set_xlabel(xlabel)
        if x == "reward_evaluations":
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())  # 2x10^4, 3x10^4 ... would overlap
    axes[0].set_ylabel("test accuracy (%), pooled")
    legend_below(fig, handles, [h.get_label() for h in handles])
    return set_alt(
        fig,
        "Two panels: pooled test accuracy of each method at its kept checkpoints, against question visits "
        "and against the reasoner answers read, mean over seeds with a band over seeds, for "
        + ", ".join(labels.get(m, m) for m in methods)
        + ".",
    )
