"""Figures of the fair test (the chapter "The fair test on real tables")."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .palette import checked_study_palette, variant_styles
from .plots_page import PAGE_WIDTH, alt_text, legend_below, set_alt

__all__ = ["log_ticks", "plot_learning_curves", "plot_routing"]


def log_ticks(low: float, high: float) -> list[float]:
    """Round ticks for a log axis from ``low`` to ``high``: 1, 2 and 5 times each power of ten in
    that range (1, 2, 3 and 5 when the range spans less than one decade, so 3 and 2 do not crowd)."""
    if not 0 < low <= high:
        raise ValueError(f"a log axis needs 0 < low <= high, got {low}, {high}")
    subs = (1, 2, 3, 5) if high / low < 10 else (1, 2, 5)
    out = [m * 10.0**e for e in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1) for m in subs]
    return [t for t in out if low <= t <= high]


def _thousands(x: float, _pos=None) -> str:
    """A tick label in thousands: 20000 reads "20k"."""
    return f"{x / 1000:g}k" if x >= 1000 else f"{x:g}"


def plot_learning_curves(curves: pd.DataFrame, methods: list[str], labels: dict[str, str]):
    """Two panels: pooled test accuracy at each kept checkpoint against question visits (left) and
    against the reasoner answers read (right, log scale, round ticks), mean over seeds with a band of
    one standard error of that mean. ``curves``: :func:`fgpo_core.reports.fair.learning_curves`. Each estimator keeps
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
            se = acc.std(ddof=1).fillna(0.0) / np.sqrt(acc.count())
            ax.fill_between(xs, acc.mean() - se, acc.mean() + se, color=pal[m], alpha=0.15, lw=0)
            if x == "visits":
                handles.append(h)
        ax.set_xlabel(xlabel)
        if x == "reward_evaluations":
            ax.set_xscale("log")
            xs_all = curves[x][curves[x] > 0]
            if len(xs_all):
                ax.xaxis.set_major_locator(FixedLocator(log_ticks(xs_all.min(), xs_all.max())))
                ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
                ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel("test accuracy (%), pooled")
    legend_below(fig, handles, [h.get_label() for h in handles])
    return set_alt(
        fig,
        "Two panels: pooled test accuracy of each method at its kept checkpoints, against question visits "
        "and against the reasoner answers read, mean over seeds with a band over seeds, for "
        + ", ".join(labels.get(m, m) for m in methods)
        + ".",
    )


def plot_routing(rates: dict, title: str):
    """The tool-call grid of :func:`fgpo_core.book.plots.plot_tool_rates` (``rates``: selector -> a
    frame of families by tools, %, families already labelled) with a colour bar, "% of questions",
    at the page's width."""
    from .plots import plot_tool_rates

    fig = plot_tool_rates(rates, title)
    ax = fig.axes[0]
    for t in ax.texts:  # the cells' numbers, not the bold family names above them
        if t.get_fontweight() == "normal":
            t.set_fontsize(9)
    bar = fig.colorbar(ax.collections[0], ax=ax, fraction=0.03, pad=0.01, aspect=15)
    bar.set_label("% of questions", fontsize=9)
    bar.ax.tick_params(labelsize=9)
    return set_alt(fig, alt_text(fig) + " A colour bar gives the scale, 0 to 100% of questions.")
