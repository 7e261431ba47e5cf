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
# # Why sample what you can enumerate?
#
# This book teaches, and reproduces in code you can re-run, **Full-Group Policy
# Optimization (FGPO)**: exact policy optimization for choosing which genomic analysis
# tools a frozen language-model reasoner gets to see.
#
# A question $s$ about a DNA sequence comes with $n$ tools (sequence composition, a motif
# scan, splice-site scoring, a learned genomic expert). A *selector* $q_\theta(a \mid s)$
# picks a subset $a$ of them; the tools run, their evidence goes into the prompt of a
# frozen reasoner, and the reasoner answers a multiple-choice question. The reward
# $r(s,a)$ is $+1$ or $-1$ for a right or wrong answer, less a small charge per tool.
# GRPO *samples* $G$ subsets per question and pushes up those that scored above their
# group's mean. With $n = 4$ tools there are only $2^n = 16$ subsets, so FGPO evaluates
# all of them once, stores the rewards in a **reward table**, and optimizes the exact
# expectation
#
# $$
# J(\theta) = \mathbb{E}_s \sum_{a} q_\theta(a \mid s)\, r(s,a).
# $$
#
# Every subset whose reward differs from the current average gets a gradient on every
# visit, while GRPO loses whole questions to **dead groups**: groups whose $G$ rewards are
# all equal, so that every advantage is zero, and more of them the more its policy
# concentrates.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
study_dir = "../runs/cpu/study"  # the main policy-head study (`fgpo study`)
study_tables = "../data/tables/cpu/reader"  # the training reader's tables, one subfolder per suite

# %% tags=["remove-cell"]
import pandas as pd
from IPython.display import display

from fgpo_core.book import paper
from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.experiments.domains import (SPLITS, best_fixed_subset, domain_accuracy, domain_verdicts,
                                          study_training_table)
from fgpo_core.experiments.study import load_study
from fgpo_core.experiments.study_report import routing
from fgpo_core.table import load_tables

st = load_study(study_dir)
TEST = st.manifest["config"]["suites"].split(",")
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
train = study_training_table(st, tables["train"])  # the questions the study trained on
train_families = set(train.family)
acc = domain_accuracy(st, tables, ["fgpo", "grpo"], TEST, train_families)
verdict = domain_verdicts(st, tables, "fgpo", ["grpo"], TEST, train_families)
short = {"in domain": "id", "out of domain": "ood", "pooled": "pooled"}
for split in SPLITS:
    for m, key in (("fgpo", "fgpo"), ("grpo", "grpo"), ("BestFixed*", "best")):
        glue_number(f"{key}_{short[split]}", acc.loc[m, split])
    glue_number(f"n_{short[split]}", int(acc.loc["questions", split]), digits=0)
    glue_number(f"gap_grpo_{short[split]}", verdict[("grpo", split)].gap, signed=True)
    glue_number(f"gap_best_{short[split]}", verdict[("BestFixed*", split)].gap, signed=True)
names = tables["core"].names()
tool_no = {name: f"T{i + 1}" for i, name in enumerate(names)}
ids = {s: st.pick_matrix(s, "fgpo")[0] for s in TEST}
best = best_fixed_subset(tables, {s: tables[s].select(ids[s]).question_ids for s in TEST})
best_label = "+".join(tool_no[t] for t in tables["core"].labels()[best].split("+")) if best else "no tool"
glue_text("best_subset", best_label)
glue_number("seeds", st.manifest["config"]["seeds"], digits=0)


# %% tags=["remove-cell"]
def family_accuracy(table, family, subset):
    """% right on one family's questions with one fixed subset (0: no tool)."""
    m = table.family == family
    return 100.0 * float(table.correct[m, subset].mean())


T2 = 1 << names.index("motif_scan")
core = tables["core"]
tf_none, tf_t2 = family_accuracy(core, "tf_motif", 0), family_accuracy(core, "tf_motif", T2)
train_gain = {f: family_accuracy(train, f, T2) - family_accuracy(train, f, 0)
              for f in sorted(train_families)}
calls = {m: float(routing(st, core, "core", m).loc["tf_motif", "motif_scan"]) for m in ("fgpo", "grpo")}
glue_number("tf_none", tf_none)
glue_number("tf_t2", tf_t2)
glue_number("t2_train_max", max(train_gain.values()), signed=True)
glue_number("fgpo_t2_tf", calls["fgpo"])
glue_number("grpo_t2_tf", calls["grpo"])
glue_number("paper_fgpo", paper.MAIN_GENOMEQA["FGPO"], digits=2)
glue_number("paper_grpo", paper.MAIN_GENOMEQA["GRPO"], digits=2)
glue_number("paper_best", paper.MAIN_GENOMEQA["BestFixed*"], digits=2)
glue_number("paper_gap", paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"], digits=2, signed=True)
glue_number("paper_cells", paper.TRANSFER["cells"], digits=0)
glue_number("paper_wins", paper.TRANSFER["fgpo_wins"], digits=0)
glue_number("paper_margin", paper.TRANSFER["margin_mean"], digits=2, signed=True)
glue_number("paper_beats_best", paper.TRANSFER["fgpo_beats_best_fixed"], digits=0)

# %% [markdown]
# ## What this book found
#
# The paper's claim is that the exact objective trains a better selector than GRPO's
# sampled one, and one that beats every fixed choice of tools. The book's own test of
# it trains a small policy head on frozen features of the selector's prompt with every
# estimator, {glue:text}`seeds` seeds each, and scores every question of three test
# suites ({glue:text}`n_pooled` questions). Each question is *in domain* when its family
# appears among the training questions, *out of domain* when the selector first meets
# its family at test time:

# %% tags=["remove-input"]
LABEL = {"fgpo": "FGPO", "grpo": "GRPO", "BestFixed*": "best fixed subset"}
shown = acc.loc[["fgpo", "grpo", "BestFixed*"]].rename(index=LABEL).round(1)
shown.columns = [f"{c} ({int(acc.loc['questions', c]):,} questions)" for c in SPLITS]
display(shown.style.format("{:.1f}").set_caption("Accuracy (%), mean over seeds"))

# %% [markdown]
# **In domain, exact beats sampled.** On families it trained on, FGPO answers
# {glue:text}`fgpo_id`% of the questions right against GRPO's {glue:text}`grpo_id`%
# ({glue:text}`gap_grpo_id` points) and the best fixed subset's {glue:text}`best_id`%
# ({glue:text}`gap_best_id`). Both gaps are differences by the book's rule: question-paired
# tests, seed by seed, that hold over seeds. This is the paper's result: on its GenomeQA
# benchmark FGPO scores {glue:text}`paper_fgpo`% against GRPO's {glue:text}`paper_grpo`%
# ({glue:text}`paper_gap`) and the best fixed subset's {glue:text}`paper_best`%.

# %% tags=["remove-input"]
claim("fgpo-beats-grpo-in-domain", verdict[("grpo", "in domain")].a_better, "FGPO beats GRPO in domain")
claim("fgpo-beats-best-in-domain", verdict[("BestFixed*", "in domain")].a_better,
      "FGPO beats the best fixed subset in domain")

# %% [markdown]
# **Out of domain, it loses.** On the families it never saw, FGPO scores
# {glue:text}`fgpo_ood`%, GRPO {glue:text}`grpo_ood`% and the best fixed subset
# ({glue:text}`best_subset`, chosen with hindsight) {glue:text}`best_ood`%. Pooled over
# every question, FGPO ({glue:text}`fgpo_pooled`%) stays below that one fixed subset
# ({glue:text}`best_pooled`%): no trained selector here beats the best fixed choice overall.
# The paper's selectors, moved to {glue:text}`paper_cells` settings they were not trained
# in, beat GRPO in {glue:text}`paper_wins` of them (by {glue:text}`paper_margin` points on
# average) and the best fixed subset in {glue:text}`paper_beats_best`.

# %% tags=["remove-input"]
claim("fgpo-below-best-out-of-domain", verdict[("BestFixed*", "out of domain")].b_better,
      "FGPO is below the best fixed subset out of domain")
claim("fgpo-not-above-grpo-out-of-domain", not verdict[("grpo", "out of domain")].a_better,
      "FGPO does not beat GRPO out of domain")
claim("fgpo-below-best-pooled", verdict[("BestFixed*", "pooled")].b_better,
      "pooled, FGPO is below the best fixed subset")

# %% [markdown]
# **Why: a tool that training never pays for.** The motif scan (T2) decides the TF-motif
# family: alone it takes the reader from {glue:text}`tf_none`% to {glue:text}`tf_t2`% on
# those questions. On the training families it is worth nothing: its largest gain over no
# tool on any of them is {glue:text}`t2_train_max` points. A selector that sees anonymous
# tool slots can learn what a slot is for only from rewards, so the exact objective, which
# weighs every subset's worth on every visit, learns to drop T2: FGPO calls it on
# {glue:text}`fgpo_t2_tf`% of the TF-motif questions, while GRPO's noisier policy still
# draws it on {glue:text}`grpo_t2_tf`%. The paper's training pool (promoters, enhancers,
# splice sites, histone marks) pays for the motif scan, which is how its FGPO routes T2 to
# a family it first meets at test time. Ours does not, so our out-of-domain numbers test
# something else: what a selector does with a tool its training has taught it to ignore.

# %% tags=["remove-input"]
claim("t2-decides-tf-motif", tf_t2 - tf_none >= 30, "the motif scan alone adds at least 30 points on TF-motif questions")
claim("t2-pays-nowhere-in-training", max(train_gain.values()) < 5, "the motif scan gains under 5 points on every training family")
claim("fgpo-drops-t2", calls["fgpo"] < 5 and calls["grpo"] > calls["fgpo"],
      "FGPO almost never calls the motif scan on TF-motif questions, GRPO more often")

# %% [markdown]
# The rest of the book shows how each of these numbers is made, and where ours differ
# from the paper's and why.
#
# ## How to read it
#
# - Every chapter is a notebook (`notebooks/NAME.py`, paired with `NAME.ipynb`) that
#   narrates and plots; the work is done by the small, tested library `fgpo_core`, and
#   the code the chapters show is quoted from it.
# - Every number on these pages was computed when the chapter was executed. Numbers the
#   paper reports appear beside ours, labelled *paper*. A sentence that depends on a
#   result is checked when the chapter runs: if the numbers change, the page shows a
#   warning instead of silently saying something false.
# - One rule decides what counts as a difference between two methods: the exact McNemar
#   test on the questions exactly one of them gets right, seed by seed, and over seeds a
#   paired t-test at $p < 0.05$ together with McNemar at $p < 0.05$ in at least half of the
#   seeds (`fgpo_core.evaluation.difference`).
# - The pages were executed under the `cpu` profile; {doc}`../book/rerun` explains how to
#   execute any chapter again at another scale.
#
# The first part needs no model: it derives the dead-group probability in closed form
# and races the exact gradient against sampled estimators on a synthetic table. The
# second builds the tool library, benchmark suites made from real DNA, and the
# exhaustive reward tables. The third trains selectors on those tables: the policy head
# with every estimator and seed, then the language-model selector itself. The appendix
# runs the paper's ablations; the companion study asks what SFT, RL and their mix do in
# and out of domain; and the last chapters go past enumeration (libraries of 8 and 12
# tools) and show how to bring your own tools and questions.
