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
# # The fair test on real tables
#
# The chapter {doc}`exact_vs_sampled` raced the estimators on a synthetic table. Here they
# race on the real one: every training and test question, many seeds. What makes this
# affordable on two CPU cores is the **policy-head selector**: the selector's prompt (the
# question, its options and four anonymous tool slots) is encoded once by a frozen MiniLM
# sentence encoder, and only a linear head on top is trained, one score per subset. Its
# softmax *is* $q$, so the methods differ in one thing only: how a visit turns rewards into
# a gradient. Every method is an estimator of one registry, trained by one loop with the same questions, minibatches, optimiser and checkpoints.
#
# | estimator | per visit | reward |
# |---|---|---|
# | FGPO | all 16 subsets, the exact expectation (Eq. 2, 5) | Eq. 1 |
# | FGPO $k$ (the coverage dial) | $k$ subsets drawn uniformly, $q$ renormalised on them | Eq. 1 |
# | GRPO | $G$ draws from $q$, group-normalised advantages (Eq. 3, as TRL) | differential or Eq. 1 |
# | RLOO | the same draws, leave-one-out baselines (RLOO) | differential or Eq. 1 |
# | GRPO + dynamic sampling | dead groups drawn again (as DAPO does), then dropped | differential or Eq. 1 |
# | GRPO, clipped ratio | PPO's clipped ratio, two updates per draw | differential |
# | SFT, DPO | imitation of the table's best subset (and its worst) | Eq. 1 argmax |
#
# RLOO, REINFORCE with a leave-one-out baseline, is Kool et al. (2019) as Ahmadian et al. (2024,
# arXiv:2402.14740) apply it to language models; DAPO is Yu et al. (2025, arXiv:2503.14476). Both
# are in {doc}`../book/references`.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
fair_dir = "../runs/cpu/fair"  # the fair test: every estimator x regularizer x rate x seed (`make fair`)
fair_seeds_dir = "../runs/cpu/fair-seeds"  # the cells the first page quotes, again with 10 seeds
signal_dir = "../runs/cpu/fair-signal"  # dead groups and gradient signal at the fair test's policies
study_dir = "../runs/cpu/study"  # every estimator at its default settings (`fgpo study`)
first_pool_dir = "../runs/cpu/study-first-pool"  # the same study on the first 1,000 training questions
capacity_study = "../runs/cpu/study-mlp"  # the same study with an MLP head ("": skip)
study_tables = "../data/tables/cpu/reader"  # the training reader's tables, one subfolder per suite
study_bench = "../data/benchmarks/cpu"  # the benchmark they were made from

# %% tags=["hide-input"]
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fgpo_core.book import paper
from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_fair import plot_learning_curves, plot_routing
from fgpo_core.evaluation.bootstrap import MARGIN
from fgpo_core.evaluation.domains import question_domains
from fgpo_core.evaluation.metrics import dead_group_table
from fgpo_core.experiments.domains import class_accuracy, domain_accuracy, domain_intervals, study_training_table
from fgpo_core.experiments.factorial import EXACT, SAMPLED, SAMPLED_EQ1, WEIGHTS
from fgpo_core.experiments.study import load_study
from fgpo_core.genomics.benchmarks import load_benchmark
from fgpo_core.reports import fair
from fgpo_core.reports.benchmark_page import family_label
from fgpo_core.reports import fair_tables
from fgpo_core.reports.study import label, routing
from fgpo_core.reports.tables import show
from fgpo_core.table import load_tables

set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
ft = fair.load_fair(fair_dir, study_tables, study_bench)
ft10 = fair.load_fair(fair_seeds_dir, study_tables, study_bench, cells_from=ft)
TEST = ft.test_suites
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
_, questions = load_benchmark(study_bench)
domains = question_domains({s: questions[s] for s in TEST}, questions["train"])
cfg = ft.study.manifest["config"]

# %% [markdown]
# ## A fair test
#
# A comparison of estimators is fair only when each gets the same help. So every estimator
# above is crossed with every regularizer (none; the entropy bonus $\beta H(q)$ that FGPO's
# Eq. 5 carries; a penalty $\beta\,\mathrm{KL}(q \,\|\, \text{uniform})$), each weight from
# one grid ({glue:text}`fair_weights`), each learning rate from one grid
# ({glue:text}`fair_lrs`), {glue:text}`fair_seeds` seeds per setting: {glue:text}`fair_runs`
# runs. The sampled estimators train on both rewards, Eq. 1's and the differential one.
# Every choice, a run's checkpoint, a setting's rate, a cell's weight, reads only the
# **in-domain dev** (250 questions of the training families and organisms, {doc}`benchmarks`),
# by one rule: the highest mean dev accuracy over seeds. Test questions are read after.
# The cells the first page quotes were then trained again with {glue:text}`seeds10` seeds at
# their chosen settings.
#
# Every gap below is in points with its 95% interval from a two-level paired bootstrap
# (questions resampled within suite and family, seeds resampled); a gap is a *difference* when
# its interval excludes zero, *level* only when the whole interval lies within
# ±{glue:text}`margin` point, and a star marks a difference that survives Holm's adjustment
# over the page's comparisons.

# %% tags=["remove-cell"]
glue_text("fair_weights", ", ".join(f"{w:g}" for w in WEIGHTS))
glue_text("fair_lrs", ", ".join(f"{float(x):g}" for x in cfg["lrs"].split(",")))
glue_number("fair_seeds", cfg["seeds"], digits=0)
glue_number("fair_runs", len(ft.study.sweep), digits=0)
glue_number("seeds10", ft10.study.manifest["config"]["seeds"], digits=0)
glue_number("margin", MARGIN, digits=0)
REGS = ["none", "ent", "klu"]
grid = fair.cell_grid(ft, [e for e in EXACT + SAMPLED + SAMPLED_EQ1], REGS)
klu_gap = float((grid["klu"] - grid["ent"]).abs().max())
glue_number("klu_gap", klu_gap, digits=2)
f5 = ft.pairs["FGPO vs best sampled, ent"]
glue_number("f5_fgpo_ent", ft.accuracy(f5[0]))
glue_number("f5_rival_ent", ft.accuracy(f5[1]))
glue_text("best_sampled_ent_est", fair_tables.estimator_of(f5[1]))

# %% [markdown]
# Pooled test accuracy of every cell at its chosen weight and rate (mean over seeds):

# %% tags=["remove-input"]
shown = grid.rename(index=fair.estimator_label, columns=fair.REGULARIZER_LABELS)
show(shown.rename_axis("estimator").reset_index(), caption="Accuracy (%) over the "
     f"{len(ft.ids):,} pooled test questions, each cell at the weight and rate the in-domain dev chose")

# %% [markdown]
# These are {glue:text}`fair_seeds`-seed means, and gaps of a few tenths between them move with the
# seeds: the regularized FGPO and {glue:text}`best_sampled_ent_est` cells read {glue:text}`f5_fgpo_ent`%
# and {glue:text}`f5_rival_ent`% here, and {glue:text}`acc10_fgpo_ent`% and {glue:text}`acc10_rival_ent`%
# when re-run with {glue:text}`seeds10` seeds (next section). The book's gaps are the
# {glue:text}`seeds10`-seed ones, with their intervals.
#
# The last two columns agree to within {glue:text}`klu_gap` points, and must: with $|A|$
# subsets, $\mathrm{KL}(q\,\|\,\text{uniform}) = \log|A| - H(q)$, so a KL penalty to uniform
# *is* the entropy bonus, with the same gradient; the runs differ only by floating-point
# rounding. Below, "regularized" means the entropy bonus. FGPO
# at $k = 1$ does not learn at all: $q$ renormalised over one subset is 1, whose gradient is
# zero, so its head stays where it started.

# %% tags=["remove-input"]
claim("klu-is-ent", klu_gap <= 0.2, "KL to uniform and the entropy bonus give the same accuracy in every cell, "
      "within 0.2 points")
claim("few-tenths", abs(ft.accuracy(f5[0]) - ft.accuracy(f5[1])) < 1
      and abs(ft10.accuracy(ft10.pairs["FGPO vs best sampled, ent"][0])
              - ft10.accuracy(ft10.pairs["FGPO vs best sampled, ent"][1])) < 1,
      "the regularized FGPO and best sampled cells differ by less than a point with 5 seeds and with 10")
claim("k1-does-not-learn", grid.loc["fgpo-k1"].max() < grid.loc["fgpo"].min() - 15,
      "FGPO at k = 1 stays far below every FGPO cell")

# %% [markdown]
# ## Exact against sampled, at matched regularization
#
# Exact FGPO against the best sampled estimator *of the same regularizer* (the best by the
# in-domain dev among GRPO at $G$ = 6 and 16, RLOO, dynamic sampling and the clipped ratio,
# on either reward), and each at its own best regularizer, each cell re-run with
# {glue:text}`seeds10` seeds at the rate and weight the in-domain dev chose. Their accuracies:

# %% tags=["remove-input"]
ACC10 = {}
for k in ("ent", "none", "each at its best"):
    for m in ft10.pairs[f"FGPO vs best sampled, {k}"]:
        ACC10.setdefault(m, fair.cell_label(m))
acc10 = fair_tables.cell_accuracies(ft10, ACC10)
show(acc10, caption=f"Test accuracy (%) of the cells compared below, mean over seeds ({len(ft10.ids):,} "
     "pooled test questions)")
for k in ("ent", "none"):
    a, b = ft10.pairs[f"FGPO vs best sampled, {k}"]
    glue_number(f"acc10_fgpo_{k}", ft10.accuracy(a))
    glue_number(f"acc10_rival_{k}", ft10.accuracy(b))

# %% [markdown]
# And the gaps:

# %% tags=["remove-input"]
cmp10 = ft10.comparisons()
EXACTNESS = {"FGPO vs best sampled, none": "FGPO − best sampled, no regularizer",
             "FGPO vs best sampled, ent": "FGPO − best sampled, entropy bonus",
             "FGPO vs best sampled, each at its best": "FGPO − best sampled, each at its own best"}
show(fair.comparison_table(cmp10, EXACTNESS), caption="Gaps in points, 95% interval; * a difference after Holm")
pair = {k: ft10.pairs[k] for k in EXACTNESS}
glue_text("best_sampled_none", fair.cell_label(pair["FGPO vs best sampled, none"][1]))
glue_text("best_sampled_ent", fair.cell_label(pair["FGPO vs best sampled, ent"][1]))
glue_text("fgpo_ent_cell", fair.cell_label(pair["FGPO vs best sampled, ent"][0]))
row = {(r.comparison, r.split): r for r in cmp10.itertuples()}
for k, short in (("none", "none"), ("ent", "ent"), ("each at its best", "best")):
    for split, s in (("pooled", ""), ("in domain", "_id"), ("out of domain", "_ood")):
        r = row[(f"FGPO vs best sampled, {k}", split)]
        glue_number(f"ex_{short}{s}", r.gap, signed=True)
        glue_text(f"ex_{short}{s}_ci", fair.interval_text(r.gap, r.low, r.high).split(" ", 1)[1])
        if split == "pooled":
            glue_text(f"ex_{short}_verdict", r.verdict)
exact_diff = {k: row[(f"FGPO vs best sampled, {k}", "pooled")] for k in ("none", "ent", "each at its best")}

# %% [markdown]
# With the entropy bonus on both sides, FGPO ({glue:text}`fgpo_ent_cell`) against the best
# sampled estimator ({glue:text}`best_sampled_ent`) is {glue:text}`ex_ent` points
# {glue:text}`ex_ent_ci` over every test question, {glue:text}`ex_ent_id` in domain and
# {glue:text}`ex_ent_ood` out of domain ({glue:text}`ex_ent_verdict` by the book's rule). With no regularizer on either side it is
# {glue:text}`ex_none` {glue:text}`ex_none_ci` (the best sampled one: {glue:text}`best_sampled_none`),
# and with each at its own best {glue:text}`ex_best` {glue:text}`ex_best_ci`. On this selector,
# at matched regularization, **enumerating the subsets instead of sampling them buys no
# accuracy we can detect.**

# %% tags=["remove-input"]
claim("no-exactness-effect", not any(r.low > 0 for r in exact_diff.values()),
      "at matched regularization FGPO is not ahead of the best sampled estimator")
claim("no-exactness-effect-any-split", not any(r.low > 0 for r in cmp10.itertuples()
                                               if r.comparison.startswith("FGPO vs best sampled")),
      "FGPO is ahead of the best sampled estimator in no split and at no regularizer")

# %% [markdown]
# ## Is it the entropy bonus?
#
# Yes, in domain. Each estimator at its best regularized cell against itself with no regularizer
# ({glue:text}`fair_seeds` seeds):

# %% tags=["remove-input"]
cmp5 = ft.comparisons({f"{e}: best regularizer vs none": ft.pairs[f"{e}: best regularizer vs none"]
                       for e in ("fgpo", "grpo", "grpo-G16", "rloo", "dapo", "grpo-clip-u2", "grpo-eq1", "rloo-eq1")
                       if f"{e}: best regularizer vs none" in ft.pairs})
REG_ROWS = {n: fair.estimator_label(n.split(":")[0]) for n in cmp5.comparison.unique()}
show(fair.comparison_table(cmp5, REG_ROWS).rename(columns={"comparison (points)": "regularized − none (points)"}),
     caption="Gaps in points, 95% interval; * a difference after Holm")
reg = {(r.comparison.split(":")[0], r.split): r for r in cmp5.itertuples()}
glue_number("reg_fgpo", reg[("fgpo", "pooled")].gap, signed=True)
glue_number("reg_grpo", reg[("grpo", "pooled")].gap, signed=True)
glue_number("reg_fgpo_id", reg[("fgpo", "in domain")].gap, signed=True)
glue_number("reg_rloo", reg[("rloo", "pooled")].gap, signed=True)  # the appendix states it too
for e in ("fgpo", "grpo"):
    r = reg[(e, "out of domain")]
    glue_number(f"reg_{e}_ood", r.gap, signed=True)
    glue_text(f"reg_{e}_ood_ci", fair.interval_text(r.gap, r.low, r.high).split(" ", 1)[1])
lifted = [e for (e, s), r in reg.items() if s == "pooled" and r.low > 0]
not_lifted = [fair.estimator_label(e) for (e, s), r in reg.items() if s == "pooled" and r.low <= 0]
glue_text("not_lifted", " and ".join(not_lifted) if not_lifted else "none")
glue_number("eq1_none", grid.loc["grpo-eq1", "none"])
glue_number("eq1_ent", grid.loc["grpo-eq1", "ent"])
st = load_study(study_dir)
tools_of = st.picks.assign(tools=[bin(int(x)).count("1") for x in st.picks["mask"]]).groupby("method").tools.mean()
glue_number("eq1_tools", tools_of["grpo-eq1"], digits=2)
glue_number("grpo_tools", tools_of["grpo"], digits=2);

# %% [markdown]
# The entropy bonus lifts FGPO by {glue:text}`reg_fgpo` points and GRPO by
# {glue:text}`reg_grpo` pooled; the lift is made in domain ({glue:text}`reg_fgpo_id` for FGPO).
# Out of domain it is undecided: {glue:text}`reg_fgpo_ood` {glue:text}`reg_fgpo_ood_ci` for FGPO
# and {glue:text}`reg_grpo_ood` {glue:text}`reg_grpo_ood_ci` for GRPO. Exceptions: {glue:text}`not_lifted`. Dynamic
# sampling drops every group whose rewards all agree, and on these tables that is most of them
# (most questions are answered alike whatever the tools), so it updates rarely and a
# regularizer has little to act through. GRPO on Eq. 1's reward scores far below with or
# without the bonus ({glue:text}`eq1_none`% and {glue:text}`eq1_ent`% pooled): when a group's
# draws are all right or all wrong, its rewards differ by the tool charge alone, and group
# normalisation turns that into full-size advantages, so it learns to call few tools
# ({glue:text}`eq1_tools` per question against GRPO's {glue:text}`grpo_tools`, in the defaults
# study below). The paper's comparison gives the bonus to FGPO alone; run that way, FGPO leads
# GRPO (the defaults study below).

# %% tags=["remove-input"]
claim("regularization-lifts-fgpo-and-grpo", reg[("fgpo", "pooled")].low > 0 and reg[("grpo", "pooled")].low > 0,
      "the entropy bonus lifts FGPO and GRPO, pooled, a difference each")
claim("eq1-grpo-far-below", max(grid.loc["grpo-eq1", ["none", "ent"]]) < grid.loc["grpo", "none"] - 5
      and tools_of["grpo-eq1"] < tools_of["grpo"], "GRPO on Eq. 1 is far below GRPO on the differential "
      "reward, regularized or not, and calls fewer tools")
claim("lift-mostly-in-domain", reg[("fgpo", "in domain")].gap > reg[("fgpo", "out of domain")].gap
      and reg[("fgpo", "in domain")].low > 0 and reg[("grpo", "in domain")].low > 0,
      "FGPO's lift from regularization is larger in domain than out of domain; in domain it is a difference")
claim("ood-lift-undecided", all(reg[(e, "out of domain")].verdict == "undecided" for e in ("fgpo", "grpo")),
      "out of domain the entropy bonus's lift of FGPO and of GRPO is undecided")

# %% [markdown]
# ## How fast each learns
#
# Does exactness get there sooner, even if no difference is detected at the end? Pooled test accuracy at the kept
# checkpoints, against question visits and against reasoner answers read (a sampled visit
# reads $G = 6$ answers, an exact one 16):

# %% tags=["hide-input"]
LC = [pair["FGPO vs best sampled, ent"][0], pair["FGPO vs best sampled, ent"][1],
      ft.cells.loc[("fgpo", "none"), "method"], ft.cells.loc[("grpo", "none"), "method"]]
LC = list(dict.fromkeys(m.rsplit("-lr", 1)[0] for m in LC))
curves = fair.learning_curves(ft.study, LC)
fig = plot_learning_curves(curves, LC, {m: fair.cell_label(m) for m in LC})
plt.show()
first = curves[curves.step == curves.step.min()].groupby("method").accuracy.mean()
glue_number("lc_first_fgpo", first[LC[0]])
glue_number("lc_first_sampled", first[LC[1]])
glue_number("lc_first_visits", curves.visits[curves.step == curves.step.min()].mean(), digits=0);

# %% [markdown]
# At the first checkpoint ({glue:text}`lc_first_visits` question visits) the regularized
# FGPO scores {glue:text}`lc_first_fgpo`% and the best regularized sampled estimator
# {glue:text}`lc_first_sampled`%. Counted in reasoner answers, the currency of a real
# reward table, the sampled estimators are the cheaper: an exact visit reads all 16.

# %% [markdown]
# ## Dead groups and the signal in a visit
#
# Why does sampling lose so little here? At each cell's trained policy (each seed's kept head,
# {glue:text}`sig_questions` test questions spread over the suites), one GRPO visit of $G = 6$
# draws: how often its group is dead, and its gradient's signal-to-noise ratio, the squared
# length of its mean direction over its variance, on the questions whose rewards differ at all:

# %% tags=["remove-input"]
signal = pd.read_parquet(Path(signal_dir) / "signal.parquet")
sig = fair.signal_summary(signal, {e: fair.estimator_label(e) for e in signal.estimator.unique()})
show(sig, 2, caption="At each trained policy, mean over seeds: one GRPO visit (G = 6, differential reward)")
glue_number("sig_questions", signal.question_id.nunique(), digits=0)
S = sig.set_index(["policy trained by", "regularizer"])
glue_number("dead_grpo_none", S.loc[("GRPO", "none"), "dead groups (%)"])
glue_number("dead_grpo_ent", S.loc[("GRPO", "entropy bonus"), "dead groups (%)"])
glue_number("snr_grpo_none", S.loc[("GRPO", "none"), "median SNR"], digits=2)
glue_number("snr_grpo_ent", S.loc[("GRPO", "entropy bonus"), "median SNR"], digits=2)
live_share = 100 * float(signal.drop_duplicates("question_id").live.mean())
glue_number("live_share", live_share)
od = fair.observed_dead(ft.study, [ft.cells.loc[("grpo", r), "method"] for r in ("none", "ent")])
glue_number("obs_dead_none", od.iloc[0])
glue_number("obs_dead_ent", od.iloc[1]);

# %% [markdown]
# {glue:text}`live_share`% of the test questions have differential rewards that differ
# between subsets at all; on the rest a sampled visit has nothing to learn from (Eq. 1's tool
# charge still teaches FGPO to call fewer tools there). Regularization
# changes what a sampled visit sees: at GRPO's unregularized policy {glue:text}`dead_grpo_none`%
# of its groups are dead and the median SNR is {glue:text}`snr_grpo_none`; with the entropy
# bonus, {glue:text}`dead_grpo_ent`% and {glue:text}`snr_grpo_ent`. While training, GRPO's own
# groups were dead {glue:text}`obs_dead_none`% of the time without a regularizer and
# {glue:text}`obs_dead_ent`% with it. A visit's noise averages out over the epochs; what
# sampling cannot recover is a group that never varies, and the entropy bonus is what keeps
# groups varying.

# %% tags=["remove-input"]
claim("ent-fewer-dead", S.loc[("GRPO", "entropy bonus"), "dead groups (%)"] < S.loc[("GRPO", "none"), "dead groups (%)"]
      and od.iloc[1] <= od.iloc[0], "with the entropy bonus GRPO's groups are dead less often")
claim("ent-more-signal", S.loc[("GRPO", "entropy bonus"), "median SNR"] >= S.loc[("GRPO", "none"), "median SNR"],
      "with the entropy bonus a GRPO visit's median SNR is no lower")

# %% [markdown]
# ## Every estimator at its default settings
#
# The paper's comparison gives each method its own defaults: FGPO with the entropy bonus
# (0.03), the sampled estimators without one. The same study, rates and checkpoints chosen on
# the in-domain dev, FGPO minus each method:

# %% tags=["remove-cell"]
METHODS = st.manifest["config"]["methods"].split(",")
MAIN = [m for m in ("fgpo", "grpo", "grpo-eq1", "rloo", "dapo", "sft", "dpo") if m in METHODS]
LABELS = {m: label(m) for m in METHODS}
train_all = tables["train"]
train_families = set(study_training_table(st, train_all).family)
dom = domain_accuracy(st, tables, MAIN, TEST, train_families, domains)
iv = domain_intervals(st, tables, "fgpo", [m for m in MAIN if m != "fgpo"], TEST, domains)

# %% tags=["remove-input"]
SPL = ("pooled", "in domain", "out of domain")
rows = {}
for m in MAIN + ["BestFixed*"]:
    name = "best fixed subset*" if m == "BestFixed*" else LABELS[m]
    rows[name] = {"accuracy, pooled (%)": dom.loc[m, "pooled"],
                  "tools per question": tools_of[m] if m in tools_of else np.nan}
    if m != "fgpo":
        rows[name].update({f"FGPO − method, {s}": fair.interval_text(iv[(m, s)].gap, iv[(m, s)].low, iv[(m, s)].high)
                           for s in SPL})
show(pd.DataFrame.from_dict(rows, orient="index").rename_axis("method").reset_index(),
     2, caption="Accuracy (%), mean over seeds; tools called per test question, mean over seeds; FGPO's gap "
     "(points) with its 95% interval. * chosen with hindsight on the pooled test questions",
     **{"accuracy, pooled (%)": "{:.1f}"})
for m, k in (("grpo", "grpo"), ("BestFixed*", "best"), ("sft", "sft")):
    for s, sk in zip(SPL, ("", "_id", "_ood")):
        glue_number(f"def_{k}{sk}", iv[(m, s)].gap, signed=True)
        glue_text(f"def_{k}{sk}_ci", fair.interval_text(iv[(m, s)].gap, iv[(m, s)].low, iv[(m, s)].high).split(" ", 1)[1])
glue_number("def_fgpo", dom.loc["fgpo", "pooled"])
best_core = tables["core"].oracle_actions()  # each core question's best subset, as the appendix and reward_table
glue_number("def_empty_opt", 100.0 * float((best_core == 0).mean()));

# %% [markdown]
# With its defaults FGPO leads GRPO by {glue:text}`def_grpo` points {glue:text}`def_grpo_ci`
# ({glue:text}`def_grpo_id` in domain, {glue:text}`def_grpo_ood` out of domain), and the best
# fixed subset, chosen with hindsight, by {glue:text}`def_best` {glue:text}`def_best_ci`. That
# lead is the entropy bonus's, as the fair test shows. SFT and DPO imitate each question's best
# subset (empty on {glue:text}`def_empty_opt`% of `core` questions, the commonest, {doc}`appendix`) and fall far below (FGPO minus SFT: {glue:text}`def_sft`).

# %% tags=["remove-input"]
claim("default-lead-over-grpo", iv[("grpo", "pooled")].gap > 0, "with its defaults FGPO is ahead of GRPO pooled")
claim("imitation-far-below", iv[("sft", "pooled")].low > 5, "SFT is more than 5 points below FGPO")
claim("empty-most-common", np.bincount(best_core).argmax() == 0, "the empty subset is the most common best subset of core")

# %% [markdown]
# ## Out of domain, by kind
#
# Out of domain is not one thing ({doc}`benchmarks`): TF-motif is the regulator family's
# reworded twin, the taxonomy of organisms training never saw has no twin, and some questions
# ask a training family's question about an unseen organism. Each kind's accuracy is in the
# table folded below.

# %% tags=["remove-input", "hide-output"]
CLASS = {"seen family and organism": "training family and organism (in domain)",
         "seen organism asked about": "taxonomy of a training organism (in domain)",
         "twin family": "TF-motif, the regulator family's twin",
         "new family": "taxonomy of an unseen organism",
         "new organism": "training family, unseen organism"}
ca = class_accuracy(st, tables, ["fgpo", "grpo"], {s: questions[s] for s in TEST}, questions["train"]).T
ca = ca.rename(columns={"fgpo": "FGPO (%)", "grpo": "GRPO (%)", "BestFixed*": "best fixed subset* (%)"})
ca = ca.reindex(list(CLASS)).rename(index=CLASS)
show(ca.rename_axis("test questions").reset_index(), caption="Accuracy (%), mean over seeds, by kind of "
     "question; * chosen with hindsight on all the pooled test questions")
glue_number("twin_fgpo", ca.loc[CLASS["twin family"], "FGPO (%)"])
glue_number("twin_best", ca.loc[CLASS["twin family"], "best fixed subset* (%)"])
glue_number("new_fgpo", ca.loc[CLASS["new family"], "FGPO (%)"])
glue_number("new_best", ca.loc[CLASS["new family"], "best fixed subset* (%)"])
glue_number("org_fgpo", ca.loc[CLASS["new organism"], "FGPO (%)"])
glue_number("org_best", ca.loc[CLASS["new organism"], "best fixed subset* (%)"]);

# %% [markdown]
# On the twin FGPO scores {glue:text}`twin_fgpo`% (best fixed subset {glue:text}`twin_best`%),
# on the unseen organisms' taxonomy {glue:text}`new_fgpo`% ({glue:text}`new_best`%), and on
# training families asked of unseen organisms {glue:text}`org_fgpo`% ({glue:text}`org_best`%):
# out of domain the trained selector is within a couple of points of the one subset best with
# hindsight, on every kind.

# %% tags=["remove-input"]
claim("ood-near-best-fixed", all(abs(ca.loc[CLASS[k], "FGPO (%)"] - ca.loc[CLASS[k], "best fixed subset* (%)"]) < 3
                                 for k in ("twin family", "new family", "new organism")),
      "out of domain FGPO is within 3 points of the best fixed subset on every kind of question")

# %% [markdown]
# ## A tool that training never pays for
#
# The pool ends with the regulator family, whose questions the motif scan (T2) decides. The
# same study on the first {glue:text}`first_n_train` training questions, before regulator
# joined, is the counterfactual: what a selector does with a tool its training never rewards.

# %% tags=["remove-input"]
first = load_study(first_pool_dir)
first_families = set(study_training_table(first, train_all).family)
T2 = "motif_scan"
two = {}
for pool, study in (("first pool", first), ("whole pool", st)):
    d = domain_accuracy(study, tables, ["fgpo"], TEST, set(), domains)
    two[pool] = {"T2 called on TF-motif (%)": float(routing(study, tables["core"], "core", "fgpo").loc["tf_motif", T2]),
                 "out of domain (%)": d.loc["fgpo", "out of domain"], "in domain (%)": d.loc["fgpo", "in domain"]}
two = pd.DataFrame(two).T
show(two.rename_axis("FGPO trained on").reset_index(), caption="FGPO, mean over seeds")
glue_number("first_n_train", first.manifest["n_questions"]["train"], digits=0)
glue_number("fp_t2", two.loc["first pool", "T2 called on TF-motif (%)"])
glue_number("wp_t2", two.loc["whole pool", "T2 called on TF-motif (%)"]);

# %% [markdown]
# Trained on the first pool FGPO calls the motif scan on {glue:text}`fp_t2`% of the TF-motif
# questions; on the whole pool, on {glue:text}`wp_t2`%. What a selector carries to an unseen
# family is what its training families paid for, here through the twin.

# %% tags=["remove-input"]
claim("first-pool-drops-t2", two.loc["first pool", "T2 called on TF-motif (%)"] < 10
      and two.loc["whole pool", "T2 called on TF-motif (%)"] > 80,
      "FGPO almost never calls T2 on TF-motif questions when trained on the first pool, mostly on the whole pool")

# %% [markdown]
# ## A larger head, and where each method routes
#
# With a one-hidden-layer MLP head of {glue:text}`mlp_units` units on the same features,
# FGPO minus GRPO (both at their defaults) is {glue:text}`mlp_gap` points
# {glue:text}`mlp_gap_ci`, against {glue:text}`def_grpo` with the linear head. The share of
# `core` questions of each family on which each tool is called (the paper's Figure 4):

# %% tags=["remove-input"]
mlp = load_study(capacity_study)
mlp_iv = domain_intervals(mlp, tables, "fgpo", ["grpo"], TEST, domains)[("grpo", "pooled")]
glue_number("mlp_units", mlp.manifest["config"]["hidden"], digits=0)
glue_number("mlp_gap", mlp_iv.gap, signed=True)
glue_text("mlp_gap_ci", fair.interval_text(mlp_iv.gap, mlp_iv.low, mlp_iv.high).split(" ", 1)[1])
names = tables["core"].names()
rates = {LABELS[m]: routing(st, tables["core"], "core", m).set_axis([f"T{i + 1}" for i in range(len(names))], axis=1)
         .rename(index=family_label) for m in ("sft", "grpo", "fgpo") if m in METHODS}
fig = plot_routing(rates, "Tool calls per family on core (% of questions, mean over seeds)")
plt.show()
glue_text("tool_names", ", ".join(f"T{i + 1} {n.replace('_', ' ')}" for i, n in enumerate(names)));

# %% [markdown]
# The tools: {glue:text}`tool_names`. From each method's kept policy, a GRPO group of six would
# be dead (Eq. 1 classes, the paper's Table 15) with probability {glue:text}`t15_grpo`% at
# GRPO's policy and {glue:text}`t15_fgpo`% at FGPO's. The paper reports
# {glue:text}`paper_t15_grpo`% and {glue:text}`paper_t15_fgpo`%, the other order, because its
# FGPO row is the generation distribution $p_\text{gen}$, not $q$ ({doc}`exact_vs_sampled`
# explains).

# %% tags=["remove-cell"]
core_ids = st.picks[(st.picks.suite == "core") & (st.picks.method == "fgpo") & (st.picks.seed == 0)].question_id
pol = {m: st.q_matrix(m, 0) for m in ("fgpo", "grpo")}
t15 = dead_group_table(pol, tables["core"].select(list(core_ids)).correct, "eq1")
glue_number("t15_grpo", t15.loc["grpo", "G=6"])
glue_number("t15_fgpo", t15.loc["fgpo", "G=6"])
glue_number("paper_t15_grpo", paper.TABLE15.loc["GRPO", "G=6"])
glue_number("paper_t15_fgpo", paper.TABLE15.loc["FGPO", "G=6"]);

# %% tags=["remove-input"]
claim("t15-order-reversed", (t15.loc["grpo", "G=6"] > t15.loc["fgpo", "G=6"])
      != (paper.TABLE15.loc["GRPO", "G=6"] > paper.TABLE15.loc["FGPO", "G=6"]),
      "the dead-group order of GRPO's and FGPO's policies is the paper's reversed")

# %% [markdown]
# `make fair` re-runs the factorial, resumably; {doc}`../book/rerun` lists every command.

