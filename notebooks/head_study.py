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
# # Exact versus sampled on the real tables
#
# The chapter "Exact versus sampled, with no model" raced the estimators on a synthetic
# table. Here they race on the real one: the evidence reader's reward tables, every
# training question, every question of the three test suites, several seeds. What makes
# this affordable on two CPU cores is the **policy-head selector**: the selector's prompt
# (the question, its options and four anonymous tool slots, exactly what the language-model
# selector reads) is encoded once by a frozen sentence encoder, and only a small head on
# top is trained, one candidate score per subset. Its sampling distribution *is* $q$, so
# no completion can fail to parse and the methods differ in one thing only: how a visit
# to a question turns rewards into a gradient.
#
# The methods, all from `fgpo_core.core.estimators` and trained by one loop
# (`fgpo_core.algorithms.head`) with the same questions, order, minibatches, number of
# question visits, optimiser and dev-based checkpoint choice:
#
# | method | per visit | reward |
# |---|---|---|
# | FGPO | all $2^n$ subsets, exact expectation (Eq. 2, 5) | Eq. 1 |
# | FGPO $k$ (coverage dial) | $k$ subsets drawn uniformly, $q$ renormalised on them | Eq. 1 |
# | GRPO | $G$ draws from $q$, group-normalised advantages (Eq. 3, as TRL) | differential |
# | GRPO (Eq. 1) | the same draws | Eq. 1 |
# | RLOO | the same draws, leave-one-out baselines | differential |
# | GRPO + dynamic sampling | dead groups drawn again (DAPO), then dropped | differential |
# | SFT | cross-entropy to the table's best subset | Eq. 1 argmax |
# | DPO | best subset preferred over the worst | Eq. 1 argmax / argmin |

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the small study trained when study_dir is empty
study_dir = "../runs/cpu/study"  # a finished `fgpo study`; empty: train a small one now
study_tables = "../data/tables/cpu/reader"  # the training reader's merged tables, one subfolder per suite
study_features = "../data/features/cpu/minilm"  # cached prompt features (`fgpo features`)
study_bench = "../data/benchmarks/cpu"  # the benchmark both were made from
transfer_tables = "../data/tables/cpu/minilm,../data/tables/cpu/smollm2"  # other readers' tables ("": none)
feature_comparison = "../runs/cpu/study-features"  # one small study per encoder ("": skip)
capacity_study = "../runs/cpu/study-mlp"  # the same study with an MLP head ("": skip)
head_seeds = 2  # seeds of the small study (only when study_dir is empty)
head_epochs = 3  # its epochs
head_questions = 200  # its training questions and its questions per test suite

# %% tags=["hide-input"]
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, profile_note, show_source
from fgpo_core.book.findings import head_study_findings
from fgpo_core.book.plots import plot_study_accuracy, plot_study_curves, plot_tool_rates, set_style
from fgpo_core.core import estimators as est
from fgpo_core.evaluation.metrics import dead_group_table, empty_subset_table
from fgpo_core.experiments.study import StudyConfig, load_study, run_study
from fgpo_core.experiments.study_report import (coverage_rows, label, paired_tests, routing, study_baselines,
                                                study_scores, study_summary)
from fgpo_core.table import load_tables

set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
if not study_dir:  # the ci profile: the same study, small, trained now from the committed tables and features
    study_dir = tempfile.mkdtemp(prefix="fgpo-study-")
    run_study(StudyConfig(seeds=head_seeds, epochs=head_epochs, lrs="3e-2", n_train=head_questions,
                          n_dev=head_questions, n_test=head_questions, table_dir=study_tables,
                          features_dir=study_features, bench_dir=study_bench, out_dir=study_dir), progress=False)
st = load_study(study_dir)
cfg = st.manifest["config"]
METHODS = cfg["methods"].split(",")
TEST = cfg["suites"].split(",")
LABELS = {m: label(m) for m in METHODS}
labels = {"minilm": "zero-shot MiniLM", "smollm2": "SmolLM2-135M"}
readers = load_tables({"evidence reader": study_tables,
                       **{labels.get(Path(d).name, Path(d).name): d for d in filter(None, transfer_tables.split(","))}},
                      TEST, expect={"evidence reader": {"reasoner": st.manifest["tables"]["train"]["reasoner"]}})
tables = readers["evidence reader"]
profile_note(profile, methods=len(METHODS), seeds=cfg["seeds"], epochs=cfg["epochs"],
             questions=st.manifest["n_questions"], encoder=st.manifest["features"]["encoder"])

# %% [markdown]
# ## The estimators in code
#
# Each is a function of the candidate scores, the rewards and, for the sampled ones, the
# actions drawn; none knows which selector produced the scores. The exact objective and
# the coverage dial's draw:

# %% tags=["remove-input"]
display(show_source(est.fgpo_loss))
display(show_source(est.coverage_mask, drop_docstring=True))

# %% [markdown]
# The group-sampled ones: GRPO's advantages (TRL's group scaling; the test suite checks
# them and the loss's gradient against TRL's own `GRPOTrainer._compute_loss`), RLOO's,
# the surrogate both feed, and DAPO's dynamic sampling:

# %% tags=["remove-input"]
display(show_source(est.grpo_advantages, drop_docstring=True))
display(show_source(est.rloo_advantages, drop_docstring=True))
display(show_source(est.policy_gradient_loss, drop_docstring=True))
display(show_source(est.draw_live_groups, drop_docstring=True))

# %% [markdown]
# ## Which frozen features
#
# The head sees nothing but its features, so they bound what any method can learn. Two
# encoders ship in packages: the MiniLM sentence encoder and the selector's own base model,
# SmolLM2-135M (mean-pooled hidden states). Both were tried with FGPO and a linear head on
# the same training questions, judged on the dev questions (a small study per encoder; the
# 135M decoder is the slower of the two encoders by far, so this comparison uses the subset
# of training questions its cache holds):

# %%
if feature_comparison and Path(feature_comparison).is_dir():
    rows = {}
    dev_t = load_tables({"r": study_tables}, ["dev"])["r"]
    for d in sorted(Path(feature_comparison).iterdir()):
        if (d / "manifest.json").exists():
            fc = load_study(d)
            sc = study_scores(fc, dev_t)
            g = sc.groupby("method").accuracy
            row = {"training questions": fc.manifest["n_questions"]["train"], "seeds": fc.manifest["config"]["seeds"]}
            for m in g.mean().index:
                row[f"{label(m)} dev accuracy"] = f"{g.mean()[m]:.1f} ± {g.std(ddof=1)[m]:.1f}"
            row["_fgpo"], row["_sd"] = g.mean().get("fgpo", np.nan), g.std(ddof=1).get("fgpo", np.nan)
            rows[fc.manifest["features"]["encoder"]] = row
    choice = pd.DataFrame(rows).T
    display(choice.drop(columns=["_fgpo", "_sd"]))
    best = choice["_fgpo"].astype(float).idxmax()
    gap = float(choice["_fgpo"].max() - choice["_fgpo"].min())
    within = gap <= float(choice["_sd"].max())
    display(Markdown(f"FGPO's mean dev accuracy is higher with **{best}** features by {gap:.1f} points, "
                     + ("within one standard deviation over seeds, so the cheaper encoder serves as well here"
                        if within else "more than one standard deviation over seeds")
                     + f". The study below uses **{st.manifest['features']['encoder']}** features (those questions "
                     "are also the ones the heads were selected on, so this compares encoders, not final scores)."))
else:
    print("no feature comparison given")

# %% [markdown]
# ## Training
#
# Every method ran at each learning rate of a small sweep with every seed; each run kept
# its head at its best dev evaluation (greedy accuracy, then $J$), and each method's rate
# is the one whose kept heads score best on dev on average. The rates chosen, and what
# a run costs in reward evaluations (a look-up each; the sampled methods pay $G$ per visit,
# dynamic sampling more, FGPO $2^n$, SFT and DPO read the table's best and worst subsets):

# %%
sw = st.sweep
chosen = pd.Series(st.manifest["chosen_lr"], name="chosen learning rate")
cost = sw.merge(chosen.rename("lr").rename_axis("method").reset_index(), on=["method", "lr"])
display(pd.concat([chosen.map("{:g}".format),
                   cost.groupby("method").reward_evaluations.mean().rename("reward evaluations per run").round(0),
                   cost.groupby("method").dev_accuracy.mean().rename("dev accuracy (kept heads, mean)").round(1)],
                  axis=1).reindex(METHODS).rename(index=LABELS))
print(f"The whole study: {len(sw)} runs, {st.manifest['train_seconds'] / 60:.1f} min of training on one CPU thread "
      f"({st.manifest['seconds'] / 60:.1f} min in all).")

# %% [markdown]
# How training went, on dev, against question visits (mean over seeds; the band spans
# the seeds). The dead-group panel is the closed form of Eq. 7 for the *current* policy at
# $G = 6$: how often a GRPO group drawn from it would be dead.

# %%
MAIN = [m for m in ("fgpo", "grpo", "grpo-eq1", "rloo", "dapo", "sft", "dpo") if m in METHODS]
fig = plot_study_curves(st.dev, MAIN, LABELS)
plt.show()
obs = st.curves[st.curves.method.isin(["grpo", "grpo-eq1", "rloo", "dapo"])]
if len(obs):
    epoch_len = obs.groupby(["method", "seed"]).step.max().iloc[0] / cfg["epochs"]
    obs = obs.assign(epoch=np.ceil(obs.step / epoch_len).astype(int))
    dead = obs.groupby(["method", "epoch"]).dead_observed.mean().unstack(0)
    display(Markdown("Observed dead groups (%) of the sampled methods' own draws, by epoch (mean over steps and "
                     "seeds; dynamic sampling's count is of its first draws, before it draws again):"))
    display(dead.iloc[[0, len(dead) // 2, -1]].rename(columns=LABELS).round(1))

# %% [markdown]
# ## The main table
#
# Every question of the main suite (`core`) and the two cross-domain suites, greedy pick
# of each kept head, accuracy looked up in the evidence reader's table: mean ± standard
# deviation over seeds. The table-only references come from the same questions.

# %%
scores = study_scores(st, tables)
summary = study_summary(scores)
tools = study_summary(scores, "tools")
base = study_baselines(tables, {s: st.picks[st.picks.suite == s].question_id.unique() for s in TEST})
main = summary[TEST].reindex(METHODS).rename(index=LABELS)
main["tools (core)"] = tools["core mean"].reindex(METHODS).round(2).to_numpy()
refs = base.pivot(index="method", columns="suite", values="accuracy")[TEST].round(1).astype(str)
refs["tools (core)"] = base[base.suite == "core"].set_index("method").tools.round(2)
table2 = pd.concat([main, refs])
table2["paper (GenomeQA)"] = pd.Series({LABELS.get(k.lower(), k): v for k, v in paper.MAIN_GENOMEQA.items()})
table2["paper tools"] = pd.Series({LABELS.get(k.lower(), k): v for k, v in paper.TOOL_ECONOMY.items()})
display(Markdown("Accuracy (%); questions per suite: " + ", ".join(
    f"{s} {int(scores[scores.suite == s].n.iloc[0])}" for s in TEST)))
display(table2)
means = summary[[f"{s} mean" for s in TEST]].set_axis(TEST, axis=1)
sds = scores.groupby(["method", "suite"]).accuracy.std(ddof=1).unstack()[TEST].fillna(0)
fig = plot_study_accuracy(means, sds, base, MAIN, LABELS)
plt.show()
agree, same = {}, {}
for m in METHODS:
    ids, P = st.pick_matrix("core", m)
    same[m] = 100 * (P == P[0]).all(0).mean()
    agree[LABELS[m]] = {"core questions on which every seed picks the same subset (%)": same[m],
                        "distinct subsets picked (seed 0)": len(np.unique(P[0]))}
display(pd.DataFrame(agree).T.round(1))

# %% [markdown]
# ## A larger head
#
# The same study with a one-hidden-layer MLP head in place of the linear one (its width in
# the table), for the main methods: does more capacity on the same features change the
# comparison?

# %%
if capacity_study and (Path(capacity_study) / "manifest.json").exists():
    mlp = load_study(capacity_study)
    mlp_scores = study_scores(mlp, tables)
    cap = pd.DataFrame({
        "linear head": summary["core"],
        f"MLP head ({mlp.manifest['config']['hidden']} units)": study_summary(mlp_scores)["core"]}).dropna()
    cap["MLP tools"] = study_summary(mlp_scores, "tools")["core mean"].round(2)
    display(Markdown("Accuracy on core (%, mean ± sd over seeds):"))
    display(cap.reindex([m for m in METHODS if m in cap.index]).rename(index=LABELS))
    mlp_tests = paired_tests(mlp_scores, "fgpo", "core")
    display(Markdown("FGPO against each method with the MLP head (paired, per seed):"))
    display(mlp_tests.rename(index=LABELS).round(3))
else:
    mlp_tests = None
    print("no MLP-head study given")

# %% [markdown]
# ## Question-paired tests
#
# FGPO against each other method on `core`, seed by seed (the same seed trains both on the
# same question order), exact McNemar tests on the questions where exactly one is right:

# %%
tests = {s: paired_tests(scores, "fgpo", s) for s in TEST}
display(tests["core"].rename(index=LABELS).round(3))
display(Markdown("The same tests on the cross-domain suites (median p over seeds):"))
display(pd.DataFrame({s: tests[s]["median p"] for s in TEST[1:]}).rename(index=LABELS).style.format("{:.3g}"))

# %% [markdown]
# ## The coverage dial
#
# Evaluating only $k$ of the $2^n$ subsets per visit (the paper's Figure 1c): the paper's
# accuracy rose monotonically with $k$. At $k = 1$ there is nothing to compare: $q$
# renormalised on a single subset is 1 there, whatever the scores, so no gradient reaches
# the head and it stays at its uniform start (its greedy pick is the first subset, the
# empty one).

# %%
dial = coverage_rows(summary, "core", tables["core"].n_actions)
dial["paper (GenomeQA)"] = pd.Series(paper.COVERAGE_DIAL)
display(dial.round(2))

# %% [markdown]
# ## What each method routes where
#
# The share of `core` questions of each family on which each tool is called (mean over
# seeds), like the paper's Figure 4. The families `taxonomy` and `tf_motif` never appear in
# training: their routing is what the selector carries over from the families it saw.

# %%
names = tables["core"].names()
rates = {LABELS[m]: routing(st, tables["core"], "core", m).set_axis([f"T{i + 1}" for i in range(len(names))], axis=1)
         for m in ("sft", "grpo", "dapo", "fgpo") if m in METHODS}
fig = plot_tool_rates(rates, "Tool calls per family on core (% of questions, mean over seeds)")
plt.show()
print("T1..T4 = " + ", ".join(f"T{i + 1} {n}" for i, n in enumerate(names)))

# %% [markdown]
# ## Dead groups and the empty subset of the trained policies (Tables 15 and 16)
#
# If GRPO were run from each kept policy, how often would a group be dead? The closed form
# on `core`, under the reward classes of Eq. 1 (the paper's Table 15) and of the
# differential reward, for the first seed's kept heads (for this selector $p_\text{gen} = q$);
# and each policy's mass on the empty subset (Table 16).

# %%
core_ids = st.picks[(st.picks.suite == "core") & (st.picks.method == METHODS[0]) & (st.picks.seed == 0)].question_id
correct_core = tables["core"].select(list(core_ids)).correct
pol = {"Uniform": np.full(correct_core.shape, 1 / correct_core.shape[1])}
pol.update({LABELS[m]: st.q_matrix(m, 0) for m in MAIN})
display(Markdown("Eq. 1 classes:"))
display(dead_group_table(pol, correct_core, "eq1").round(1))
display(Markdown("The paper's Table 15:"))
display(paper.TABLE15)
display(Markdown("Differential-reward classes:"))
display(dead_group_table(pol, correct_core, "differential").round(1))
t16 = empty_subset_table({LABELS[m]: st.q_matrix(m, 0) for m in MAIN})
display(t16.round(1))
display(paper_vs_book({
    "empty subset reward-optimal (% of core)": (paper.EMPTY_SUBSET["empty_optimal"],
                                                100 * (tables["core"].oracle_actions() == 0).mean()),
    "SFT argmax empty (%)": (paper.EMPTY_SUBSET["sft_argmax_empty"], t16.loc["SFT", "argmax is empty (%)"]
                             if "SFT" in t16.index else None)}))

# %% [markdown]
# ## Moved to other reasoners
#
# A pick never depends on the reasoner, so the same picks are scored in the other readers'
# tables of the same questions, without retraining (SmolLM2's table is a slice: column `n`).

# %%
cells = {}
for reader, tabs in readers.items():
    if reader == "evidence reader":
        continue
    sc = study_scores(st, tabs)
    for s, f in sc.groupby("suite"):
        m = f.groupby("method").accuracy.mean()
        b = study_baselines(tabs, {s: st.picks[st.picks.suite == s].question_id.unique()}).set_index("method")
        cells[(reader, s)] = {"n": int(f.n.iloc[0]), "No-Tool": b.loc["No-Tool", "accuracy"],
                              "BestFixed*": b.loc["BestFixed*", "accuracy"],
                              **{LABELS[k]: m[k] for k in MAIN if k in m}}
if cells:
    cells = pd.DataFrame(cells).T
    cells["FGPO - GRPO"] = cells["FGPO"] - cells["GRPO"]
    display(cells.round(1))
else:
    print("no other reasoner's tables given")

# %% [markdown]
# ## What happened, and why

# %%
empty = {"optimal": 100 * (tables["core"].oracle_actions() == 0).mean(),
         "sft_argmax": t16.loc["SFT", "argmax is empty (%)"]} if "SFT" in t16.index else None
findings = head_study_findings(summary, tools, tests["core"], base, st.dev, METHODS, dial,
                               rates.get("FGPO"), rates.get("GRPO"), cells if len(cells) else None, empty, same)
display(Markdown("\n".join(findings)))

# %% [markdown]
# ## Re-running it
#
# ```bash
# .venv/bin/fgpo features --encoder minilm --out data/features/cpu/minilm   # once: the frozen prompt features
# .venv/bin/fgpo study --out-dir runs/cpu/study                              # every method x seed x rate (resumable)
# ```
#
# `fgpo study --help` lists its settings (methods, seeds, rates, epochs, head width,
# temperature, lambda, G, dynamic sampling's cap, the tables and features to read).

# %% tags=["remove-input"]
print(paper.CITATION)
