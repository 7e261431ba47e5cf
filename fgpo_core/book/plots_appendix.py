"""The appendix's figure: one small panel per ablation, several runs to a panel, each in its method's
registry colour (:mod:`fgpo_core.book.palette`), variants of one method by dash and marker, the
paper's points as open grey squares on the same axis, and one legend under the panels (no label is
written inside a panel, so none can overlap another)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from .palette import check_distinct
from .plots_compare import PAPER_STYLE
from .plots_page import PAGE_WIDTH, legend_below, set_alt

__all__ = ["plot_appendix_panels"]


def plot_appendix_panels(panels: list[dict], alt: str, ncols: int = 2, panel_height: float = 2.5):
    """Panels in ``ncols`` columns at the page's width. Each panel: ``title``, ``xlabel``, ``x`` (the
    settings, in order), ``series`` (a list of ``{"label", "colour", "mean"}`` with optional ``err``
    (half-widths or ``[low, high]`` offsets), ``ls`` and ``marker``; ``mean`` lines up with ``x``,
    None where a setting was not run), optional ``paper`` (setting -> the paper's accuracy),
    ``log_x`` (base 2) and ``categorical`` (settings evenly spaced, shown as written). The legend
    under the panels lists each label once; two series of one figure that share a label must share
    a colour, and different labels with one colour must differ by dash or marker. ``alt``: what the
    figure shows, for a reader who cannot see it."""
    if not panels:
        raise ValueError("give at least one panel")
    rows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        rows, ncols, figsize=(PAGE_WIDTH, panel_height * rows + 0.9), squeeze=False, layout="constrained"
    )
    handles: dict[str, Line2D] = {}
    styles: dict[str, tuple] = {}
    any_paper = False
    for ax, p in zip(axes.flat, panels):
        settings = list(p["x"])
        pos = list(range(len(settings))) if p.get("categorical") else settings
        for s in p["series"]:
            style = (s["colour"], s.get("ls", "-"), s.get("marker", "o"))
            if styles.setdefault(s["label"], style) != style:
                raise ValueError(f"{s['label']!r} is drawn in two styles")
            pts = [(x, m, i) for i, (x, m) in enumerate(zip(pos, s["mean"])) if m is not None]
            if not pts:
                continue
            xs, ms, idx = zip(*pts)
            err = s.get("err")
            if err is not None:
                err = [[err[0][i] for i in idx], [err[1][i] for i in idx]] if len(err) == 2 else [err[i] for i in idx]
            ax.errorbar(xs, ms, yerr=err, c=style[0], ls=style[1], marker=style[2], ms=5, lw=1.6, capsize=2.5)
            handles.setdefault(s["label"], Line2D([], [], c=style[0], ls=style[1], marker=style[2], ms=5))
        if p.get("paper"):
            keys = [k for k in p["paper"] if k in settings]
            ax.plot([pos[settings.index(k)] for k in keys], [p["paper"][k] for k in keys], **PAPER_STYLE)
            any_paper = True
        if p.get("log_x"):
            ax.set_xscale("log", base=2)
            ax.set_xticks(settings, [f"{v:g}" for v in settings])
            ax.minorticks_off()
        elif p.get("categorical"):
            ax.set_xticks(pos, [str(v) for v in settings])
        ax.set(title=p["title"], xlabel=p["xlabel"], ylabel="accuracy (%)")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    variants = [(c, str(ls), mk) for c, ls, mk in styles.values()]
    if len(set(variants)) < len(variants):
        raise ValueError("two labels of the figure are drawn alike (same colour, dash and marker)")
    check_distinct({label: c for label, (c, _, _) in styles.items()}, what="the appendix's figure")
    if any_paper:
        handles["the paper (GenomeQA)"] = Line2D([], [], **PAPER_STYLE)
    legend_below(fig, list(handles.values()), list(handles), ncol=2)
    return set_alt(fig, alt)
