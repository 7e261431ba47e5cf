"""Figures that set runs beside each other or beside the paper: the appendix's ablations and
checkpoints, the post-training chapter's in- and out-of-domain plots, and what the shortlists of
"Past enumeration" see; in the house style of :mod:`fgpo_core.book.palette`."""
from __future__ import annotations

from typing import Callable

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ..core.method_names import parse_stages
from .palette import METHOD_COLORS, color, family_style, study_palette, variant_styles

__all__ = ["PAPER_STYLE", "plot_ablation_panels", "plot_checkpoints", "plot_id_ood_panels", "plot_id_ood_plane",
           "plot_lm_companion", "plot_shortlist_coverage"]

PAPER_STYLE = {"c": METHOD_COLORS["paper"], "marker": "s", "ms": 5, "mfc": "white", "mew": 1.3, "ls": "--",
               "lw": 0.9, "alpha": 0.85}
"""How the paper's numbers are drawn: open grey squares joined by a thin dashed line, on the
same axes as ours."""


def plot_ablation_panels(panels: list[dict], ncols: int = 3, questions: str = "core"):
    """One small panel per ablation: accuracy (mean over seeds, bars = sd) against the setting and,
    on the same accuracy axis, the paper's points (open grey squares, GenomeQA: another selector
    and reasoner, so its level is not ours; read the shape). One legend under the panels.

    Each panel: ``title``, ``x`` (settings), ``mean``, ``sd``, ``xlabel``; optional ``paper``
    (setting -> accuracy), ``log_x``, ``refs`` (name -> accuracy, dotted lines). ``questions``
    names the test questions the accuracies are over, in the legend."""
    n = len(panels)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(4.0 * ncols, 3.3 * rows + 0.4), squeeze=False)
    any_paper = False
    for ax, p in zip(axes.flat, panels):
        numeric = p.get("numeric", True)
        x = p["x"] if numeric else list(range(len(p["x"])))
        ours = METHOD_COLORS["GRPO"] if "GRPO" in p["title"] else METHOD_COLORS["FGPO"]
        ax.errorbar(x, p["mean"], yerr=p["sd"], marker="o", c=ours, capsize=3)
        for name, v in (p.get("refs") or {}).items():
            ax.axhline(v, c="#888888", ls=":", lw=1)
            ax.annotate(name, (1.0, v), xycoords=("axes fraction", "data"), fontsize=7, ha="right", va="bottom",
                        color="#666666")
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
    handles = [Line2D([], [], c=METHOD_COLORS["FGPO"], marker="o", label=f"FGPO, this book ({questions}; mean, bars: sd)"),
               Line2D([], [], c=METHOD_COLORS["GRPO"], marker="o", label="GRPO, this book")]
    if any_paper:
        handles.append(Line2D([], [], **PAPER_STYLE, label="the paper (GenomeQA)"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def plot_checkpoints(ckpt: pd.DataFrame, labels: dict[str, str], paper: dict | None = None):
    """Accuracy and tools per question at each checkpoint (mean over seeds), one line per method,
    against the share of training done. Our runs count epochs and the paper's GRPO counts steps
    (every 25 of 200), so both are drawn on one axis as the share of their own training: ours at
    epoch / last epoch, the paper's (open grey squares, same y-axis) at step / last step."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    last = float(ckpt.epoch.max())
    for m, f in ckpt.groupby("method", sort=False):
        name = labels.get(m, m)
        share = 100 * f.epoch / last
        axes[0].plot(share, f.accuracy, marker="o", ms=3, c=color(name), label=f"{name} (epoch {int(last)} = 100%)")
        axes[1].plot(share, f.tools, marker="o", ms=3, c=color(name))
    if paper:
        steps = list(paper["steps"])
        share = [100 * s / steps[-1] for s in steps]
        axes[0].plot(share, paper["accuracy"], **PAPER_STYLE, label=f"the paper's GRPO (step {steps[-1]} = 100%)")
        axes[1].plot(share, paper["tools"], **PAPER_STYLE)
    axes[0].set(xlabel="share of training (%)", ylabel="accuracy (%)", title="accuracy at each checkpoint")
    axes[1].set(xlabel="share of training (%)", ylabel="tools per question", title="tools per question")
    for ax in axes:
        ax.set_xlim(0, 103)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _series_color(name: str, i: int) -> str:
    c = color(name)
    return c if c != "#333333" else sns.color_palette("deep")[i % 10]


def plot_id_ood_panels(panels: list[dict], ncols: int = 3):
    """In-domain (solid, filled circles) and out-of-domain (dashed, open squares) accuracy against a
    setting, one panel per experiment, each method in its colour. Each panel: ``title``, ``xlabel``,
    ``series`` (name -> frame indexed by the setting with columns ID, ID sd, OOD, OOD sd), optional
    ``log_x``."""
    n = len(panels)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, min(ncols, n), figsize=(4.3 * min(ncols, n), 3.5 * rows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        for i, (name, f) in enumerate(p["series"].items()):
            c = _series_color(name, i)
            for dom, ls, mk, mfc, word in (("ID", "-", "o", c, "in domain"), ("OOD", "--", "s", "white", "out of domain")):
                ax.errorbar(f.index, f[dom], yerr=f.get(f"{dom} sd"), ls=ls, marker=mk, ms=4, mfc=mfc, mec=c,
                            capsize=2, c=c, label=f"{name}, {word}")
        if p.get("log_x"):
            ax.set_xscale("log", base=2)
        ax.set(title=p["title"], xlabel=p["xlabel"], ylabel="accuracy (%)")
        ax.legend(fontsize=6.5)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_id_ood_plane(trajectories: dict, title: str = "ID against OOD over training"):
    """Each trajectory (name -> frame with ID and OOD columns in training order) as a path in the
    ID-OOD plane in its method's colour, its start marked by a dot and its end by an arrow head;
    trajectories of one method differ by line style and marker (solid, dashed, dash-dotted)."""
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    colours = {name: _series_color(name, i) for i, name in enumerate(trajectories)}
    styles = variant_styles(colours)
    for name, f in trajectories.items():
        c, (ls, mk) = colours[name], styles[name]
        ax.plot(f.ID, f.OOD, c=c, lw=1.5, ls=ls, marker=mk, ms=3.5, label=name)
        ax.scatter(f.ID.iloc[:1], f.OOD.iloc[:1], c=[c], s=40, marker=mk, edgecolor="k", zorder=3)
        if len(f) > 1:
            ax.annotate("", xy=(f.ID.iloc[-1], f.OOD.iloc[-1]), xytext=(f.ID.iloc[-2], f.OOD.iloc[-2]),
                        arrowprops={"arrowstyle": "-|>", "color": c})
    ax.set(xlabel="in-domain accuracy (%)", ylabel="out-of-domain accuracy (%)", title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_lm_companion(table: pd.DataFrame, start: str = "start",
                      title: str = "The LM selector: from its start to each arm's last adapter",
                      labels: dict[str, str] | None = None):
    """One ID-OOD plane per LoRA rank: the shared start (grey circle) and an arrow from it to each
    trained arm's accuracy. ``table``:
    :func:`~fgpo_core.experiments.companion_report.lm_companion_table` (indexed by arm and rank);
    ``labels``: arm -> its name in the legend."""
    labels = labels or {}
    ranks = sorted(set(table.index.get_level_values(1)))
    arms = [a for a in dict.fromkeys(table.index.get_level_values(0)) if a != start]

    def arm_color(a, i):
        if "sft" in a and "fgpo" in a:
            return "#2a6fb0"
        return color({"sft": "SFT", "fgpo": "FGPO", "grpo": "GRPO"}.get(a, a)) if a in ("sft", "fgpo", "grpo") \
            else sns.color_palette("deep")[i % 10]

    fig, axes = plt.subplots(1, len(ranks), figsize=(3.9 * len(ranks) + 0.6, 3.9), squeeze=False, sharex=True,
                             sharey=True)
    for ax, r in zip(axes.flat, ranks):
        t = table.xs(r, level=1)
        if start in t.index:
            x0, y0 = t.loc[start, "ID"], t.loc[start, "OOD"]
            ax.scatter([x0], [y0], s=45, color=METHOD_COLORS["Warm-up"], zorder=3, label=labels.get(start, start))
        for i, a in enumerate(arms):
            if a not in t.index:
                continue
            c = arm_color(a, i)
            ax.scatter([t.loc[a, "ID"]], [t.loc[a, "OOD"]], s=30, color=c, zorder=3, label=labels.get(a, a))
            if start in t.index:
                ax.annotate("", xy=(t.loc[a, "ID"], t.loc[a, "OOD"]), xytext=(x0, y0),
                            arrowprops={"arrowstyle": "-|>", "color": c, "lw": 1.3, "shrinkA": 4, "shrinkB": 4})
        ax.set(title=f"LoRA rank {r}", xlabel="in-domain accuracy (%)")
    axes.flat[0].set_ylabel("out-of-domain accuracy (%)")
    axes.flat[-1].legend(fontsize=7, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_shortlist_coverage(seen: dict, label: Callable[[str], str] = str, last_epoch: int | None = None):
    """What the shortlists see: per library size (``seen``: n tools -> a frame of
    :func:`~fgpo_core.experiments.larger_report.seen_by_epoch`, epochs by methods), the share of
    training visits whose evaluated subsets held a best subset, epoch by epoch. Exact FGPO and
    GRPO are left out; each dial keeps its registry palette (coverage dial blues, top shortlists
    greens, grow shortlists purples, darker for a larger budget) and its marker of
    :data:`~fgpo_core.book.palette.FAMILY_STYLE`, and the
    epoch axis spans the epochs drawn (up to ``last_epoch``)."""
    fig, axes = plt.subplots(1, len(seen), figsize=(5.2 * len(seen), 3.6), sharey=True, squeeze=False)
    seen = {n: s if last_epoch is None else s[s.index <= last_epoch] for n, s in seen.items()}
    every = [m for s in seen.values() for m in s.columns if m != "fgpo" and not m.startswith("grpo")]
    fams = {m: parse_stages(m)[-1] for m in every}
    every = sorted(dict.fromkeys(every), key=lambda m: (fams[m].family, fams[m].k or 0))
    pal = study_palette(every)  # one colour per method across the panels
    handles = {}
    for ax, (n, s) in zip(axes[0], seen.items()):
        for m in [m for m in every if m in s.columns and s[m].notna().any()]:
            d = s[m].dropna()
            (h,) = ax.plot(d.index, d, c=pal[m], marker=family_style(m)[2], ms=3.5, lw=1.5, label=label(m))
            handles.setdefault(label(m), h)
        if len(s.index):
            ax.set_xlim(s.index.min() - 0.5, s.index.max() + 0.5)
        ax.set(xlabel="epoch", title=f"{n} tools", ylim=(0, 102))
    axes[0][0].set_ylabel("visits holding a best subset (%)")
    fig.legend(handles=list(handles.values()), labels=list(handles), loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=8)
    fig.tight_layout()
    return fig
