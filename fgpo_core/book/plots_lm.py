"""Plots of the language-model selector's training: the format warm-up and each run's dev course
(the chapter "FGPO versus GRPO"), in the house style of :mod:`fgpo_core.book.plots`."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .palette import color, variant_styles

__all__ = ["plot_warmup", "plot_lm_dev", "plot_pool_course"]


def plot_warmup(dev: pd.DataFrame, steps: pd.DataFrame, target: float = 0.95):
    """The format warm-up (:func:`fgpo_core.experiments.report.warmup_curve`): p_gen's mass on the
    policy strings, on dev after each epoch (mean and least question) and on each training batch,
    with the target; stages shaded apart."""
    fig, ax = plt.subplots(figsize=(8, 4))
    for stage, rows in steps.groupby("stage"):
        ax.plot(rows.epoch_float, rows.train_mass, "-", c=color("SFT"), alpha=0.45, lw=1,
                label="training batch" if stage == 1 else None)
        if stage > 1:
            ax.axvspan(rows.epoch_float.min() - 1 / max(len(rows), 1), rows.epoch_float.max(), color="0.93", zorder=0,
                       label=f"stage {stage}")
    ax.plot(dev.epoch, dev.dev_mass_mean, "o-", c=color("FGPO"), label="dev mean")
    ax.plot(dev.epoch, dev.dev_mass_min, "v:", c=color("FGPO"), alpha=0.7, label="dev least question")
    ax.axhline(target, c="k", ls="--", lw=1, label=f"target {target:.0%}")
    ax.set(xlabel="epoch", ylabel="p_gen's mass on the 16 policy strings", ylim=(0, 1.02),
           title="The format warm-up")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_lm_dev(dev: pd.DataFrame, steps: dict | None = None):
    """The LM selectors' training at a glance, against question visits, each run in its method's
    colour (variants of one method apart by marker and line style): dev accuracy by free
    generation (★ the kept checkpoint; dashed: a run stopped on purpose), dev format failures,
    p_gen's mass on the policy strings over each training batch (FGPO runs log it) and tools per
    question of greedy generation on dev. ``dev`` is :func:`fgpo_core.experiments.report.dev_table`;
    ``steps`` maps a run's label to its per-step log (a frame with ``visits`` and ``p_gen_mass``)."""
    runs = list(dict.fromkeys(dev.run))
    spare = iter(sns.color_palette("colorblind", len(runs)).as_hex())
    palette = {r: color(r) if color(r) != "#333333" else next(spare) for r in runs}  # FGPO's variants: FGPO's colour
    stopped = {r for r in runs if dev[dev.run == r].stopped.any()}
    marker = {r: mk for r, (_, mk) in variant_styles(palette).items()}
    style, seen = {}, {}
    for r in runs:  # a stopped run dashed; the others of one colour solid, dash-dotted, dotted
        i = seen.get(palette[r], 0)
        seen[palette[r]] = i + (r not in stopped)
        style[r] = "--" if r in stopped else ("-", "-.", ":", (0, (6, 1.5)))[i % 4]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    panels = [(axes[0, 0], "generation", "Dev accuracy (free generation)", "accuracy (%)"),
              (axes[0, 1], "format_failures", "Dev format failures (free generation)", "format failures (%)"),
              (axes[1, 1], "tools", "Tools per question (greedy generation, dev)", "tools")]
    for r in runs:
        d = dev[dev.run == r].sort_values("visits")
        for ax, col, title, unit in panels:
            ax.plot(d.visits, d[col], ls=style[r], marker=marker[r], c=palette[r], ms=4.5, label=r)
            ax.set(title=title, xlabel="question visits", ylabel=unit)
        kept = d[d.kept]
        axes[0, 0].scatter(kept.visits, kept.generation, marker="*", s=220, c=palette[r], edgecolor="k", zorder=4)
    axes[0, 1].set_ylim(-3, 103)
    ax = axes[1, 0]
    for r, log in (steps or {}).items():
        if "p_gen_mass" in log and len(log):
            ax.plot(log.visits, log.p_gen_mass, ls=style.get(r, "-"), c=palette.get(r, color(r)), label=r)
    ax.set(title="p_gen's mass on the 16 policy strings (training batches)", xlabel="question visits",
           ylabel="mass", ylim=(-0.03, 1.03))
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_pool_course(course: pd.DataFrame, references: dict[str, float] | None = None,
                     dead: pd.DataFrame | None = None):
    """The whole pool's runs (:func:`fgpo_core.experiments.pool_report.dev_course`) side by side:
    dev accuracy by free generation against question visits and against the CPU hours of training,
    each run in its method's colour, ★ at the kept evaluation; ``references`` (a label to a dev
    accuracy, such as a fixed subset's) drawn as grey lines. With ``dead`` (GRPO's
    :func:`~fgpo_core.experiments.report.grpo_dead_groups`), a third panel: the share of its groups
    that were dead at each step, by the exact recount."""
    fig, axes = plt.subplots(1, 3 if dead is not None else 2, figsize=(13.5 if dead is not None else 11, 3.9))
    for ax, x, xlabel, title in ((axes[0], "visits", "question visits", "dev accuracy against visits"),
                                 (axes[1], "cpu_hours", "CPU hours of training", "dev accuracy against CPU time")):
        ax.set_title(title)
        for i, (label, ref) in enumerate((references or {}).items()):
            ax.axhline(ref, c="0.55", lw=1, ls=("--", ":", "-.")[i % 3], label=label)
        for run, d in course.groupby("run", sort=False):
            d = d.sort_values("step")
            ax.plot(d[x], d.generation, "o-", c=color(run), ms=4.5, label=run)
            kept = d[d.kept]
            ax.scatter(kept[x], kept.generation, marker="*", s=220, c=color(run), edgecolor="k", zorder=4)
        ax.set(xlabel=xlabel, xlim=(0, None), ylabel="dev accuracy, free generation (%)")
    axes[1].set_ylim(axes[0].get_ylim())
    axes[0].legend(fontsize=8, loc="lower right")
    if dead is not None:
        ax = axes[2]
        d = dead.dropna(subset=["recount"])
        ax.plot(d.visits, 100 * d.recount, "o-", c=color("GRPO"), ms=4)
        ax.set(xlabel="question visits", ylabel="GRPO's dead groups (%)", ylim=(0, 103), xlim=(0, None),
               title="dead groups per step (exact recount)")
    fig.tight_layout()
    return fig
