"""Figures that set runs beside each other or beside the paper: the appendix's ablations and
checkpoints, the post-training chapter's in- and out-of-domain plots, and what the shortlists of
"Past enumeration" see; in the house style of :mod:`fgpo_core.book.palette`."""

from __future__ import annotations

from typing import Callable

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from ..core.method_names import parse_stages
from .palette import (
    LINESTYLES,
    MARKERS,
    METHOD_COLORS,
    check_distinct,
    checked_study_palette,
    color,
    family_style,
    spare_colour,
    variant_styles,
)
from .plots_page import PAGE_WIDTH, legend_below, set_alt

__all__ = [
    "PAPER_STYLE",
    "plot_ablation_panels",
    "plot_checkpoints",
    "plot_id_ood_panels",
    "plot_id_ood_plane",
    "plot_lm_companion",
    "plot_shortlist_coverage",
]

PAPER_STYLE = {
    "c": METHOD_COLORS["paper"],
    "marker": "s",
    "ms": 5,
    "mfc": "white",
    "mew": 1.3,
    "ls": "--",
    "lw": 0.9,
    "alpha": 0.85,
}
"""How the paper's numbers are drawn: open grey squares joined by a thin dashed line, on the
same axes as ours."""


def plot_ablation_panels(panels: list[dict], ncols: int = 2, questions: str = "core"):
    """One small panel per ablation: accuracy (mean over seeds, bars = sd) against the setting and,
    on the same accuracy axis, the paper's points (open grey squares, GenomeQA: another selector
    and reasoner, so its level is not ours; read the shape). One legend under the panels.

    Each panel: ``title``, ``x`` (settings), ``mean``, ``sd``, ``xlabel``; optional ``paper``
    (setting -> accuracy), ``log_x``, ``refs`` (name -> accuracy, dotted lines). ``questions``
    names the test questions the accuracies are over, in the legend. Panels in ``ncols`` columns at
    the page's width."""
    n = len(panels)
    ncols = min(ncols, n)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(PAGE_WIDTH, 2.7 * rows + 0.8), squeeze=False, layout="constrained")
    any_paper = False
    for ax, p in zip(axes.flat, panels):
        numeric = p.get("numeric", True)
        x = p["x"] if numeric else list(range(len(p["x"])))
        ours = METHOD_COLORS["GRPO"] if "GRPO" in p["title"] else METHOD_COLORS["FGPO"]
        ax.errorbar(x, p["mean"], yerr=p["sd"], marker="o", c=ours, capsize=3)
        for name, v in (p.get("refs") or {}).items():
            ax.axhline(v, c="#888888", ls=":", lw=1)
            ax.annotate(name, (1.0, v), xycoords=("axes fraction", "data"), ha="right", va="bottom", color="#555555")
        if p.get("paper"):
            keys = [k for k in p["paper"] if k in p["x"]]
            px = [k if numeric else x[p["x"].index(k)] for k in keys]
            ax.plot(px, [p["paper"][k] for k in keys], **PAPER_STYLE)
            any_paper = True
        if p.get("log_x"):
            ax.set_xscale("log", base=2)
        if not numeric:
            ax.set_xticks(x, [str(v) for v in p["x"]])
        ax.set(title=p["title"], xlabel=p["xlabel"], ylabel="accuracy (%)")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], c=METHOD_COLORS["FGPO"], marker="o", label=f"FGPO, this book ({questions}; mean, bars: sd)"),
        Line2D([], [], c=METHOD_COLORS["GRPO"], marker="o", label="GRPO, this book"),
    ]
    if any_paper:
        handles.append(Line2D([], [], **PAPER_STYLE, label="the paper (GenomeQA)"))
    legend_below(fig, handles, [h.get_label() for h in handles], ncol=1)
    return set_alt(
        fig,
        f"{n} small panels of ablations ({'; '.join(p['title'] for p in panels)}): this book's "
        f"accuracy (mean, bars: standard deviation over seeds) against each setting"
        + (", beside the paper's points (open grey squares)" if any_paper else "")
        + ".",
    )


def plot_checkpoints(ckpt: pd.DataFrame, labels: dict[str, str], paper: dict | None = None):
    """Accuracy and tools per question at each checkpoint (mean over seeds), one line per method,
    against the share of training done. Our runs count epochs and the paper's GRPO counts steps
    (every 25 of 200), so both are drawn on one axis as the share of their own training: ours at
    epoch / last epoch, the paper's (open grey squares, same y-axis) at step / last step."""
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.6), layout="constrained")
    last = float(ckpt.epoch.max())
    names = {m: labels.get(m, m) for m in dict.fromkeys(ckpt.method)}
    styles = variant_styles(check_distinct({n: color(n) for n in names.values()}, what="the checkpoints figure"))
    for m, f in ckpt.groupby("method", sort=False):
        name = names[m]
        share = 100 * f.epoch / last
        ls, mk = styles[name]
        axes[0].plot(
            share, f.accuracy, marker=mk, ls=ls, ms=4, c=color(name), label=f"{name} (epoch {int(last)} = 100%)"
        )
        axes[1].plot(share, f.tools, marker=mk, ls=ls, ms=4, c=color(name))
    if paper:
        steps = list(paper["steps"])
        share = [100 * s / steps[-1] for s in steps]
        axes[0].plot(share, paper["accuracy"], **PAPER_STYLE, label=f"the paper's GRPO (step {steps[-1]} = 100%)")
        axes[1].plot(share, paper["tools"], **PAPER_STYLE)
    axes[0].set(xlabel="share of training (%)", ylabel="accuracy (%)", title="accuracy at each checkpoint")
    axes[1].set(xlabel="share of training (%)", ylabel="tools per question", title="tools per question")
    for ax in axes:
        ax.set_xlim(0, 103)
    legend_below(fig, ax=axes[0], ncol=1)
    return set_alt(
        fig,
        f"Two panels: accuracy and tools per question at each checkpoint of "
        f"{', '.join(names.values())}, against the share of training done"
        + (", beside the paper's GRPO checkpoints (open grey squares)" if paper else "")
        + ".",
    )


def _series_colours(names) -> dict:
    """Each series its method's colour (:func:`~fgpo_core.book.palette.color`), or a spare colour
    apart from those already taken when it names no method."""
    out: dict = {}
    for name in names:
        c = color(name)
        out[name] = c if c != "#333333" else spare_colour(out.values())
    return out


def plot_id_ood_panels(panels: list[dict], ncols: int = 2):
    """In-domain (solid, filled circles) and out-of-domain (dashed, open squares) accuracy against a
    setting, one panel per experiment in ``ncols`` columns at the page's width, each method in its
    colour, one legend under the panels. Each panel: ``title``, ``xlabel``, ``series`` (name ->
    frame indexed by the setting with columns ID, ID sd, OOD, OOD sd), optional ``log_x``."""
    n = len(panels)
    ncols = min(ncols, n)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(PAGE_WIDTH, 3.0 * rows + 0.9), squeeze=False, layout="constrained")
    handles: dict = {}
    for ax, p in zip(axes.flat, panels):
        colours = _series_colours(p["series"])
        check_distinct(colours, what=f"the panel {p['title']!r}")
        for name, f in p["series"].items():
            c = colours[name]
            for dom, ls, mk, mfc, word in (
                ("ID", "-", "o", c, "in domain"),
                ("OOD", "--", "s", "white", "out of domain"),
            ):
                h = ax.errorbar(
                    f.index,
                    f[dom],
                    yerr=f.get(f"{dom} sd"),
                    ls=ls,
                    marker=mk,
                    ms=5,
                    mfc=mfc,
                    mec=c,
                    capsize=2,
                    c=c,
                    label=f"{name}, {word}",
                )
                handles.setdefault(f"{name}, {word}", h)
        if p.get("log_x"):
            ax.set_xscale("log", base=2)
        ax.set(title=p["title"], xlabel=p["xlabel"], ylabel="accuracy (%)")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    legend_below(fig, list(handles.values()), list(handles))
    return set_alt(
        fig,
        f"{n} panels ({'; '.join(p['title'] for p in panels)}): in-domain accuracy (solid, filled "
        "circles) and out-of-domain accuracy (dashed, open squares) against the setting, for "
        f"{', '.join(dict.fromkeys(s for p in panels for s in p['series']))}.",
    )


def plot_id_ood_plane(trajectories: dict, title: str = "ID against OOD over training"):
    """Each trajectory (name -> frame with ID and OOD columns in training order) as a path in the
    ID-OOD plane in its method's colour, its start marked by a dot and its end by an arrow head;
    trajectories of one method differ by line style and marker (solid, dashed, dash-dotted)."""
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 5.4), layout="constrained")
    colours = check_distinct(_series_colours(trajectories), what="the ID-OOD plane")
    styles = variant_styles(colours)
    for name, f in trajectories.items():
        c, (ls, mk) = colours[name], styles[name]
        ax.plot(f.ID, f.OOD, c=c, lw=1.5, ls=ls, marker=mk, ms=5, label=name)
        ax.scatter(f.ID.iloc[:1], f.OOD.iloc[:1], c=[c], s=40, marker=mk, edgecolor="k", zorder=3)
        if len(f) > 1:
            ax.annotate(
                "",
                xy=(f.ID.iloc[-1], f.OOD.iloc[-1]),
                xytext=(f.ID.iloc[-2], f.OOD.iloc[-2]),
                arrowprops={"arrowstyle": "-|>", "color": c},
            )
    ax.set(xlabel="in-domain accuracy (%)", ylabel="out-of-domain accuracy (%)", title=title)
    legend_below(fig, ax=ax)
    return set_alt(
        fig,
        f"{title}: each run ({', '.join(trajectories)}) as a path in the plane of in-domain "
        "accuracy (x) against out-of-domain accuracy (y), from a dot at its start to an arrow at "
        "its end.",
    )


def plot_lm_companion(
    table: pd.DataFrame,
    start: str = "start",
    title: str = "The LM selector: from its start to each arm's last adapter",
    labels: dict[str, str] | None = None,
):
    """One ID-OOD plane per LoRA rank: the shared start (grey circle) and an arrow from it to each
    trained arm's accuracy. ``table``:
    :func:`~fgpo_core.reports.companion.lm_companion_table` (indexed by arm and rank);
    ``labels``: arm -> its name in the legend."""
    labels = labels or {}
    ranks = sorted(set(table.index.get_level_values(1)))
    arms = [a for a in dict.fromkeys(table.index.get_level_values(0)) if a != start]

    known = {a: color({"sft": "SFT", "fgpo": "FGPO", "grpo": "GRPO"}[a]) for a in arms if a in ("sft", "fgpo", "grpo")}
    colours = dict(known)
    for a in arms:
        if a not in colours:
            colours[a] = spare_colour(colours.values())

    def arm_color(a, i):
        return colours[a]

    ncols = min(2, len(ranks))
    rows = -(-len(ranks) // ncols)
    fig, axes = plt.subplots(
        rows,
        ncols,
        figsize=(PAGE_WIDTH, 3.3 * rows + 1.0),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    check_distinct({labels.get(a, a): arm_color(a, i) for i, a in enumerate(arms)}, what="the LM companion figure")
    for ax, r in zip(axes.flat, ranks):
        t = table.xs(r, level=1)
        if start in t.index:
            x0, y0 = t.loc[start, "ID"], t.loc[start, "OOD"]
            ax.scatter([x0], [y0], s=45, color=METHOD_COLORS["Warm-up"], zorder=3, label=labels.get(start, start))
        for i, a in enumerate(arms):
            if a not in t.index:
                continue
            c = arm_color(a, i)
            ax.scatter(
                [t.loc[a, "ID"]],
                [t.loc[a, "OOD"]],
                s=36,
                color=c,
                marker=MARKERS[(i + 1) % len(MARKERS)],
                zorder=3,
                label=labels.get(a, a),
            )
            if start in t.index:
                ax.annotate(
                    "",
                    xy=(t.loc[a, "ID"], t.loc[a, "OOD"]),
                    xytext=(x0, y0),
                    arrowprops={"arrowstyle": "-|>", "color": c, "lw": 1.3, "shrinkA": 4, "shrinkB": 4},
                )
        ax.set(title=f"LoRA rank {r}", xlabel="in-domain accuracy (%)", ylabel="out-of-domain accuracy (%)")
    for ax in list(axes.flat)[len(ranks) :]:
        ax.set_visible(False)
    handles: dict = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    legend_below(fig, list(handles.values()), list(handles))
    fig.suptitle(title)
    return set_alt(
        fig,
        f"{title}: one panel per LoRA rank ({', '.join(map(str, ranks))}), each an arrow in the plane "
        "of in-domain (x) against out-of-domain accuracy (y) from the shared start (grey) to each "
        f"arm ({', '.join(labels.get(a, a) for a in arms)}).",
    )


def plot_shortlist_coverage(seen: dict, label: Callable[[str], str] = str, last_epoch: int | None = None):
    """What the shortlists see: per library size (``seen``: n tools -> a frame of
    :func:`~fgpo_core.reports.larger.seen_by_epoch`, epochs by methods), the share of
    training visits whose evaluated subsets held a best subset, epoch by epoch. Exact FGPO and
    GRPO are left out; each dial keeps its registry palette (coverage dial blues, top shortlists
    greens, grow shortlists purples, darker for a larger budget) and its marker of
    :data:`~fgpo_core.book.palette.FAMILY_STYLE`, and the
    epoch axis spans the epochs drawn (up to ``last_epoch``)."""
    fig, axes = plt.subplots(
        len(seen), 1, figsize=(PAGE_WIDTH, 2.5 * len(seen) + 1.3), sharey=True, squeeze=False, layout="constrained"
    )
    seen = {n: s if last_epoch is None else s[s.index <= last_epoch] for n, s in seen.items()}
    every = [m for s in seen.values() for m in s.columns if m != "fgpo" and not m.startswith("grpo")]
    fams = {m: parse_stages(m)[-1] for m in every}
    every = sorted(dict.fromkeys(every), key=lambda m: (fams[m].family, fams[m].k or 0))
    pal = checked_study_palette(every, "the shortlists' figure")  # one colour per method across the panels
    rank = {m: [x for x in every if fams[x].family == fams[m].family].index(m) for m in every}  # shade order
    handles = {}
    for ax, (n, s) in zip(axes[:, 0], seen.items()):
        for m in [m for m in every if m in s.columns and s[m].notna().any()]:
            d = s[m].dropna()
            (h,) = ax.plot(
                d.index,
                d,
                c=pal[m],
                marker=family_style(m)[2],
                ls=LINESTYLES[rank[m] % len(LINESTYLES)],
                ms=5,
                lw=1.5,
                label=label(m),
            )
            handles.setdefault(label(m), h)
        if len(s.index):
            ax.set_xlim(s.index.min() - 0.5, s.index.max() + 0.5)
        ax.set(ylabel="visits holding\na best subset (%)", title=f"{n} tools", ylim=(0, 102))
    axes[-1, 0].set_xlabel("epoch")
    legend_below(fig, list(handles.values()), list(handles))
    return set_alt(
        fig,
        f"One panel per library size ({', '.join(f'{n} tools' for n in seen)}): the share of training "
        "visits whose evaluated subsets held a best subset, epoch by epoch, one line per shortlist "
        f"and coverage-dial setting ({', '.join(handles)}).",
    )
