# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The appendix, on the real tables
#
# The paper's appendix asks of FGPO what a careful reader would: how much of the table does
# it need to see per visit, what do the parsimony weight, the entropy bonus and the listwise
# temperature do, how much training data, what a fifth tool changes, what each tool is
# worth, how GRPO's group size trades reward evaluations for accuracy, why SFT and DPO
# collapse, and whether a larger selector changes the story. Each question is answered here
# by one more set of runs of the policy-head selector of the previous chapter ("Exact
# versus sampled on the real tables"): the evidence reader's reward tables, every training
# question, every question of `core`, `microbe` and `mosaic`, five seeds, each method's
# learning rate chosen on dev.
#
# An ablation is a method name with a modifier (`fgpo_core.algorithms.head.parse_method`):
# `fgpo-k4` evaluates four subsets per visit, `fgpo-lambda0` trains with Eq. 1's $\lambda = 0$,
# `grpo-G16` draws groups of 16, `fgpo-n250` trains on 250 questions, `fgpo-noT3` on the
# library without T3, `dpo-beta0.1` sets DPO's $\beta$, `fgpo-h64` puts a 64-unit MLP
# under the scores. The unmodified `fgpo` and `grpo` are the paper's settings ($k = 16$,
# $\lambda = 0.10$, $\beta = 0.03$, temperature 1, $G = 6$, a linear head). The paper's
# numbers come from a 7B selector and an 8B reasoner on its own benchmark; they stand
# beside ours for their shape (does accuracy rise or fall with the setting?), not for
# their level.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the small studies trained when ablation_dir or five_dir is empty
ablation_dir = "../runs/cpu/ablations"  # `fgpo study --methods ablations`; empty: train a small one now
five_dir = "../runs/cpu/ablations-five"  # `fgpo study --methods five` on the five-tool tables; empty: small one now
study_tables = "../data/tables/cpu/reader"  # the training reader's four-tool tables, one subfolder per suite
study_features = "../data/features/cpu/minilm"  # cached prompt features (four tool slots)
study_bench = "../data/benchmarks/cpu"  # the benchmark both were made from
five_tables = "../data/tables/cpu/reader-five"  # the same reader's 32-subset tables
five_features = "../data/features/cpu/minilm-five"  # prompt features with five tool slots
runs_dir = "../runs/cpu"  # holds the LM selector's chosen.json, for its rows in the capacity table ("": skip)
head_seeds = 2  # seeds of a small study (only when a study folder is empty)
head_epochs = 3  # its epochs
head_questions = 200  # its dev questions and its questions per test suite

# %% tags=["hide-input"]
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, profile_note, show_source
from fgpo_core.book.findings import appendix_findings
from fgpo_core.book.plots import plot_ablation_panels, plot_checkpoints, set_style
from fgpo_core.core.estimators import coverage_hit_probability
from fgpo_core.experiments.ablation_report import (ablation_rows, checkpoint_table, coverage_table,
                                                   group_size_table, imitation_table, removal_table, tool_invocation)
from fgpo_core.experiments.study import ABLATIONS, StudyConfig, load_study, run_study
from fgpo_core.experiments.study_report import label, study_baselines, study_scores
from fgpo_core.table import load_tables

set_style()
warnings.filterwarnings("ignore", message="IProgress not found")


def small_study(methods, tables, features, epochs=head_epochs, checkpoints=3):
    """The ci profile: the same study, small, trained now from the committed tables and features
    (every training question, so that the data-scale runs have their 125 .. 500)."""
    out = tempfile.mkdtemp(prefix="fgpo-ablations-")
    run_study(StudyConfig(methods=methods, seeds=head_seeds, epochs=epochs, lrs="3e-2", n_train=0,
                          n_dev=head_questions, n_test=head_questions, table_dir=tables, features_dir=features,
                          bench_dir=study_bench, checkpoints=checkpoints, out_dir=out), progress=False)
    return out


if not ablation_dir:
    ablation_dir = small_study("ablations", study_tables, study_features)
if not five_dir:
    five_dir = small_study("five", five_tables, five_features, epochs=4, checkpoints=4)
ab, five = load_study(ablation_dir), load_study(five_dir)
TEST = ab.manifest["config"]["suites"].split(",")
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
tables5 = load_tables({"r": five_tables}, ["train"] + TEST)["r"]
scores, scores5 = study_scores(ab, tables), study_scores(five, tables5)
ids = {s: ab.picks[ab.picks.suite == s].question_id.unique() for s in TEST}
base = study_baselines(tables, ids).set_index(["suite", "method"])
no_tool = float(base.loc[("core", "No-Tool"), "accuracy"])
refs = {n: float(base.loc[("core", n), "accuracy"]) for n in ("No-Tool", "All-Tools", "BestFixed*")}
cfg = ab.manifest["config"]
profile_note(profile, methods=len(cfg["methods"].split(",")), seeds=cfg["seeds"], epochs=cfg["epochs"],
             questions=ab.manifest["n_questions"])
print(f"{len(ab.sweep)} runs in {ab.manifest['train_seconds'] / 60:.1f} min of training on one CPU thread; "
      f"the five-tool study {len(five.sweep)} runs in {five.manifest['train_seconds'] / 60:.1f} min.")


def rows(group, ref=None, suites=TEST):
    return ablation_rows(scores, ABLATIONS[group], suites, ref)


def panel(methods, x, xlabel, title, paper_points=None, **kw):
    t = ablation_rows(scores, methods, ["core"]).reindex([label(m) for m in methods])
    return {"title": title, "x": x, "mean": t["core accuracy"].tolist(), "sd": t["core sd"].tolist(),
            "xlabel": xlabel, "paper": paper_points, **kw}


# %% [markdown]
# ## 1. The coverage dial
#
# Between sampling and enumeration lies a dial: evaluate $k$ of the $2^n$ subsets per
# visit, drawn uniformly, and optimise the exact objective with $q$ renormalised on them
# (the paper's Figure 1c; $k = 16$ is FGPO). What $k$ buys is coverage: the chance that a
# visit sees one of the question's best subsets. For a question with $o$ best subsets out
# of $A$, $k$ uniform draws see one with probability
# $1 - \binom{A-o}{k}/\binom{A}{k}$, the library's `coverage_hit_probability`:

# %% tags=["remove-input"]
display(show_source(coverage_hit_probability))

# %%
dial = coverage_table(ab, scores, tables["train"], "core", cfg["lam"])
dial["paper (GenomeQA)"] = pd.Series(paper.COVERAGE_DIAL)
display(dial.round(2))
n_best = (lambda r: (r == r.max(1, keepdims=True)).sum(1))(tables["train"].rewards("eq1", lam=cfg["lam"]))
gap = float((dial["visits that saw a best subset (%)"] - dial["closed form (%)"]).abs().max())
print(f"Training questions with one best subset: {100 * (n_best == 1).mean():.1f}%; mean number of best subsets "
      f"{n_best.mean():.2f} (ties in Eq. 1 reward: the same correctness with the same number of tools). The "
      f"measured share of visits and the closed form differ by at most {gap:.1f} points.")

# %% [markdown]
# The draws are uniform, so measurement and formula can differ only by sampling noise
# (the test suite checks the formula against the dial's own draws). At $k = 1$ the
# renormalised $q$ is 1 on the one subset drawn whatever the scores, so no gradient flows
# at all and the head stays at its uniform start.

# %% [markdown]
# ## 2. Parsimony
#
# Eq. 1 rewards a right answer with fewer tools: $\lambda (1 - 2|a|/n)$ on top of
# correctness. With $\lambda = 0$ every right subset is worth the same.

# %%
pars = rows("parsimony", "fgpo")
display(pars.round(2))
display(paper_vs_book({
    "accuracy, lambda 0": (paper.PARSIMONY[0.0]["accuracy"], pars.loc["FGPO (λ=0)", "core accuracy"]),
    "accuracy, lambda 0.10": (paper.PARSIMONY[0.10]["accuracy"], pars.loc["FGPO", "core accuracy"]),
    "tools, lambda 0 (paper: upper end of its range)": (max(paper.PARSIMONY[0.0]["tools"]),
                                                        pars.loc["FGPO (λ=0)", "tools (core)"]),
    "tools, lambda 0.10 (paper: upper end of its range)": (max(paper.PARSIMONY[0.10]["tools"]),
                                                           pars.loc["FGPO", "tools (core)"])}, digits=2))

# %% [markdown]
# ## 3. Entropy bonus and listwise temperature
#
# Eq. 5's entropy bonus $\beta H(q)$ keeps $q$ from collapsing early; the listwise
# temperature divides the candidate scores before the softmax (below 1 sharpens $q$).

# %%
ent, temp = rows("entropy", "fgpo"), rows("temperature", "fgpo")
display(ent.round(2))
display(temp.round(2))
display(paper_vs_book({
    "beta 0.03 (the default)": (paper.SENSITIVITY["beta_0.03"], ent.loc["FGPO", "core accuracy"]),
    "beta 0.08": (paper.SENSITIVITY["beta_0.08"], ent.loc["FGPO (β=0.08)", "core accuracy"]),
    "temperature 0.7": (paper.SENSITIVITY["temperature_0.7"], temp.loc["FGPO (τ=0.7)", "core accuracy"])}, digits=2))

# %% [markdown]
# ## 4. Data scale
#
# The same number of epochs on the first 125, 250, 500 and all 1,000 training questions
# (fewer questions: fewer visits), GRPO beside FGPO. The families in each prefix:

# %%
sizes = [125, 250, 500, ab.manifest["n_questions"]["train"]]
display(pd.DataFrame({n: pd.Series(tables["train"].family[:n]).value_counts() for n in sizes}).T
        .rename_axis("training questions"))
data = rows("data", "fgpo")
display(data.round(2))
display(paper_vs_book({f"{n} questions": (paper.DATA_SCALE.get(n), data.loc[label(m), "core accuracy"])
                       for n, m in zip(sizes, ABLATIONS["data"][:4])}, digits=2))

# %%
fig = plot_ablation_panels([
    panel(ABLATIONS["coverage"], [1, 2, 4, 8, 16], "k (subsets evaluated per visit)", "coverage dial",
          paper.COVERAGE_DIAL, log_x=True, refs=refs),
    panel(ABLATIONS["parsimony"], [0, 0.05, 0.10, 0.20], "λ (Eq. 1)", "parsimony",
          {k: v["accuracy"] for k, v in paper.PARSIMONY.items()}),
    panel(ABLATIONS["entropy"], [0, 0.01, 0.03, 0.08], "β (entropy bonus)", "entropy bonus",
          {0.03: paper.SENSITIVITY["beta_0.03"], 0.08: paper.SENSITIVITY["beta_0.08"]}),
    panel(ABLATIONS["temperature"], [0.5, 0.7, 1.0], "τ (listwise temperature)", "temperature of q",
          {0.7: paper.SENSITIVITY["temperature_0.7"]}),
    panel(ABLATIONS["data"][:4], sizes, "training questions", "data scale (FGPO)", paper.DATA_SCALE, log_x=True),
    panel(ABLATIONS["group"], [2, 4, 6, 8, 16], "G (group size)", "GRPO's group size", log_x=True, refs=refs),
])
plt.show()

# %% [markdown]
# Each panel: our accuracy on `core` (mean over seeds, bars one standard deviation, left
# axis) and the paper's (grey squares, right axis, GenomeQA). Dotted lines: the table's
# No-Tool, All-Tools and best fixed subset on `core`.
#
# ## 5. The five-tool library
#
# A fifth tool, T5 (homology search against the labelled repeat sequences of the training
# split), doubles the
# action space to 32 subsets. The evidence reader's 32-subset tables were built for every
# suite: the 16 subsets without T5 render exactly the prompts of the four-tool library,
# so their rows are the four-tool table's (`fgpo table build --extend`), and the reader
# answered the 16 new subsets of every question. FGPO over 32 actions, against All-Five,
# the best fixed subset of the 32 and the four-tool policy (FGPO trained on the same table
# restricted to T1-T4, `fgpo-noT5`):

# %%
ids5 = {s: five.picks[five.picks.suite == s].question_id.unique() for s in TEST}
base5 = study_baselines(tables5, ids5).set_index(["suite", "method"])
m5 = ablation_rows(scores5, five.manifest["config"]["methods"].split(","), TEST, "fgpo")
ref5 = pd.DataFrame({f"{s} accuracy": [base5.loc[(s, n), "accuracy"] for n in ("All-Tools", "BestFixed*", "No-Tool")]
                     for s in TEST}, index=["All-Five", "BestFixed* (of 32)", "No-Tool"])
ref5["tools (core)"] = [base5.loc[("core", n), "tools"] for n in ("All-Tools", "BestFixed*", "No-Tool")]
display(pd.concat([m5, ref5]).round(2))
print("best fixed subset of 32 on core:", tables5["core"].labels()[int(tables5["core"].select(ids5["core"]).baselines()
                                                                      .loc["BestFixed*", "subset"])])
inv = tool_invocation(five, tables5["core"], ["fgpo", "grpo"])
display(Markdown("How often each tool is called on core (% of questions, mean over seeds):"))
display(inv.round(1))
display(paper_vs_book({
    "FGPO (32 subsets)": (paper.FIVE_TOOL["fgpo_final"], m5.loc["FGPO", "core accuracy"]),
    "All-Five": (paper.FIVE_TOOL["all_five"], ref5.loc["All-Five", "core accuracy"]),
    "best fixed": (paper.FIVE_TOOL["best_fixed"], ref5.loc["BestFixed* (of 32)", "core accuracy"]),
    "T5 invoked (%)": (paper.FIVE_TOOL["invocation"]["T5"], inv.filter(like="T5").loc["FGPO"].iloc[0]),
    "T1 invoked (%)": (paper.FIVE_TOOL["invocation"]["T1"], inv.filter(like="T1").loc["FGPO"].iloc[0])}, digits=2))

# %% [markdown]
# Accuracy on `core` after each epoch (the paper: four epochs; here every checkpoint of the
# chosen runs, mean over seeds):

# %%
ck5 = checkpoint_table(five, ["fgpo", "grpo"])
display(ck5.pivot(index="epoch", columns="method", values="accuracy").rename(columns=label).round(2).T)
display(Markdown("The paper's FGPO over its four epochs: " + " → ".join(f"{v:.2f}" for v in paper.FIVE_TOOL["by_epoch"])))

# %% [markdown]
# ## 6. Single-tool removal
#
# What each tool is worth, two ways. From the table alone (no training; the chapter
# "Building the reward table" shows the same): how much the oracle and the best fixed
# subset lose when the tool leaves the library (the paper's Table 12). And by retraining:
# FGPO on the table restricted to the other three tools, against FGPO on all four, paired
# on every `core` question.

# %%
rem = removal_table(tables["core"].select(ids["core"]), scores, "core")
rem["paper delta oracle"] = paper.TABLE12_GENOMEQA["delta_oracle"].to_numpy()
rem["paper delta best fixed"] = paper.TABLE12_GENOMEQA["delta_best_fixed"].to_numpy()
display(rem.round(2))

# %% [markdown]
# ## 7. GRPO's group size, learning rate and checkpoints
#
# GRPO pays $G$ reward evaluations per visit and learns only from live groups. Larger
# groups are dead less often (Eq. 7) and see a best subset more often, at a proportional
# price. The last columns are the dev accuracy of the kept heads at each learning rate of
# the sweep (mean over seeds); the chosen rate is the best of them.

# %%
gs = group_size_table(ab, scores, no_tool)
display(gs.round(2))
fg = ab.sweep[(ab.sweep.method == "fgpo") & (ab.sweep.lr == ab.manifest["chosen_lr"]["fgpo"])]
fgpo_acc = float(scores[(scores.method == "fgpo") & (scores.suite == "core")].accuracy.mean())
print(f"FGPO for comparison: {fgpo_acc:.2f}% with {fg.reward_evaluations.mean():,.0f} reward evaluations per run "
      f"({fg.reward_evaluations.mean() / (fgpo_acc - no_tool):,.0f} per point above No-Tool).")

# %% [markdown]
# GRPO's accuracy and tools per question at evenly spaced checkpoints of its chosen runs,
# beside the paper's checkpoints every 25 steps (grey, its own step axis on top); FGPO's
# for comparison:

# %%
ck = checkpoint_table(ab, ["grpo", "fgpo"])
fig = plot_checkpoints(ck, {"grpo": "GRPO", "fgpo": "FGPO"}, paper.GRPO_CHECKPOINTS)
plt.show()
display(ck.pivot(index="epoch", columns="method", values="tools").rename(columns=label).round(2).T)

# %% [markdown]
# ## 8. SFT and DPO: collapse onto the empty subset?
#
# The paper's SFT put nearly all of its argmax decisions on the empty subset and every DPO
# $\beta$ landed at the no-tool floor. Its explanation: on its table the empty subset was
# reward-optimal for most questions (under Eq. 1 a right answer with no tools earns the
# most), so imitating the per-question optimum teaches "no tools". The paper's numbers are
# in the second table. Here:

# %%
imi = imitation_table(ab, scores, tables["core"], ABLATIONS["imitation"])
display(imi.round(2))
train_empty = 100 * float((tables["train"].oracle_actions() == 0).mean())
display(paper_vs_book({
    "empty subset reward-optimal, test (%)": (paper.EMPTY_SUBSET["empty_optimal"], imi.attrs["empty_optimal"]),
    "empty subset reward-optimal, training (%)": (None, train_empty),
    "SFT argmax empty (%)": (paper.EMPTY_SUBSET["sft_argmax_empty"], imi.loc["SFT", "argmax is empty (%)"]),
    "SFT accuracy": (paper.MAIN_GENOMEQA["SFT"], imi.loc["SFT", "accuracy (%)"]),
    "DPO (beta 0.3) accuracy": (paper.MAIN_GENOMEQA["DPO"], imi.loc["DPO", "accuracy (%)"]),
    "No-Tool": (paper.MAIN_GENOMEQA["No-Tool"], no_tool)}))

# %% [markdown]
# ## 9. Selector capacity
#
# The paper checked that its result did not hinge on the selector's size (a 1.5B selector,
# in the last table). Here the analogue: a linear head against MLP heads of
# 64 and 256 hidden units on the same frozen features, and the language-model selector of
# the chapter "FGPO versus GRPO" beside them (the runs its `chosen.json` names, by free
# generation; the row says on how many `core` questions).

# %%
cap = rows("capacity")
cap["evaluated on"] = ab.manifest["n_questions"]["core"]
if runs_dir and (Path(runs_dir) / "chosen.json").exists():
    from fgpo_core.experiments.report import load_chosen, method_grid

    lm = method_grid(load_chosen(runs_dir), {"reader": {"core": tables["core"]}}, methods=["FGPO", "GRPO"])
    for m, f in lm[lm.method.isin(["FGPO", "GRPO"])].groupby("method"):
        cap.loc[f"{m} (LM selector, free generation)", ["core accuracy", "tools (core)", "evaluated on"]] = [
            float(f.accuracy.iloc[0]), float(f.tools.iloc[0]), int(f.n.iloc[0])]
display(cap.round(2))
display(paper_vs_book({"FGPO, 1.5B selector": (paper.SENSITIVITY["selector_1.5b_fgpo"], None),
                       "GRPO, 1.5B selector": (paper.SENSITIVITY["selector_1.5b_grpo"], None),
                       "FGPO, linear head": (None, cap.loc["FGPO", "core accuracy"]),
                       "FGPO, MLP 256": (None, cap.loc["FGPO (MLP 256)", "core accuracy"]),
                       "GRPO, MLP 256": (None, cap.loc["GRPO (MLP 256)", "core accuracy"])}, digits=2))

# %% [markdown]
# ## What the ablations say

# %%
findings = appendix_findings(dial=dial, parsimony=pars, entropy=ent, temperature=temp, data=data, five=m5,
                             five_refs=ref5, invocation=inv, removal=rem, groups=gs, imitation=imi,
                             capacity=cap, refs=refs)
display(Markdown("\n".join(findings)))

# %% [markdown]
# ## Re-running it
#
# ```bash
# .venv/bin/fgpo study --methods ablations --checkpoints 10 --out-dir runs/cpu/ablations
# .venv/bin/fgpo features --encoder minilm --n-tools 5 --out data/features/cpu/minilm-five
# for s in train dev core microbe mosaic; do      # the 32-subset tables (resumable)
#   .venv/bin/fgpo table build --bench data/benchmarks/cpu --suite $s --reasoner reader --five \
#       --extend data/tables/cpu/reader/$s --out data/tables/cpu/reader-five/$s
# done
# .venv/bin/fgpo study --methods five --checkpoints 20 --table-dir data/tables/cpu/reader-five \
#     --features-dir data/features/cpu/minilm-five --out-dir runs/cpu/ablations-five
# ```
#
# (`make ablations` runs all four.) The method lists are `fgpo_core.experiments.study.ABLATIONS`.

# %% tags=["remove-input"]
print(paper.CITATION)
