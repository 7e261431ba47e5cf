"""Plots of the language-model selector's training: the format warm-up and each run's dev course
(the chapter "FGPO versus GRPO"), in the house style of :mod:`fgpo_core.book.plots`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .palette import MARKERS, check_distinct, color, spare_colour, variant_styles
from .plots_page import PAGE_WIDTH, legend_below, set_alt

__all__ = ["plot_warmup", "plot_lm_dev", "plot_pool_course"]


def plot_warmup(dev: pd.DataFrame, steps: pd.DataFrame, target: float = 0.95):
    """The format warm-up (:func:`fgpo_core.reports.lm_runs.warmup_curve`): p_gen's mass on the
    policy strings, on dev after each epoch (mean and least question) and on each training batch,
    with the target; stages shaded apart."""
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 3.8), layout="constrained")
    for stage, rows in steps.groupby("stage"):
        ax.plot(
            rows.epoch_float,
            rows.train_mass,
            "-",
            c=color("SFT"),
            alpha=0.45,
            lw=1,
            label="training batch" if stage == 1 else None,
        )
        if stage > 1:
            ax.axvspan(
                rows.epoch_float.min() - 1 / max(len(rows), 1),
                rows.epoch_float.max(),
                color="0.93",
                zorder=0,
                label=f"stage {stage}",
            )
    ax.plot(dev.epoch, dev.dev_mass_mean, "o-", c=color("FGPO"), label="dev mean")
    ax.plot(dev.epoch, dev.dev_mass_min, "v:", c=color("FGPO"), alpha=0.7, label="dev least question")
    ax.axhline(target, c="k", ls="--", lw=1, label=f"target {target:.0%}")
    ax.set(xlabel="epoch", ylabel="p_gen's mass on the 16 policy strings", ylim=(0, 1.02), title="The format warm-up")
    ax.legend(loc="lower right")
    return set_alt(
        fig,
        f"The format warm-up: p_gen's mass on the 16 policy strings against the epoch, on each "
        f"training batch and on dev (mean and least question), rising to the target of {target:.0%}.",
    )


def plot_lm_dev(dev: pd.DataFrame, steps: dict | None = None):
    """The LM selectors' training at a glance, against question visits, each run in a colour of its
    own (the first run of a method in the method's colour, the others in spare colours kept apart
    by :func:`~fgpo_core.book.palette.check_distinct`) and a marker of its own: dev accuracy by free
    generation (★ the kept checkpoint; dashed: a run stopped on purpose), dev format failures,
    p_gen's mass on the policy strings over each training batch (FGPO runs log it) and tools per
    question of greedy generation on dev. ``dev`` is :func:`fgpo_core.reports.lm_runs.dev_table`;
    ``steps`` maps a run's label to its per-step log (a frame with ``visits`` and ``p_gen_mass``)."""
    runs = list(dict.fromkeys(dev.run))
    palette: dict = {}
    for r in runs:  # a method's first run: its colour; a later run of it, or a run of no method: a spare colour
        c = color(r)
        palette[r] = c if c != "#333333" and c not in palette.values() else spare_colour(palette.values())
    stopped = {r for r in runs if dev[dev.run == r].stopped.any()}
    check_distinct(palette, what="the LM selectors' training figure")
    marker = {r: MARKERS[i % len(MARKERS)] for i, r in enumerate(runs)}
    style = {r: "--" if r in stopped else "-" for r in runs}  # a stopped run dashed, the others solid
    fig, axes = plt.subplots(2, 2, figsize=(PAGE_WIDTH, 7.4), layout="constrained")
    panels = [
        (axes[0, 0], "generation", "Dev accuracy (free generation)", "accuracy (%)"),
        (axes[0, 1], "format_failures", "Dev format failures", "format failures (%)"),
        (axes[1, 1], "tools", "Tools per question (dev)", "tools"),
    ]
    for r in runs:
        d = dev[dev.run == r].sort_values("visits")
        for ax, col, title, unit in panels:
            ax.plot(d.visits, d[col], ls=style[r], marker=marker[r], c=palette[r], ms=5, label=r)
            ax.set(title=title, xlabel="question visits", ylabel=unit)
        kept = d[d.kept]
        axes[0, 0].scatter(kept.visits, kept.generation, marker="*", s=220, c=palette[r], edgecolor="k", zorder=4)
    axes[0, 1].set_ylim(-3, 103)
    ax = axes[1, 0]
    for r, log in (steps or {}).items():
        if "p_gen_mass" in log and len(log):
            ax.plot(
                log.visits,
                log.p_gen_mass,
                ls=style.get(r, "-"),
                c=palette.get(r, color(r)),
                label=r,
                marker=marker.get(r),
                markevery=max(1, len(log) // 8),
                ms=5,
            )
    ax.set(
        title="p_gen's mass on the policy strings\n(training batches)",
        xlabel="question visits",
        ylabel="mass",
        ylim=(-0.03, 1.03),
    )
    legend_below(fig, ax=axes[0, 0], ncol=2)
    return set_alt(
        fig,
        f"Four panels of the LM selectors' training against question visits, one line per run "
        f"({', '.join(runs)}; a star at the kept checkpoint): dev accuracy by free generation, dev "
        "format failures, p_gen's mass on the policy strings over training batches and tools per "
        "question on dev.",
    )


def plot_pool_course(
    course: pd.DataFrame, references: dict[str, float] | None = None, dead: pd.DataFrame | None = None
):
    """The whole pool's runs (:func:`fgpo_core.reports.pool.dev_course`) side by side:
    dev accuracy by free generation against question visits and against the CPU hours of training,
    each run in its method's colour, ★ at the kept evaluation; ``references`` (a label to a dev
    accuracy, such as a fixed subset's) drawn as grey lines. With ``dead`` (GRPO's
    :func:`~fgpo_core.reports.lm_runs.grpo_dead_groups`), a third panel: the share of its groups
    that were dead at each step, by the exact recount."""
    runs = list(dict.fromkeys(course.run))
    check_distinct({r: color(r) for r in runs}, what="the pool's course figure")
    styles = variant_styles({r: color(r) for r in runs})
    fig, grid = (
        plt.subplots(2, 2, figsize=(PAGE_WIDTH, 6.6), layout="constrained")
        if dead is not None
        else plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.6), squeeze=False, layout="constrained")
    )
    axes = list(grid.flat)
    for ax, x, xlabel, title in (
        (axes[0], "visits", "question visits", "dev accuracy against visits"),
        (axes[1], "cpu_hours", "CPU hours of training", "... against CPU time"),
    ):
        ax.set_title(title)
        for i, (label, ref) in enumerate((references or {}).items()):
            ax.axhline(ref, c="0.55", lw=1, ls=("--", ":", "-.")[i % 3], label=label)
        for run, d in course.groupby("run", sort=False):
            d = d.sort_values("step")
            ax.plot(d[x], d.generation, ls=styles[run][0], marker=styles[run][1], c=color(run), ms=5, label=run)
            kept = d[d.kept]
            ax.scatter(kept[x], kept.generation, marker="*", s=220, c=color(run), edgecolor="k", zorder=4)
        ax.set(xlabel=xlabel, xlim=(0, None), ylabel="dev accuracy (%)")
    axes[1].set_ylim(axes[0].get_ylim())
    handles, labels = axes[0].get_legend_handles_labels()
    if dead is not None:
        ax = axes[2]
        d = dead.dropna(subset=["recount"])
        ax.plot(d.visits, 100 * d.recount, "o-", c=color("GRPO"), ms=5)
        ax.set(
            xlabel="question visits",
            ylabel="GRPO's dead groups (%)",
            ylim=(0, 103),
            xlim=(0, None),
            title="dead groups per step\n(exact recount)",
        )
        axes[3].axis("off")
        axes[3].legend(handles, labels, loc="center")
    else:
        legend_below(fig, handles, labels)
    return set_alt(
        fig,
        f"Dev accuracy by free generation of the whole pool's runs ({', '.join(runs)}; a star at the "
        "kept evaluation) against question visits and against CPU hours of training"
        + (", and the share of GRPO's groups that were dead at each step" if dead is not None else "")
        + ".",
    )
