"""The figure of the chapter "Five reasoners, three suites": FGPO's margin over GRPO in every cell
of the grid of reasoners by suites, as the paper draws its grid, with the paper's margins beside."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .palette import METHOD_COLORS, color
from .plots_page import PAGE_WIDTH, set_alt

__all__ = ["plot_grid"]


def _heatmap(ax, frame: pd.DataFrame, rows: Sequence[str], suites: Sequence[str], vmax: float, title: str):
    m = frame.set_index(["row", "suite"])
    values = np.array([[m.loc[(r, s), "gap"] if (r, s) in m.index else np.nan for s in suites] for r in rows])
    im = ax.imshow(values, cmap="RdBu", vmin=-vmax, vmax=vmax, aspect="auto")
    for i, r in enumerate(rows):
        for j, s in enumerate(suites):
            if (r, s) not in m.index:
                ax.text(j, i, "no table", ha="center", va="center", fontsize=8, color="#555555")
                continue
            gap, diff = m.loc[(r, s), "gap"], bool(m.loc[(r, s), "difference"])
            dark = abs(gap) > 0.55 * vmax
            ax.text(
                j,
                i,
                f"{gap:+.1f}".replace("-", "\u2212") + ("*" if diff else ""),
                ha="center",
                va="center",
                fontsize=10,
                fontweight="bold" if diff else "normal",
                color="white" if dark else "black",
            )
    ax.set_xticks(range(len(suites)), suites)
    ax.set_yticks(range(len(rows)), rows)
    ax.tick_params(length=0)
    ax.grid(False)
    ax.set_title(title, fontsize=10)
    return im


def plot_grid(
    own: pd.DataFrame,
    moved: pd.DataFrame,
    strips: Mapping[str, Sequence[float]],
    paper: Mapping[str, float],
    rows: Sequence[str],
    suites: Sequence[str],
    moved_from: str,
    rival: str = "GRPO + bonus",
):
    """Three panels: FGPO minus ``rival`` (points) in each (reasoner, suite) cell when each
    reasoner's selector trains on its own table (``own``), and when the selector trained on
    ``moved_from``'s table is scored in every reasoner's (``moved``, the paper's shape); then, one
    row each, the margins of ``strips`` (label -> a frame of ``gap`` and ``difference``; filled dots
    for a difference, open for none) beside the paper's fifteen
    margins over its GRPO, of which it reports the smallest, median, mean and largest (``paper``:
    :data:`fgpo_core.book.paper.TRANSFER`). Frames: ``row`` (reasoner label), ``suite``, ``gap``,
    ``difference``; a star marks an interval that excludes zero."""
    every = [own["gap"].to_numpy(), moved["gap"].to_numpy(), *(f["gap"].to_numpy() for f in strips.values())]
    vmax = max(1.0, float(np.nanmax(np.abs(np.concatenate(every)))))
    fig = plt.figure(figsize=(PAGE_WIDTH, 3.2 + 0.45 * len(rows) + 0.3 * len(strips)), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[0.9 + 0.35 * len(rows), 0.7 + 0.3 * len(strips)])
    axes = top.subplots(1, 2, sharey=True)
    _heatmap(axes[0], own, rows, suites, vmax, "each reasoner's\nown selector")
    im = _heatmap(axes[1], moved, rows, suites, vmax, f"the {moved_from}'s\nselector, moved")
    top.colorbar(im, ax=axes, shrink=0.9, label=f"FGPO − ({rival}), points")
    ax = bottom.subplots()
    for y, f in enumerate(strips.values()):
        g, diff = f["gap"].to_numpy(dtype=float), f["difference"].to_numpy(dtype=bool)
        jitter = np.linspace(-0.15, 0.15, len(g)) if len(g) > 1 else np.zeros(1)
        c = color("FGPO")
        ax.scatter(g[diff], (y + jitter)[diff], s=24, color=c, edgecolor=c, zorder=3)
        ax.scatter(g[~diff], (y + jitter)[~diff], s=24, facecolor="white", edgecolor=c, linewidth=1.0, zorder=3)
    y = len(strips)
    ax.plot([paper["margin_min"], paper["margin_max"]], [y, y], color=METHOD_COLORS["paper"], lw=2)
    ax.scatter([paper["margin_median"]], [y], marker="|", s=200, color=METHOD_COLORS["paper"], zorder=3)
    ax.scatter([paper["margin_mean"]], [y], marker="D", s=30, color=METHOD_COLORS["paper"], zorder=3)
    ax.axvline(0, color="#999999", lw=0.8)
    ax.set_yticks(range(len(strips) + 1), [*strips, f"paper ({paper['cells']} cells)"])
    ax.set_ylim(-0.5, len(strips) + 0.5)
    ax.set_xlabel("FGPO's margin, points (filled: a difference)")
    return set_alt(
        fig,
        f"Two heatmaps of FGPO's margin over {rival}, reasoners by test suites (red: {rival} ahead, blue: "
        "FGPO ahead, a star where the interval excludes zero): selectors trained on each reasoner's own "
        f"table, and the selector trained on the {moved_from}'s table scored in every reasoner's. Below, "
        "each cell's margin as a dot, one row per comparison, beside the paper's range of margins with "
        "its median and mean.",
    )
