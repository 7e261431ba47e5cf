"""One house style for every figure of the book."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import NullFormatter

from .palette import (
    FAMILY_STYLE,
    MARKERS,
    METHOD_COLORS,
    check_distinct,
    checked_study_palette,
    color,
    race_palette,
    set_style,
    study_palette,
)
from .plots_compare import (
    plot_ablation_panels,
    plot_checkpoints,
    plot_id_ood_panels,
    plot_id_ood_plane,
    plot_lm_companion,
    plot_shortlist_coverage,
)
from .plots_page import PAGE_WIDTH, legend_below, set_alt

__all__ = [
    "set_style",
    "METHOD_COLORS",
    "color",
    "race_palette",
    "plot_race",
    "plot_estimator_study",
    "plot_tool_rates",
    "collapse_identical",
    "study_palette",
    "plot_study_curves",
    "plot_study_accuracy",
    "plot_ablation_panels",
    "plot_checkpoints",
    "plot_id_ood_panels",
    "plot_id_ood_plane",
    "plot_lm_companion",
    "plot_subsets_and_methods",
    "plot_budget",
    "plot_shortlist_coverage",
]


def plot_race(race, smooth_epochs: float = 0.5):
    """The panels of a bandit race, at the page's width: greedy accuracy per epoch and per reward
    look-up, the closed-form dead-group rate at G=6 of every arm's current policy, and the policy
    entropy; where the race logged it, a panel of its own for the dead fraction each sampled arm
    observed in its own groups (first run, smoothed). Bands span the runs; each arm its colour and
    its dash in every panel, one legend."""
    evals, steps, order = race.evals, race.steps, race.order
    pal = race_palette(order)
    ks = [n for n in order if n.startswith("k-subset")]
    check_distinct({n: pal[n] for n in order if n not in ks[1:]}, what="the bandit race")  # k-subset arms: one family
    ceil = race.table.ceilings()
    band = ("pi", 100)
    dashes = dict(zip(order, ["", (4, 1.5), (1, 1), (5, 1, 1, 1), (3, 1, 1, 1, 1, 1), (6, 2)] * 2))
    observed = "dead_observed" in steps and steps["dead_observed"].notna().any()
    rows = 3 if observed else 2
    fig, axes = plt.subplots(rows, 2, figsize=(PAGE_WIDTH, 3.7 * rows), layout="constrained")
    kw = {
        "hue": "arm",
        "hue_order": order,
        "palette": pal,
        "style": "arm",
        "style_order": order,
        "dashes": dashes,
        "errorbar": band,
    }
    ax = axes[0, 0]
    sns.lineplot(data=evals, x="epoch", y="accuracy", ax=ax, **kw)
    for key, ls in (("oracle", "--"), ("no_tool", ":")):
        ax.axhline(ceil[key], ls=ls, c="k", lw=1)
        ax.text(evals.epoch.max(), ceil[key], key.replace("_", " "), va="bottom", ha="right")
    ax.set(title="Greedy accuracy per epoch", ylabel="accuracy (%)")
    ax = axes[0, 1]
    sns.lineplot(
        data=evals[evals.reward_evaluations > 0], x="reward_evaluations", y="accuracy", ax=ax, legend=False, **kw
    )
    ax.axhline(ceil["oracle"], ls="--", c="k", lw=1)
    ax.set(xscale="log", title="... per reward look-up", xlabel="reward look-ups (log scale)", ylabel="accuracy (%)")
    ax = axes[1, 0]
    sns.lineplot(data=evals, x="epoch", y="dead_G6", ax=ax, legend=False, **kw)
    ax.set(title="Dead groups at G = 6, closed form\n(each arm's current policy)", ylabel="dead-group probability (%)")
    ax = axes[1, 1]
    sns.lineplot(data=evals, x="epoch", y="entropy", ax=ax, legend=False, **kw)
    ax.set(title="Policy entropy", ylabel="mean entropy (nats)")
    if observed:
        ax = axes[2, 0]
        obs = steps.dropna(subset=["dead_observed"])
        for arm in (a for a in order if a in set(obs.arm)):
            d = obs[(obs.run == 0) & (obs.arm == arm)]
            per_epoch = max(1, int(round(len(d) / max(d.epoch.max(), 1e-9) * smooth_epochs)))
            (line,) = ax.plot(d.epoch, d.dead_observed.rolling(per_epoch, min_periods=1).mean(), c=pal[arm], lw=1.5)
            if dashes[arm]:
                line.set_dashes(dashes[arm])
        ax.set(
            title="Dead groups each sampled arm observed\n(its own reward, first run)",
            xlabel="epoch",
            ylabel="dead groups (%)",
            ylim=(0, 103),
        )
        handles, labels = axes[0, 0].get_legend_handles_labels()
        axes[0, 0].get_legend().remove()
        axes[2, 1].axis("off")
        axes[2, 1].legend(handles, labels, loc="center")
    else:
        legend_below(fig, ax=axes[0, 0])
    return set_alt(
        fig,
        f"Panels of the bandit race between {', '.join(order)}: greedy accuracy per epoch "
        "and per reward look-up against the oracle and no-tool lines, the closed-form dead-group "
        "probability at G = 6, and the policy entropy, per epoch"
        + ("; and the dead groups each sampled arm observed under its own reward" if observed else "")
        + ".",
    )


def plot_estimator_study(study: pd.DataFrame, order: list[str]):
    """Box plots of single-visit cosine similarity with the exact gradient, one panel per policy,
    one above the other at the page's width."""
    policies = list(dict.fromkeys(study["policy"]))
    pal = [color("GRPO") if o.startswith("GRPO") else color("k-subset") for o in order]
    fig, axes = plt.subplots(
        len(policies),
        1,
        figsize=(PAGE_WIDTH, 0.3 * len(order) * len(policies) + 1.4),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, name in zip(axes[:, 0], policies):
        d = study[study.policy == name]
        sns.boxplot(
            data=d,
            y="estimator",
            x="cosine",
            order=order,
            ax=ax,
            fliersize=0,
            width=0.6,
            hue="estimator",
            hue_order=order,
            legend=False,
            palette=pal,
        )
        ax.set(title=f"At the {name}", xlabel="", ylabel="", xlim=(-1.02, 1.02))
        ax.axvline(0, c="k", lw=0.8)
    axes[-1, 0].set_xlabel("cosine similarity with the exact gradient")
    return set_alt(
        fig,
        f"Box plots of the cosine similarity between one visit's gradient estimate and the exact "
        f"gradient, for {', '.join(order)}, at {' and at '.join(policies)}.",
    )


def collapse_identical(rates: dict, tol: float = 0.5) -> dict:
    """``rates`` with the selectors whose frames agree within ``tol`` points merged into one entry,
    labelled by their names joined with " = " (in order of first appearance)."""
    groups: list[list] = []
    for name, f in rates.items():
        for g in groups:
            ref = rates[g[0]]
            if (
                ref.shape == f.shape
                and (ref.index == f.index).all()
                and (ref.columns == f.columns).all()
                and float(np.nanmax(np.abs(ref.to_numpy(float) - f.to_numpy(float)), initial=0)) <= tol
            ):
                g.append(name)
                break
        else:
            groups.append([name])
    return {" = ".join(g): rates[g[0]] for g in groups}


def plot_tool_rates(rates: dict, title: str = "What each selector calls", width: float = PAGE_WIDTH):
    """The % of questions of each family on which each tool is called, like the paper's Figure 4,
    as one compact annotated grid that fits the page: one row per selector (selectors with the same
    rates share a row, their names joined by " = "), one column per tool within each family
    (families side by side, separated by white lines). ``rates``: selector -> a frame of families
    by tools."""
    import textwrap

    rates = collapse_identical(rates)
    first = next(iter(rates.values()))
    fams, tools = list(first.index), list(first.columns)
    grid = pd.DataFrame(
        [
            np.concatenate([rates[n].reindex(index=fams, columns=tools).loc[f].to_numpy(float) for f in fams])
            for n in rates
        ],
        index=["\n".join(textwrap.wrap(n, 26)) for n in rates],
        columns=[t for _ in fams for t in tools],
    )
    lines = sum(label.count("\n") + 1 for label in grid.index)
    fig, ax = plt.subplots(figsize=(width, 1.1 + 0.36 * lines + 0.12 * len(rates)), layout="constrained")
    sns.heatmap(
        grid,
        vmin=0,
        vmax=100,
        cmap="mako_r",
        annot=True,
        fmt=".0f",
        cbar=False,
        ax=ax,
        annot_kws={"size": 9},
        linewidths=0.4,
        linecolor="white",
    )
    for i in range(1, len(fams)):
        ax.axvline(i * len(tools), c="white", lw=3)
    for i, f in enumerate(fams):
        ax.text(
            (i + 0.5) * len(tools),
            -0.15,
            str(f).replace("_", " "),
            ha="center",
            va="bottom",
            fontsize=9.5,
            fontweight="bold",
        )
    ax.set_xticks(np.arange(len(grid.columns)) + 0.5, grid.columns, fontsize=9, rotation=0)
    ax.tick_params(axis="y", labelsize=9, rotation=0)
    ax.set(xlabel="", ylabel="")
    ax.set_title(title, pad=26)
    return set_alt(
        fig,
        f"{title}: a grid of the percentage of questions on which each selector "
        f"({'; '.join(rates)}) calls each tool ({', '.join(map(str, tools))}), family by family "
        f"({', '.join(str(f).replace('_', ' ') for f in fams)}).",
    )


def plot_study_curves(
    dev: pd.DataFrame, methods: list[str], labels: dict[str, str] | None = None, visits_per_epoch: int | None = None
):
    """Four panels of a policy-head study's dev evaluations against question visits, mean over
    seeds with a band from the lowest to the highest seed: greedy dev accuracy, the closed-form
    dead-group probability of the current policy at G = 6 under Eq. 1 classes (solid) and the
    differential reward (dotted), the entropy of q and tools per question. Each method keeps its
    registry colour and has its own marker (methods of near colours stay apart); one legend under
    the panels. ``visits_per_epoch`` (the study's training questions) labels the epoch axis."""
    labels = labels or {}
    pal = checked_study_palette(methods)
    marker = dict(zip(methods, MARKERS * 2))
    fig, axes = plt.subplots(2, 2, figsize=(PAGE_WIDTH, 7.6), layout="constrained")
    panels = [
        ("accuracy", "Dev accuracy (greedy pick)", "accuracy (%)"),
        ("dead_eq1", "P(dead group) at G = 6 (Eq. 7)\nsolid: Eq. 1; dotted: differential", "P(dead) (%)"),
        ("entropy", "Entropy of q", "nats"),
        ("tools", "Tools per question (greedy)", "tools"),
    ]
    handles = []
    for ax, (col, title, ylabel) in zip(axes.flat, panels):
        for m in methods:
            f = dev[dev.method == m]
            if f.empty:
                continue
            g = f.groupby("epoch")[col]
            x = g.mean().index
            every = max(1, len(x) // 8)
            (h,) = ax.plot(
                x, g.mean(), c=pal[m], lw=1.8, marker=marker[m], ms=4.5, markevery=every, label=labels.get(m, m)
            )
            if col == "accuracy":
                handles.append(h)
            ax.fill_between(x, g.min(), g.max(), color=pal[m], alpha=0.10, lw=0)
            if col == "dead_eq1":
                ax.plot(x, f.groupby("epoch")["dead_differential"].mean(), c=pal[m], lw=1.2, ls=":")
        ax.set_title(title)
        ax.set(
            ylabel=ylabel, xlabel=f"epoch ({visits_per_epoch:,} question visits each)" if visits_per_epoch else "epoch"
        )
    legend_below(fig, handles, [h.get_label() for h in handles])
    return set_alt(
        fig,
        "Four panels of the policy-head study against training epochs, one line per method "
        f"({', '.join(labels.get(m, m) for m in methods)}, mean over seeds with a band over seeds): "
        "dev accuracy of the greedy pick, the closed-form dead-group probability at G = 6, the "
        "entropy of q and the tools per question.",
    )


def plot_study_accuracy(
    means: pd.DataFrame,
    sds: pd.DataFrame,
    baselines: pd.DataFrame,
    methods: list[str],
    labels: dict[str, str] | None = None,
):
    """Accuracy by suite, one panel per suite one above the other at the page's width: each
    method's mean over seeds with its spread, beside the table-only references (dashed lines:
    No-Tool, All-Tools, BestFixed*), one legend under the panels."""
    labels = labels or {}
    pal = checked_study_palette(methods)
    suites = list(means.columns)
    fig, axes = plt.subplots(
        len(suites),
        1,
        figsize=(PAGE_WIDTH, (0.28 * len(methods) + 0.9) * len(suites) + 0.5),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, s in zip(axes[:, 0], suites):
        y = list(range(len(methods)))
        ax.barh(
            y,
            [means.loc[m, s] for m in methods],
            xerr=[sds.loc[m, s] for m in methods],
            color=[pal[m] for m in methods],
            alpha=0.85,
        )
        for name, ls in (("No-Tool", ":"), ("All-Tools", "--"), ("BestFixed*", "-.")):
            v = baselines[(baselines.suite == s) & (baselines.method == name)].accuracy
            if len(v):
                ax.axvline(float(v.iloc[0]), c="#444444", ls=ls, lw=1.2, label=name)
        ax.set_yticks(y, [labels.get(m, m) for m in methods])
        ax.invert_yaxis()
        ax.set(title=s, xlabel="")
    axes[-1, 0].set_xlabel("accuracy (%)")
    legend_below(fig, ax=axes[0, 0], ncol=3)
    return set_alt(
        fig,
        f"Bar charts of test accuracy by suite ({', '.join(map(str, suites))}): each method "
        f"({', '.join(labels.get(m, m) for m in methods)}) as a bar with its spread over seeds, "
        "beside dashed lines at No-Tool, All-Tools and BestFixed*.",
    )


def plot_subsets_and_methods(
    fixed: pd.Series, methods: pd.DataFrame, oracle: float, title: str = "Every fixed subset, and the trained selectors"
):
    """Accuracy (%) of always choosing each subset (grey bars) beside each trained method's
    mean over seeds (coloured, with its seeds as dots), and the oracle as a dashed line.
    ``methods``: one row per (method, seed) with ``method`` and ``accuracy``."""
    names = list(dict.fromkeys(methods["method"]))
    check_distinct({n: color(n) for n in names}, what="the subsets-and-methods figure")
    labels = list(fixed.index) + names
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 4.0), layout="constrained")
    ax.bar(range(len(fixed)), fixed.to_numpy(), color="#b8b8b8", label="always this subset")
    for i, name in enumerate(names, len(fixed)):
        acc = methods.loc[methods["method"] == name, "accuracy"].to_numpy()
        ax.bar(i, acc.mean(), color=color(name))
        ax.scatter(np.full(len(acc), i), acc, color="black", s=10, zorder=3)
    ax.axhline(oracle, ls="--", color="#444444", lw=1)
    ax.text(len(labels) - 0.5, oracle, "oracle", va="bottom", ha="right")
    ax.set_xticks(
        range(len(labels)),
        labels,
        rotation=60 if len(labels) > 12 else 45,
        ha="right",
        rotation_mode="anchor",
        fontsize=9,
    )
    ax.set(ylabel="test accuracy (%)", title=title)
    return set_alt(
        fig,
        f"{title}: a bar chart of the test accuracy of always choosing each of {len(fixed)} fixed "
        f"subsets (grey), beside the trained methods ({', '.join(names)}; mean bar and each seed "
        f"as a dot) and the oracle at {oracle:.1f}% (dashed).",
    )


def plot_budget(budgets: dict, no_tool: dict | None = None, title: str = "Accuracy against the reasoner calls paid"):
    """One panel per library size, one above the other at the page's width: each method's test
    accuracy (mean, bars: one standard deviation over seeds) against the reasoner calls its
    training read per training question (log scale), methods of one family joined in order of
    calls, each family its colour and marker. ``budgets``: n -> a frame of
    :func:`~fgpo_core.reports.larger.budget_table`; ``no_tool``: n -> the No-Tool
    accuracy, drawn as a dotted line."""
    check_distinct({name: col for name, col, _ in FAMILY_STYLE.values()}, what="the budget figure")
    fig, axes = plt.subplots(
        len(budgets),
        1,
        figsize=(PAGE_WIDTH, 3.0 * len(budgets) + 0.9),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, (n, b) in zip(axes[:, 0], sorted(budgets.items())):
        for fam, (name, col, marker) in FAMILY_STYLE.items():
            f = b[b.family == fam].sort_values("calls_per_question")
            if f.empty:
                continue
            ax.errorbar(
                f.calls_per_question,
                f.accuracy,
                yerr=f.accuracy_sd,
                color=col,
                marker=marker,
                ms=6,
                lw=1.4,
                capsize=2,
                label=name,
            )
        if no_tool and n in no_tool:
            ax.axhline(no_tool[n], ls=":", color="#444444", lw=1)
            ax.annotate(" No-Tool", (0, no_tool[n]), xycoords=("axes fraction", "data"), va="bottom")
        ax.axvline(2**n, ls="--", color=METHOD_COLORS["FGPO"], lw=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(
            xlabel="reasoner calls per training question",
            ylabel="test accuracy (%)",
            title=f"{n} tools ({2**n:,} subsets)",
        )
    handles = {}
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    legend_below(fig, list(handles.values()), list(handles), ncol=3)
    fig.suptitle(title, fontweight="bold")
    return set_alt(
        fig,
        f"{title}: for each library size ({', '.join(str(n) for n in sorted(budgets))} tools), "
        "test accuracy against the reasoner calls read per training question on a log scale, one "
        "line per family of methods (exact FGPO, shortlists, the coverage dial, GRPO), with a "
        "dotted No-Tool line.",
    )
