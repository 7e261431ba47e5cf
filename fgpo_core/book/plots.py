"""One house style for every figure of the book."""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..core.method_names import parse_stages
from ..core.registry import ESTIMATORS

__all__ = ["set_style", "METHOD_COLORS", "color", "race_palette", "plot_race", "plot_estimator_study",
           "plot_tool_rates", "study_palette", "plot_study_curves",
           "plot_study_accuracy", "plot_ablation_panels", "plot_checkpoints", "plot_id_ood_panels",
           "plot_id_ood_plane", "plot_lm_companion", "plot_subsets_and_methods", "plot_budget"]

METHOD_COLORS = {
    "FGPO": "#1b7f79",
    "GRPO": "#c8553d",
    "GRPO (differential)": "#e59a52",
    "k-subset": "#5b6c9a",
    "Uniform": "#8a8a8a",
    "SFT": "#9c6fb6",
    "DPO": "#b38f2e",
    "Tools w/ Desc": "#6b8e23",
    "Warm-up": "#7f8c8d",
    "Untrained": "#b0b0b0",
    "paper": "#444444",
}


def color(name: str) -> str:
    """Colour of a method; names starting with a known method share its colour."""
    for key in sorted(METHOD_COLORS, key=len, reverse=True):
        if name.startswith(key):
            return METHOD_COLORS[key]
    return "#333333"


def set_style() -> None:
    """Seaborn's white grid, a readable size, and crisp figures in HTML."""
    from .chapter import quiet_page

    quiet_page()
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)
    mpl.rcParams.update({
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "figure.figsize": (7.5, 4.2),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titleweight": "bold",
        "legend.frameon": False,
    })


def race_palette(order: list[str]) -> dict[str, str]:
    """Colours for the arms of a bandit race: FGPO teal, k-subset arms in blues
    (darker for larger k), GRPO arms in reds and oranges."""
    ks = [n for n in order if n.startswith("k-subset")]
    blues = sns.color_palette("Blues", len(ks) + 2).as_hex()[2:] if ks else []
    grpo = [n for n in order if n.startswith("GRPO")]
    reds = ["#c8553d", "#e59a52", "#8c2d1c", "#f2c57c"][:len(grpo)]
    out = {n: color(n) for n in order}
    out.update(zip(ks, blues))
    out.update(zip(grpo, reds))
    return out


def plot_race(race, smooth_epochs: float = 0.5):
    """Four panels of a bandit race: greedy accuracy per epoch and per reward look-up,
    the closed-form dead-group rate at G=6 (solid) with GRPO's observed dead
    fraction (dotted, first run, smoothed), and the policy entropy. Bands span the runs."""
    evals, steps, order = race.evals, race.steps, race.order
    pal = race_palette(order)
    ceil = race.table.ceilings()
    band = ("pi", 100)
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0, 0]
    sns.lineplot(data=evals, x="epoch", y="accuracy", hue="arm", hue_order=order, palette=pal, ax=ax, errorbar=band)
    for key, ls in (("oracle", "--"), ("no_tool", ":")):
        ax.axhline(ceil[key], ls=ls, c="k", lw=1)
        ax.text(evals.epoch.max(), ceil[key], key.replace("_", " "), va="bottom", ha="right")
    ax.set(title="Greedy accuracy per epoch (same question visits)", ylabel="accuracy (%)")
    ax.legend(fontsize=8, loc="lower right")
    ax = axes[0, 1]
    sns.lineplot(data=evals[evals.reward_evaluations > 0], x="reward_evaluations", y="accuracy", hue="arm",
                 hue_order=order, palette=pal, ax=ax, legend=False, errorbar=band)
    ax.axhline(ceil["oracle"], ls="--", c="k", lw=1)
    ax.set(xscale="log", title="... per reward look-up", xlabel="reward evaluations (log scale)",
           ylabel="accuracy (%)")
    ax = axes[1, 0]
    sns.lineplot(data=evals, x="epoch", y="dead_G6", hue="arm", hue_order=order, palette=pal, ax=ax,
                 legend=False, errorbar=band)
    if "dead_observed" in steps:
        obs = steps.dropna(subset=["dead_observed"])
        for arm, d in obs[obs.run == 0].groupby("arm"):
            per_epoch = max(1, int(round(len(d) / max(d.epoch.max(), 1e-9) * smooth_epochs)))
            ax.plot(d.epoch, d.dead_observed.rolling(per_epoch, min_periods=1).mean(), ls=":",
                    c=pal[arm], lw=1.5)
    ax.set(title="Dead groups at G = 6: closed form (solid), observed by GRPO (dotted)",
           ylabel="dead-group probability (%)")
    ax = axes[1, 1]
    sns.lineplot(data=evals, x="epoch", y="entropy", hue="arm", hue_order=order, palette=pal, ax=ax,
                 legend=False, errorbar=band)
    ax.set(title="Policy entropy", ylabel="mean entropy (nats)")
    fig.tight_layout()
    return fig


def plot_estimator_study(study: pd.DataFrame, order: list[str]):
    """Box plots of single-visit cosine similarity with the exact gradient, one panel per policy."""
    policies = list(dict.fromkeys(study["policy"]))
    fig, axes = plt.subplots(1, len(policies), figsize=(6 * len(policies), 4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], policies):
        d = study[study.policy == name]
        sns.boxplot(data=d, y="estimator", x="cosine", order=order, ax=ax, fliersize=0, width=0.6,
                    hue="estimator", hue_order=order, legend=False,
                    palette=["#c8553d" if o.startswith("GRPO") else "#5b6c9a" for o in order])
        ax.set(title=f"At the {name}", xlabel="cosine similarity with the exact gradient", ylabel="", xlim=(-1.02, 1.02))
        ax.axvline(0, c="k", lw=0.8)
    fig.tight_layout()
    return fig


def plot_tool_rates(rates: dict, title: str = "What each selector calls"):
    """Heatmaps (one per selector) of the % of questions of each family on which each tool
    is called, like the paper's Figure 4."""
    names = list(rates)
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        sns.heatmap(rates[name], vmin=0, vmax=100, cmap="mako_r", annot=True, fmt=".0f", cbar=False, ax=ax,
                    annot_kws={"size": 8})
        ax.set(title=name, xlabel="", ylabel="")
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig


def study_palette(methods: list[str]) -> dict[str, str]:
    """Colours of a study's methods, from the estimator registry: FGPO teal, the sampled methods in
    reds and oranges, the offline ones in purple and ochre, and each dial (the coverage dial, the
    shortlists) in shades of its palette, darker for a larger number. A name with modifiers takes
    its estimator's colour (a pipeline, its last stage's); a name that is no method raises."""
    specs = {m: parse_stages(m)[-1] for m in methods}  # ValueError for an unknown method
    out = {}
    for fam in dict.fromkeys(sp.family for sp in specs.values()):
        est = ESTIMATORS[fam]
        ms = [m for m, sp in specs.items() if sp.family == fam]
        if est.dial:
            ks = sorted(dict.fromkeys(specs[m].k for m in ms))
            shades = dict(zip(ks, sns.color_palette(est.colour, len(ks) + 2).as_hex()[2:]))
            out.update({m: shades[specs[m].k] for m in ms})
        else:
            out.update({m: est.colour for m in ms})
    return {m: out[m] for m in methods}


def plot_study_curves(dev: pd.DataFrame, methods: list[str], labels: dict[str, str] | None = None,
                      visits_per_epoch: int | None = None):
    """Four panels of a policy-head study's dev evaluations against question visits, mean over
    seeds with a band from the lowest to the highest seed: greedy dev accuracy, the closed-form
    dead-group probability of the current policy at G = 6 under Eq. 1 classes (solid) and the
    differential reward (dotted), the entropy of q and tools per question. ``visits_per_epoch``
    (the study's training questions) labels the epoch axis."""
    labels = labels or {}
    pal = study_palette(methods)
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    panels = [("accuracy", "Dev accuracy (greedy pick)", "accuracy (%)"),
              ("dead_eq1", "Dead-group probability at G = 6 (Eq. 7)", "P(dead) (%)"),
              ("entropy", "Entropy of q", "nats"), ("tools", "Tools per question (greedy)", "tools")]
    for ax, (col, title, ylabel) in zip(axes.flat, panels):
        for m in methods:
            f = dev[dev.method == m]
            if f.empty:
                continue
            g = f.groupby("epoch")[col]
            x = g.mean().index
            ax.plot(x, g.mean(), c=pal[m], lw=1.8, label=labels.get(m, m))
            ax.fill_between(x, g.min(), g.max(), color=pal[m], alpha=0.12, lw=0)
            if col == "dead_eq1":
                ax.plot(x, f.groupby("epoch")["dead_differential"].mean(), c=pal[m], lw=1.2, ls=":")
        ax.set(title=title, ylabel=ylabel,
               xlabel=f"epoch ({visits_per_epoch:,} question visits each)" if visits_per_epoch else "epoch")
    axes[0, 0].legend(fontsize=7, ncol=2)
    axes[0, 1].text(0.02, 0.95, "solid: Eq. 1 classes; dotted: differential reward", transform=axes[0, 1].transAxes,
                    fontsize=7, va="top")
    fig.tight_layout()
    return fig


def plot_study_accuracy(means: pd.DataFrame, sds: pd.DataFrame, baselines: pd.DataFrame, methods: list[str],
                        labels: dict[str, str] | None = None):
    """Accuracy by suite: each method's mean over seeds with its spread, beside the table-only
    references (dashed lines: No-Tool, All-Tools, BestFixed*)."""
    labels = labels or {}
    pal = study_palette(methods)
    suites = list(means.columns)
    fig, axes = plt.subplots(1, len(suites), figsize=(4.2 * len(suites), 4.2), sharey=True, squeeze=False)
    for ax, s in zip(axes[0], suites):
        y = list(range(len(methods)))
        ax.barh(y, [means.loc[m, s] for m in methods], xerr=[sds.loc[m, s] for m in methods],
                color=[pal[m] for m in methods], alpha=0.85)
        for name, ls in (("No-Tool", ":"), ("All-Tools", "--"), ("BestFixed*", "-.")):
            v = baselines[(baselines.suite == s) & (baselines.method == name)].accuracy
            if len(v):
                ax.axvline(float(v.iloc[0]), c="#444444", ls=ls, lw=1, label=name)
        ax.set_yticks(y, [labels.get(m, m) for m in methods])
        ax.invert_yaxis()
        ax.set(title=s, xlabel="accuracy (%)")
    axes[0, 0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_ablation_panels(panels: list[dict], ncols: int = 3):
    """One small panel per ablation: accuracy (mean over seeds, bars = sd) against the setting,
    beside the paper's points (grey squares, its own axis scale: another selector and reasoner).

    Each panel: ``title``, ``x`` (settings), ``mean``, ``sd``, ``xlabel``; optional ``paper``
    (setting -> accuracy), ``log_x``, ``refs`` (name -> accuracy, dotted lines)."""
    n = len(panels)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(4.0 * ncols, 3.3 * rows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        x = list(range(len(p["x"]))) if not p.get("numeric", True) else p["x"]
        ax.errorbar(x, p["mean"], yerr=p["sd"], marker="o", c=METHOD_COLORS["FGPO"] if "GRPO" not in p["title"]
                    else METHOD_COLORS["GRPO"], capsize=3, label="this book")
        for name, v in (p.get("refs") or {}).items():
            ax.axhline(v, c="#888888", ls=":", lw=1)
            ax.annotate(name, (1.0, v), xycoords=("axes fraction", "data"), fontsize=7, ha="right", va="bottom",
                        color="#666666")
        if p.get("paper"):
            twin = ax.twinx()
            px = [x[p["x"].index(k)] if not p.get("numeric", True) else k for k in p["paper"] if k in p["x"]]
            twin.plot(px, [p["paper"][k] for k in p["paper"] if k in p["x"]], "s--", c=METHOD_COLORS["paper"],
                      alpha=0.6, ms=5, label="paper")
            twin.set_ylabel("paper (%)", fontsize=8, color="#555555")
            twin.tick_params(labelsize=7, colors="#555555")
            twin.grid(False)
        if p.get("log_x"):
            ax.set_xscale("log", base=2)
        if not p.get("numeric", True):
            ax.set_xticks(x, [str(v) for v in p["x"]])
        ax.set(title=p["title"], xlabel=p["xlabel"], ylabel="accuracy on core (%)")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_checkpoints(ckpt: pd.DataFrame, labels: dict[str, str], paper: dict | None = None):
    """Accuracy and tools per question at each checkpoint (mean over seeds) against epochs, one
    line per method; the paper's GRPO checkpoints (its own step axis) as grey squares."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for m, f in ckpt.groupby("method", sort=False):
        name = labels.get(m, m)
        axes[0].plot(f.epoch, f.accuracy, marker="o", ms=3, c=color(name), label=name)
        axes[1].plot(f.epoch, f.tools, marker="o", ms=3, c=color(name), label=name)
    if paper:
        for ax, key in zip(axes, ("accuracy", "tools")):
            twin = ax.twiny()
            twin.plot(paper["steps"], paper[key], "s--", c=METHOD_COLORS["paper"], alpha=0.6, ms=4,
                      label="paper GRPO")
            twin.set_xlabel("paper's GRPO step", fontsize=8, color="#555555")
            twin.tick_params(labelsize=7, colors="#555555")
            twin.grid(False)
    axes[0].set(xlabel="epoch", ylabel="accuracy on core (%)", title="accuracy at each checkpoint")
    axes[1].set(xlabel="epoch", ylabel="tools per question", title="tools per question")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _series_color(name: str, i: int) -> str:
    c = color(name)
    return c if c != "#333333" else sns.color_palette("deep")[i % 10]


def plot_id_ood_panels(panels: list[dict], ncols: int = 3):
    """In-domain (solid) and out-of-domain (dashed) accuracy against a setting, one panel per
    experiment. Each panel: ``title``, ``xlabel``, ``series`` (name -> frame indexed by the
    setting with columns ID, ID sd, OOD, OOD sd), optional ``log_x``."""
    n = len(panels)
    rows = -(-n // ncols)
    fig, axes = plt.subplots(rows, min(ncols, n), figsize=(4.3 * min(ncols, n), 3.5 * rows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        for i, (name, f) in enumerate(p["series"].items()):
            c = _series_color(name, i)
            for dom, ls in (("ID", "-"), ("OOD", "--")):
                ax.errorbar(f.index, f[dom], yerr=f.get(f"{dom} sd"), ls=ls, marker="o", ms=3, capsize=2, c=c,
                            label=f"{name} {dom}")
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
    ID-OOD plane, its start marked by a circle and its end by an arrow head."""
    fig, ax = plt.subplots(figsize=(6.2, 5.0))
    for i, (name, f) in enumerate(trajectories.items()):
        c = _series_color(name, i)
        ax.plot(f.ID, f.OOD, c=c, lw=1.5, label=name)
        ax.scatter(f.ID.iloc[:1], f.OOD.iloc[:1], c=[c], s=25)
        if len(f) > 1:
            ax.annotate("", xy=(f.ID.iloc[-1], f.OOD.iloc[-1]), xytext=(f.ID.iloc[-2], f.OOD.iloc[-2]),
                        arrowprops={"arrowstyle": "-|>", "color": c})
    ax.set(xlabel="in-domain accuracy (%)", ylabel="out-of-domain accuracy (%)", title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_lm_companion(table: pd.DataFrame, start: str = "start",
                      title: str = "The LM selector: from its start to each arm's last adapter"):
    """One ID-OOD plane per LoRA rank: the shared start (grey circle) and an arrow from it to each
    trained arm's accuracy. ``table``:
    :func:`~fgpo_core.experiments.companion_report.lm_companion_table` (indexed by arm and rank)."""
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
            ax.scatter([x0], [y0], s=45, color="#7f8c8d", zorder=3, label=start)
        for i, a in enumerate(arms):
            if a not in t.index:
                continue
            c = arm_color(a, i)
            ax.scatter([t.loc[a, "ID"]], [t.loc[a, "OOD"]], s=30, color=c, zorder=3, label=a)
            if start in t.index:
                ax.annotate("", xy=(t.loc[a, "ID"], t.loc[a, "OOD"]), xytext=(x0, y0),
                            arrowprops={"arrowstyle": "-|>", "color": c, "lw": 1.3, "shrinkA": 4, "shrinkB": 4})
        ax.set(title=f"LoRA rank {r}", xlabel="in-domain accuracy (%)")
    axes.flat[0].set_ylabel("out-of-domain accuracy (%)")
    axes.flat[-1].legend(fontsize=7, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_subsets_and_methods(fixed: pd.Series, methods: pd.DataFrame, oracle: float,
                             title: str = "Every fixed subset, and the trained selectors"):
    """Accuracy (%) of always choosing each subset (grey bars) beside each trained method's
    mean over seeds (coloured, with its seeds as dots), and the oracle as a dashed line.
    ``methods``: one row per (method, seed) with ``method`` and ``accuracy``."""
    names = list(dict.fromkeys(methods["method"]))
    labels = list(fixed.index) + names
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(labels) + 2), 3.8))
    ax.bar(range(len(fixed)), fixed.to_numpy(), color="#b8b8b8", label="always this subset")
    for i, name in enumerate(names, len(fixed)):
        acc = methods.loc[methods["method"] == name, "accuracy"].to_numpy()
        ax.bar(i, acc.mean(), color=color(name))
        ax.scatter(np.full(len(acc), i), acc, color="black", s=10, zorder=3)
    ax.axhline(oracle, ls="--", color="#444444", lw=1)
    ax.text(len(labels) - 0.5, oracle, " oracle", va="center", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set(ylabel="accuracy on the test questions (%)", title=title)
    fig.tight_layout()
    return fig


FAMILY_STYLE = {"fgpo": ("FGPO, every subset", "#1b7f79", "*"), "shortlist-top": ("Shortlist (top)", "#2a6fb0", "o"),
                "shortlist-grow": ("Shortlist (grow)", "#7fb3e0", "s"), "dial": ("Coverage dial", "#9c6fb6", "^"),
                "grpo": ("GRPO (G = 6)", "#c8553d", "D")}
"""How the chapter "Past enumeration" draws each family of methods."""


def plot_budget(budgets: dict, no_tool: dict | None = None, title: str = "Accuracy against the reasoner calls paid"):
    """One panel per library size: each method's test accuracy (mean, bars: one standard
    deviation over seeds) against the reasoner calls its training read per training question
    (log scale), methods of one family joined in order of calls. ``budgets``: n -> a frame of
    :func:`~fgpo_core.experiments.larger_report.budget_table`; ``no_tool``: n -> the No-Tool
    accuracy, drawn as a dotted line."""
    fig, axes = plt.subplots(1, len(budgets), figsize=(5.2 * len(budgets), 4.0), sharey=True, squeeze=False)
    for ax, (n, b) in zip(axes[0], sorted(budgets.items())):
        for fam, (name, col, marker) in FAMILY_STYLE.items():
            f = b[b.family == fam].sort_values("calls_per_question")
            if f.empty:
                continue
            ax.errorbar(f.calls_per_question, f.accuracy, yerr=f.accuracy_sd, color=col, marker=marker, ms=6,
                        lw=1.4, capsize=2, label=name)
        if no_tool and n in no_tool:
            ax.axhline(no_tool[n], ls=":", color="#444444", lw=1)
            ax.text(ax.get_xlim()[0], no_tool[n], " No-Tool", va="bottom", fontsize=8)
        ax.axvline(2 ** n, ls="--", color="#1b7f79", lw=0.8)
        ax.set_xscale("log")
        ax.set(xlabel="reasoner calls per training question", title=f"{n} tools ({2 ** n:,} subsets)")
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig
