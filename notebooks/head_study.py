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
# The chapter {doc}`exact_vs_sampled` raced the estimators on a synthetic
# table. Here they race on the real one: every training and test question, several seeds.
# What makes this affordable on two CPU cores is the **policy-head selector**: the prompt
# (the question, its options and four anonymous tool slots, exactly what the language-model
# selector reads) is encoded once by a frozen sentence encoder, and only a small head on
# top is trained, one candidate score per subset. Its sampling distribution *is* $q$, so the
# methods differ in one thing only: how a visit turns rewards into a gradient.
#
# The methods are the estimator registry's (`fgpo_core.core.registry`), trained by one loop
# (`fgpo_core.algorithms.loop`) with the same questions, minibatches, visits, optimiser and
# dev-based checkpoint choice:
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
first_pool_dir = "../runs/cpu/study-first-pool"  # the same study on the first 1,000 training questions
study_tables = "../data/tables/cpu/reader"  # the training reader's merged tables, one subfolder per suite
study_features = "../data/features/cpu/minilm"  # cached prompt features (`fgpo features`)
study_bench = "../data/benchmarks/cpu"  # the benchmark both were made from
transfer_tables = "../data/tables/cpu/minilm,../data/tables/cpu/smollm2"  # other readers' tables ("": none)
feature_comparison = "../runs/cpu/study-features"  # one small study per encoder ("": skip)
capacity_study = "../runs/cpu/study-mlp"  # the same study with an MLP head ("": skip)
extra_studies = "../runs/cpu/study-rloo-kl,../runs/cpu/study-grpo-clip"  # new estimators, main settings ("": none)
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
from scipy.stats import ttest_ind

from fgpo_core.book import paper
from fgpo_core.book.chapter import show_source
from fgpo_core.book.claims import claim, glue_number, glue_p, glue_text
from fgpo_core.book.plots import plot_study_accuracy, plot_study_curves, plot_tool_rates, set_style
from fgpo_core.book.plots_page import set_alt
from fgpo_core.core.registry import RLOO_KL
from fgpo_core.core.regularizers import regularizer
from fgpo_core.evaluation.difference import compare
from fgpo_core.evaluation.metrics import dead_group_table, empty_subset_table
from fgpo_core.experiments.domains import SPLITS, domain_accuracy, domain_verdicts, split_masks, study_training_table
from fgpo_core.experiments.study import StudyConfig, load_study, run_study
from fgpo_core.reasoners import REASONER_LABELS
from fgpo_core.reports import extra as xr
from fgpo_core.reports.study import coverage_rows, label, routing, study_baselines, study_scores, study_summary
from fgpo_core.reports.tables import show
from fgpo_core.table import load_tables

# %% tags=["hide-input"]
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
labels = REASONER_LABELS
readers = load_tables({"evidence reader": study_tables,
                       **{labels.get(Path(d).name, Path(d).name): d for d in filter(None, transfer_tables.split(","))}},
                      TEST, expect={"evidence reader": {"reasoner": st.manifest["tables"]["train"]["reasoner"]}})
tables = readers["evidence reader"]

# %% [markdown]
# ## The estimators in code
#
# Each is a function of the candidate scores, the rewards and, for the sampled ones, the
# actions drawn; none knows which selector produced the scores. The exact objective and GRPO's
# group-normalised advantages are quoted in {doc}`exact_vs_sampled`, which walks through the
# others; the tests check GRPO's loss gradient against TRL's own `GRPOTrainer._compute_loss`.

# %% [markdown]
# ## Which frozen features
#
# The head sees nothing but its features. Two frozen encoders come installed with the book's
# packages, the MiniLM sentence encoder and the selector's own base model SmolLM2-135M
# (mean-pooled), and a small FGPO study per encoder compared them on dev.

# %% tags=["hide-input"]
rows = {}
dev_t = load_tables({"r": study_tables}, ["dev"])["r"]
for d in sorted(Path(feature_comparison).iterdir()):
    if (d / "manifest.json").exists():
        fc = load_study(d)
        g = study_scores(fc, dev_t).groupby("method").accuracy
        row = {"training questions": fc.manifest["n_questions"]["train"], "seeds": fc.manifest["config"]["seeds"]}
        for m in g.mean().index:
            row[f"{label(m)} dev accuracy"] = f"{g.mean()[m]:.1f} ± {g.std(ddof=1)[m]:.1f}"
        rows[fc.manifest["features"]["encoder"]] = row
        rows[fc.manifest["features"]["encoder"]]["_fgpo"] = g.apply(list).get("fgpo")
choice = pd.DataFrame(rows).T
enc = {e: np.array(v) for e, v in choice["_fgpo"].items()}
enc_gap = float(enc["smollm2"].mean() - enc["minilm"].mean())
enc_p = float(ttest_ind(enc["smollm2"], enc["minilm"], equal_var=False).pvalue)  # Welch
glue_number("enc_gap", enc_gap, signed=True)
glue_p("enc_p", enc_p);

# %% [markdown]
# SmolLM2's features score {glue:text}`enc_gap` points against MiniLM's, a gap the seeds do
# not separate (Welch's t-test, $p$ = {glue:text}`enc_p`), so the study uses the far cheaper
# MiniLM features.

# %% tags=["remove-input"]
claim("encoders-level", enc_p >= 0.05, "the two encoders' FGPO dev accuracies are not told apart by the seeds")

# %% [markdown]
# ## Training
#
# Every method ran at each rate of a small sweep with every seed; each run kept its head at
# its best dev evaluation, and each method's rate is the one whose kept heads score best on
# dev. The rates chosen, and a run's reward evaluations (sampled methods pay $G$ per visit,
# FGPO $2^n$):

# %% tags=["hide-input"]
sw = st.sweep
chosen = pd.Series(st.manifest["chosen_lr"], name="chosen learning rate")
cost = sw.merge(chosen.rename("lr").rename_axis("method").reset_index(), on=["method", "lr"])
show(pd.concat([chosen.map("{:g}".format),
                cost.groupby("method").reward_evaluations.mean().rename("reward evaluations per run"),
                cost.groupby("method").dev_accuracy.mean().rename("dev accuracy (kept heads, mean)")],
               axis=1).reindex(METHODS).rename(index=LABELS).rename_axis("method"),
     **{"reward evaluations per run": "{:,.0f}"})

# %% [markdown]
# How training went, on dev, against question visits (mean over seeds; the band spans
# the seeds). The dead-group panel is the closed form of Eq. 7 for the *current* policy at
# $G = 6$: how often a GRPO group drawn from it would be dead.

# %% tags=["hide-input"]
MAIN = [m for m in ("fgpo", "grpo", "grpo-eq1", "rloo", "dapo", "sft", "dpo") if m in METHODS]
fig = plot_study_curves(st.dev, MAIN, LABELS, visits_per_epoch=st.manifest["n_questions"]["train"])
plt.show()
obs = st.curves[st.curves.method.isin(["grpo", "grpo-eq1", "rloo", "dapo"])]
if len(obs):
    epoch_len = obs.groupby(["method", "seed"]).step.max().iloc[0] / cfg["epochs"]
    obs = obs.assign(epoch=np.ceil(obs.step / epoch_len).astype(int))
    dead = obs.groupby(["method", "epoch"]).dead_observed.mean().unstack(0)
    glue_number("dead_obs_first", dead.iloc[0]["grpo"])
    glue_number("dead_obs_last", dead.iloc[-1]["grpo"]);

# %% [markdown]
# ## The main table
#
# Every question of the main suite (`core`) and the two cross-domain suites, greedy pick
# of each kept head, accuracy looked up in the evidence reader's table: mean ± standard
# deviation over seeds. The table-only references come from the same questions.

# %% tags=["hide-input"]
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
table2.columns = [f"{c} ({int(scores[scores.suite == c].n.iloc[0]):,} questions)" if c in TEST else c
                  for c in table2.columns]
show(table2.rename_axis("method"), 2, caption="Accuracy (%), mean ± sd over seeds; BestFixed* is the one "
     "subset best on each suite's own test questions, chosen with hindsight (the star), Oracle the best "
     "subset per question")
means = summary[[f"{s} mean" for s in TEST]].set_axis(TEST, axis=1)
sds = scores.groupby(["method", "suite"]).accuracy.std(ddof=1).unstack()[TEST].fillna(0)
fig = plot_study_accuracy(means, sds, base, MAIN, LABELS)
plt.show()
same = {m: 100 * float((P == P[0]).all(0).mean()) for m in METHODS for P in [st.pick_matrix("core", m)[1]]}

# %% [markdown]
# ## In domain and out of domain
#
# The three suites pooled, then split: a question is in domain when its family appears among
# the training questions ({glue:text}`train_family_list`) and it comes from the training
# organisms; families first met at test time ({glue:text}`test_only_list`) and every question
# of the microbe suite, from other organisms, are out of domain
# (`fgpo_core.evaluation.domains.domain_of`). The best fixed subset is the one subset best
# over all the pooled questions, chosen with hindsight:

# %% tags=["hide-input"]
train_all = load_tables({"r": study_tables}, ["train"])["r"]["train"]
train_families = set(study_training_table(st, train_all).family)
glue_text("train_family_list", ", ".join(sorted(train_families)))
glue_text("test_only_list", ", ".join(sorted(set(tables["core"].family) - train_families)))
dom = domain_accuracy(st, tables, MAIN, TEST, train_families)
verdicts = domain_verdicts(st, tables, "fgpo", [m for m in MAIN if m != "fgpo"], TEST, train_families)
shown = dom.drop(index="questions").rename(index={**LABELS, "BestFixed*": "best fixed subset"})
shown.columns = [f"{c} ({int(dom.loc['questions', c]):,})" for c in SPLITS]
show(shown.rename_axis("method"), caption="Accuracy (%), mean over seeds (questions)")


def cell(v):
    mark = "difference" if v.is_difference else "within noise"
    return f"{v.gap:+.1f} ({mark}; p {'< 0.001' if v.p_seeds < 0.001 else f'= {v.p_seeds:.2g}'}, " \
           f"{v.seeds_significant} of {len(v.p_mcnemar)} seeds)"


p_table = pd.DataFrame({split: {("best fixed subset" if m == "BestFixed*" else LABELS[m]): cell(verdicts[(m, split)])
                                for m in [m for m in MAIN if m != "fgpo"] + ["BestFixed*"]} for split in SPLITS})
show(p_table.rename_axis("method"), caption="FGPO minus each method (points): the paired t-test over "
     "seeds, and the seeds whose McNemar test gives p < 0.05")

# %% [markdown]
# ## Adding an estimator
#
# A method is one object in `fgpo_core.core.registry`: its name, label, colour, kind (exact,
# budgeted, sampled or imitation), the reward it trains on, and two functions: `draw`, what a
# visit samples and pays for, and `loss`, the loss of the current scores on that draw (the loop
# may take several optimiser steps per draw). The training loop, the method-name grammar, the
# palettes and this page read nothing else. Every study folder named by this page's parameter
# `extra_studies` trains one more method under the main study's settings (the same questions,
# seeds and grid of learning rates, the rate chosen on dev), and shows up below with no other
# edit ({glue:text}`extra_list`). Each new estimator's loss, the regularizer it composes with
# (if any), and the `register` call that adds it:

# %% tags=["remove-input"]
extras = xr.extra_studies(extra_studies)
EXTRA = list(extras)
glue_text("extra_list", ", ".join(label(m) for m in EXTRA) or "none this time")
quoted = set()
for e in xr.new_estimators(EXTRA):
    reg = regularizer(e.regularizer)
    parts = [show_source(f) for f in (e.loss, reg.penalty) if f is not None and f not in quoted]
    quoted.update((e.loss, reg.penalty))
    display(Markdown(f"**{e.label}**"), *parts, Markdown(f"```python\n{xr.registration(e.name)}\n```"))
claim("extras-trained-alike", not any(xr.settings_differ(st, s) for s in extras.values()),
      "every extra study was trained with the main study's settings, questions and learning rates")

# %% [markdown]
# Each comes with its tests (`tests/test_registry.py`, `tests/test_estimators.py`): RLOO + KL's
# sampled gradient, averaged over many visits, is the exact gradient of RLOO's objective plus the
# KL term; a clipped ratio moves off 1 after a draw's first update and stops the samples that
# left the trust region. On the same test questions as the main table, beside its methods
# (accuracy, and for the sampled ones how their last epoch of training went):

# %% tags=["hide-input"]
if EXTRA:
    studies = {**{m: st for m in MAIN}, **extras}
    x_ids, x_correct, x_suites, x_families = xr.pooled_correct(st, tables, TEST, studies)
    x_masks = split_masks(tables, x_ids, train_families)
    x_acc, x_sd = xr.split_accuracy(x_correct, x_masks), xr.split_accuracy(x_correct, x_masks, sd=True)
    x_last = xr.last_epoch(studies, cfg["epochs"])
    x_gaps = xr.extra_gaps(x_correct, xr.extra_pairs(EXTRA, MAIN), tables, x_ids, train_families, x_suites, x_families)
    x_shown = x_acc.join(x_last.rename(columns={"dead_observed": "dead groups, last epoch (%)",
                                                "entropy": "policy entropy, last epoch (nats)"}))
    show(x_shown.rename(index=label).rename_axis("method"), caption="Accuracy (%, mean over seeds) on the "
         "main table's test questions; for the sampled methods their own draws over the last epoch",
         **{"policy entropy, last epoch (nats)": "{:.2f}"})
    glue_text("extra_findings", xr.findings(x_acc, x_gaps, EXTRA, label))

# %% tags=["hide-input"]
if EXTRA:
    two, shown_methods = ["in domain", "out of domain"], MAIN + EXTRA
    fixed = pd.DataFrame({"suite": two, "method": "BestFixed*", "accuracy": dom.loc["BestFixed*", two].to_numpy()})
    fig = plot_study_accuracy(x_acc[two], x_sd[two], fixed, shown_methods, {m: label(m) for m in shown_methods})
    set_alt(fig, "Two bar charts, in domain and out of domain: test accuracy (%, mean over seeds, with the spread "
            "over seeds) of the main study's methods and of " + ", ".join(label(m) for m in EXTRA) + ", each in "
            "its registry colour, beside a dashed line at the best fixed subset.")
    plt.show()
    show(xr.gap_table(x_gaps, label).rename_axis("comparison"), caption="Each new method minus another "
         "(points), with its 95% paired-bootstrap interval and the book's verdict")

# %% [markdown]
# By the book's rule (a gap is a difference when its 95% interval excludes zero, level only when
# the interval lies within one point): {glue:text}`extra_findings`

# %% tags=["remove-input"]
if "rloo-kl" in EXTRA:
    kl_v = {k: f.set_index("b") for k, f in x_gaps[x_gaps.a == "rloo-kl"].groupby("split")}
    glue_number("kl_weight", RLOO_KL, 2)
    glue_number("kl_acc", x_acc.loc["rloo-kl", "pooled"])
    for key, split in (("", "pooled"), ("_id", "in domain"), ("_ood", "out of domain")):
        glue_number(f"kl_gap{key}", kl_v[split].loc["rloo", "gap"], signed=True)
    glue_number("kl_vs_fgpo", kl_v["pooled"].loc["fgpo", "gap"], signed=True)
    for name, m in (("kl", "rloo-kl"), ("rloo", "rloo")):
        glue_number(f"{name}_dead", x_last.loc[m, "dead_observed"], 0)
        glue_number(f"{name}_entropy", x_last.loc[m, "entropy"], 2)

# %% [markdown]
# The worked example, RLOO with a KL penalty toward the uniform policy at weight
# {glue:text}`kl_weight`, scores {glue:text}`kl_acc`% over all test questions:
# {glue:text}`kl_gap` points ahead of RLOO ({glue:text}`kl_gap_id` in domain), both differences,
# while out of domain ({glue:text}`kl_gap_ood`) the interval cannot tell them apart. Against FGPO
# the gap is {glue:text}`kl_vs_fgpo` points (RLOO + KL minus FGPO), no difference. The telemetry
# says why. Over the last epoch RLOO's policy had an entropy of {glue:text}`rloo_entropy` nats
# and {glue:text}`rloo_dead`% of its groups were dead; the KL term held the entropy at
# {glue:text}`kl_entropy` nats, and only {glue:text}`kl_dead`% of the groups died. A sampled
# estimator that keeps its policy spread keeps its groups alive.

# %% tags=["remove-input"]
if "rloo-kl" in EXTRA:
    claim("kl-beats-rloo", kl_v["pooled"].loc["rloo", "difference"] and kl_v["pooled"].loc["rloo", "gap"] > 0
          and kl_v["in domain"].loc["rloo", "difference"] and kl_v["in domain"].loc["rloo", "gap"] > 0
          and not kl_v["out of domain"].loc["rloo", "difference"],
          "RLOO + KL is ahead of RLOO pooled and in domain, differences, and not told apart out of domain")
    claim("kl-near-fgpo", not kl_v["pooled"].loc["fgpo", "difference"], "RLOO + KL does not differ from FGPO")
    claim("kl-keeps-groups-alive", x_last.loc["rloo-kl", "dead_observed"] < x_last.loc["rloo", "dead_observed"] - 10
          and x_last.loc["rloo-kl", "entropy"] > x_last.loc["rloo", "entropy"],
          "the KL term keeps the policy's entropy higher and fewer groups dead")

# %% [markdown]
# ## A tool that training never pays for
#
# The training pool ends with the regulator family, whose questions the motif scan (T2)
# decides. Before that family joined, no training question paid for T2, while the TF-motif
# family met at test time needs it. The same study on that first pool of
# {glue:text}`first_n_train` questions is the counterfactual: what a selector does with a tool
# its training never rewards.

# %% tags=["hide-input"]
first = load_study(first_pool_dir)
first_families = set(study_training_table(first, train_all).family)
pools = {"first pool": (first, first_families), "whole pool": (st, train_families)}
T2_NAME = "motif_scan"
two = {}
for pool, (study, fams) in pools.items():
    d = domain_accuracy(study, tables, ["fgpo", "grpo"], TEST, fams)
    for m in ("fgpo", "grpo", "BestFixed*"):
        for split in SPLITS:
            two[(pool, split)] = two.get((pool, split), {})
            two[(pool, split)][m] = d.loc[m, split]
    for m in ("fgpo", "grpo"):
        two[(pool, "T2 on TF-motif (%)")] = two.get((pool, "T2 on TF-motif (%)"), {})
        two[(pool, "T2 on TF-motif (%)")][m] = float(routing(study, tables["core"], "core", m).loc["tf_motif", T2_NAME])
two = pd.DataFrame(two).rename(index={**LABELS, "BestFixed*": "best fixed subset"})
show(two.rename_axis("method"), caption="Accuracy (%, mean over seeds) on each pool's splits, and how "
     "often each selector calls the motif scan on core's TF-motif questions")
first_v = domain_verdicts(first, tables, "fgpo", ["grpo"], TEST, first_families)
glue_number("first_n_train", first.manifest["n_questions"]["train"], digits=0)
for pool, key in (("first pool", "fp"), ("whole pool", "wp")):
    glue_number(f"{key}_t2_fgpo", two.loc["FGPO", (pool, "T2 on TF-motif (%)")])
    glue_number(f"{key}_ood_fgpo", two.loc["FGPO", (pool, "out of domain")])
glue_number("fp_ood_best", two.loc["best fixed subset", ("first pool", "out of domain")]);

# %% [markdown]
# Trained on the first pool, FGPO called the motif scan on {glue:text}`fp_t2_fgpo`% of the
# TF-motif questions and scored {glue:text}`fp_ood_fgpo`% out of domain, far below the best
# fixed subset's {glue:text}`fp_ood_best`%: the exact objective had learned, correctly for its
# training questions, that T2 is worth nothing. Trained on the whole pool, it calls T2 on
# {glue:text}`wp_t2_fgpo`% of them and scores {glue:text}`wp_ood_fgpo`%. What a selector
# carries to an unseen family is what its training families paid for.

# %% tags=["remove-input"]
claim("first-pool-fgpo-drops-t2", two.loc["FGPO", ("first pool", "T2 on TF-motif (%)")] < 5
      and first_v[("BestFixed*", "out of domain")].b_better,
      "on the first pool FGPO almost never calls T2 on TF-motif questions and is below the best fixed subset OOD")
claim("whole-pool-fgpo-routes-t2", two.loc["FGPO", ("whole pool", "T2 on TF-motif (%)")] > 80
      and two.loc["FGPO", ("whole pool", "out of domain")] > two.loc["FGPO", ("first pool", "out of domain")],
      "on the whole pool FGPO calls T2 on most TF-motif questions and scores higher out of domain")

# %% [markdown]
# ## A larger head
#
# The same study with a one-hidden-layer MLP head in place of the linear one, for the main
# methods: does more capacity on the same features change the comparison?

# %% tags=["hide-input"]
if capacity_study and (Path(capacity_study) / "manifest.json").exists():
    mlp = load_study(capacity_study)
    units = mlp.manifest["config"]["hidden"]
    cap_methods = [m for m in MAIN if m in set(mlp.picks.method)]
    cap = pd.concat({"linear head": domain_accuracy(st, tables, cap_methods, TEST, train_families),
                     f"MLP head ({units} units)": domain_accuracy(mlp, tables, cap_methods, TEST, train_families)},
                    axis=1).drop(index="questions").rename(index={**LABELS, "BestFixed*": "best fixed subset"})
    mlp_v = domain_verdicts(mlp, tables, "fgpo", ["grpo"], TEST, train_families)
    glue_number("mlp_units", units, 0)
    glue_number("mlp_fgpo", cap.loc["FGPO", (f"MLP head ({units} units)", "pooled")])
    glue_number("mlp_grpo", cap.loc["GRPO", (f"MLP head ({units} units)", "pooled")])
    for k, n in (("pooled", ""), ("in domain", "_id"), ("out of domain", "_ood")):
        glue_number(f"mlp_gap{n}", mlp_v[("grpo", k)].gap, signed=True)
        glue_number(f"lin_gap{n}", verdicts[("grpo", k)].gap, signed=True)

# %% [markdown]
# More capacity widens FGPO's lead. With an MLP head of {glue:text}`mlp_units` units FGPO scores
# {glue:text}`mlp_fgpo`% over all test questions and GRPO {glue:text}`mlp_grpo`%:
# {glue:text}`mlp_gap` points ({glue:text}`mlp_gap_id` in domain, a difference;
# {glue:text}`mlp_gap_ood` out of domain, none), against {glue:text}`lin_gap`
# ({glue:text}`lin_gap_id`, {glue:text}`lin_gap_ood`) with the linear head.

# %% tags=["remove-input"]
claim("mlp-wider-lead", mlp_v[("grpo", "pooled")].a_better and mlp_v[("grpo", "in domain")].a_better
      and not mlp_v[("grpo", "out of domain")].is_difference and mlp_v[("grpo", "pooled")].gap > verdicts[("grpo", "pooled")].gap,
      "with the MLP head FGPO leads GRPO by more than with the linear head, pooled and in domain, level out of domain")

# %% tags=["remove-cell"]
dial = coverage_rows(summary, "core", tables["core"].n_actions)
for k in dial.index:
    glue_number(f"dial_k{k}", dial.loc[k, "accuracy (%)"])
for k, v in paper.COVERAGE_DIAL.items():
    glue_number(f"paper_dial_k{k}", v, digits=2)

# %% [markdown]
# ## What each method routes where
#
# The share of `core` questions of each family on which each tool is called (mean over
# seeds), like the paper's Figure 4. The families `taxonomy` and `tf_motif` never appear in
# training: their routing is what the selector carries over from the families it saw.

# %% tags=["hide-input"]
names = tables["core"].names()
rates = {LABELS[m]: routing(st, tables["core"], "core", m).set_axis([f"T{i + 1}" for i in range(len(names))], axis=1)
         for m in ("sft", "grpo", "dapo", "fgpo") if m in METHODS}
fig = plot_tool_rates(rates, "Tool calls per family on core (% of questions, mean over seeds)")
plt.show()
display(Markdown("T1..T4 = " + ", ".join(f"T{i + 1} {n.replace('_', ' ')}" for i, n in enumerate(names)) + "."))

# %% [markdown]
# ## Dead groups of the trained policies (Table 15)
#
# If GRPO were run from each kept policy, how often would a group be dead? The closed form on
# `core` under Eq. 1's reward classes (the paper's Table 15), for the first seed's kept heads.

# %% tags=["hide-input"]
core_ids = st.picks[(st.picks.suite == "core") & (st.picks.method == METHODS[0]) & (st.picks.seed == 0)].question_id
correct_core = tables["core"].select(list(core_ids)).correct
pol = {"Uniform": np.full(correct_core.shape, 1 / correct_core.shape[1])}
pol.update({LABELS[m]: st.q_matrix(m, 0) for m in MAIN})
t15_shown = dead_group_table(pol, correct_core, "eq1").rename(columns=lambda c: c.replace("=", " = "))
t15_shown.columns.name, t15_shown.index.name = "group size", "policy (first seed's kept head)"
show(t15_shown, caption="Dead groups (%) at each group size G, on core")
t16 = empty_subset_table({LABELS[m]: st.q_matrix(m, 0) for m in MAIN})

# %% [markdown]
# ## Moved to other reasoners
#
# A pick never depends on the reasoner, so the same picks are scored in the other readers'
# tables of the same questions, without retraining (column `n`: the questions each covers).

# %% tags=["hide-input"]
cells, moved = {}, {}
for reader, tabs in readers.items():
    if reader == "evidence reader":
        continue
    sc = study_scores(st, tabs)
    for s, f in sc.groupby("suite"):
        m = f.groupby("method").accuracy.mean()
        vec = {k: f[f.method == k].sort_values("seed").correct_vector.tolist() for k in ("fgpo", "grpo")}
        moved[(reader, s)] = compare(vec["fgpo"], vec["grpo"])
        b = study_baselines(tabs, {s: st.picks[st.picks.suite == s].question_id.unique()}).set_index("method")
        cells[(reader, s)] = {"n": int(f.n.iloc[0]), "no tool": b.loc["No-Tool", "accuracy"],
                              "best fixed subset": b.loc["BestFixed*", "accuracy"],
                              **{LABELS[k]: m[k] for k in MAIN if k in m}}
if cells:
    cells = pd.DataFrame(cells).T
    cells["FGPO − GRPO (points)"] = cells["FGPO"] - cells["GRPO"]
    cells["n"] = cells["n"].astype(int)
    cells.index.names = ["reader", "suite"]
    show(cells, caption="Accuracy (%), mean over seeds, of the same picks in another reader's table")

# %% tags=["remove-cell"]
core_acc = summary["core mean"]
t15 = dead_group_table(pol, correct_core, "eq1")
glue_number("same_fgpo", same["fgpo"])
glue_number("n_seeds", cfg["seeds"], digits=0)
glue_number("paper_gap", paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"], digits=2, signed=True)
glue_number("same_grpo", same["grpo"])
for m in ("fgpo", "grpo", "dapo"):
    for split, key in (("in domain", "id"), ("out of domain", "ood"), ("pooled", "pooled")):
        glue_number(f"{m}_{key}", dom.loc[m, split])
        if m != "fgpo":
            glue_number(f"gap_{m}_{key}", verdicts[(m, split)].gap, signed=True)
glue_number("best_ood", dom.loc["BestFixed*", "out of domain"])
glue_number("best_pooled", dom.loc["BestFixed*", "pooled"])
glue_number("tools_fgpo", tools.loc["fgpo", "core mean"], digits=2)
glue_number("tools_grpo", tools.loc["grpo", "core mean"], digits=2)
glue_number("paper_tools_fgpo", paper.TOOL_ECONOMY["FGPO"], digits=2)
glue_number("paper_tools_grpo", paper.TOOL_ECONOMY["GRPO"], digits=2)

# %% tags=["remove-cell"]
glue_number("dead_grpo", t15.loc["GRPO", "G=6"])
glue_number("dead_fgpo", t15.loc["FGPO", "G=6"])
glue_number("paper_dead_grpo", paper.TABLE15.loc["GRPO", "G=6"])
glue_number("paper_dead_fgpo", paper.TABLE15.loc["FGPO", "G=6"])
glue_number("sft_core", core_acc["sft"])
glue_number("dpo_core", core_acc["dpo"])
glue_number("notool_core", float(base[(base.suite == "core") & (base.method == "No-Tool")].accuracy.iloc[0]))
empty_opt = 100 * float((tables["core"].oracle_actions() == 0).mean())
glue_number("empty_optimal", empty_opt)
glue_number("sft_argmax_empty", t16.loc["SFT", "argmax is empty (%)"])
glue_number("paper_empty_optimal", paper.EMPTY_SUBSET["empty_optimal"])
glue_number("paper_sft_argmax_empty", paper.EMPTY_SUBSET["sft_argmax_empty"])
minilm = {k: v for k, v in moved.items() if k[0] == "zero-shot MiniLM"}
glue_number("moved_largest", max(abs(v.gap) for v in minilm.values()))
glue_number("moved_cells", len(minilm), digits=0)
glue_number("paper_transfer_wins", paper.TRANSFER["fgpo_wins"], digits=0)

# %% [markdown]
# ## What happened, and why
#
# **Exact against sampled.** Pooled over every test question, the exact objective is ahead
# of every sampled estimator of the main table ({glue:text}`gap_grpo_pooled` points over GRPO, a difference by
# the book's rule), and the lead is made in domain: FGPO {glue:text}`fgpo_id`% against
# GRPO's {glue:text}`grpo_id`% ({glue:text}`gap_grpo_id`) and dynamic sampling's
# {glue:text}`dapo_id`% ({glue:text}`gap_dapo_id`), each a difference; the paper's margin
# over GRPO on its benchmark is {glue:text}`paper_gap`. Out of domain they are level: GRPO
# {glue:text}`grpo_ood`%, dynamic sampling {glue:text}`dapo_ood`%, FGPO
# {glue:text}`fgpo_ood`%, and no gap is a difference.

# %% tags=["remove-input"]
sampled = [m for m in ("grpo", "grpo-eq1", "rloo", "dapo") if m in MAIN]
claim("fgpo-beats-sampled-in-domain", all(verdicts[(m, "in domain")].a_better for m in sampled),
      "FGPO beats every sampled estimator in domain")
claim("fgpo-beats-sampled-pooled", all(verdicts[(m, "pooled")].a_better for m in sampled),
      "pooled, FGPO beats every sampled estimator")
claim("sampled-level-out-of-domain", not any(verdicts[(m, "out of domain")].is_difference
                                             for m in ("grpo", "rloo", "dapo")),
      "out of domain FGPO does not differ from GRPO, RLOO or dynamic sampling")

# %% [markdown]
# **Why the split.** In domain a selector can learn which tools each family needs, and the
# exact objective learns it best, leanly ({glue:text}`tools_fgpo` tools per
# question against GRPO's {glue:text}`tools_grpo`; the paper: {glue:text}`paper_tools_fgpo`
# and {glue:text}`paper_tools_grpo`). Out of domain there is no family to have learned from,
# and GRPO's policies, which call nearly every tool, do as well, as does the best fixed
# subset ({glue:text}`best_ood`%). FGPO is also the steadier: its {glue:text}`n_seeds` seeds
# pick the same subset on {glue:text}`same_fgpo`% of core questions, GRPO's on
# {glue:text}`same_grpo`%.

# %% tags=["remove-input"]
claim("fgpo-seeds-agree-more", same["fgpo"] > same["grpo"] + 20,
      "FGPO's seeds agree on the same subset far more often than GRPO's")
claim("fgpo-leaner", tools.loc["fgpo", "core mean"] < tools.loc["grpo", "core mean"], "FGPO calls fewer tools than GRPO")
claim("level-with-best-ood", not verdicts[("BestFixed*", "out of domain")].is_difference,
      "out of domain FGPO and the best fixed subset do not differ")

# %% [markdown]
# **Dead groups.** Run on from its own kept policy, GRPO would draw a dead group of six with
# probability {glue:text}`dead_grpo`%; from FGPO's, {glue:text}`dead_fgpo`%. The paper found the
# reverse order ({glue:text}`paper_dead_grpo`% and {glue:text}`paper_dead_fgpo`%): here GRPO's
# heads are the more concentrated (FGPO's objective carries an entropy bonus, and RLOO + KL
# above shows what a spread policy does for groups). GRPO trains on mostly dead groups:
# {glue:text}`dead_obs_first`% of its groups were dead in its first epoch,
# {glue:text}`dead_obs_last`% in its last.

# %% tags=["remove-input"]
claim("grpo-more-dead-than-fgpo", t15.loc["GRPO", "G=6"] > t15.loc["FGPO", "G=6"],
      "GRPO's kept policy has more dead groups at G = 6 than FGPO's")
claim("grpo-mostly-dead", dead.iloc[-1].get("grpo", 0) > 50, "GRPO's own draws are mostly dead groups by the last epoch")

# %% [markdown]
# **The coverage dial.** Evaluating only $k$ of the 16 subsets per visit (the paper's
# Figure 1c) gives {glue:text}`dial_k2`%, {glue:text}`dial_k4`% and {glue:text}`dial_k8`% on
# core at $k$ = 2, 4 and 8, against FGPO's {glue:text}`dial_k16`%, and none differs from FGPO
# by the book's rule; the paper's rose with $k$ ({glue:text}`paper_dial_k2`% to
# {glue:text}`paper_dial_k16`%).

# %% tags=["remove-input"]
dial_v = {m: compare(scores[(scores.method == "fgpo") & (scores.suite == "core")].sort_values("seed").correct_vector.tolist(),
                     scores[(scores.method == m) & (scores.suite == "core")].sort_values("seed").correct_vector.tolist())
          for m in METHODS if m.startswith("fgpo-k") and m != "fgpo-k1"}
claim("dial-flat", not any(v.is_difference for v in dial_v.values()),
      "no coverage k >= 2 differs from FGPO on core")

# %% [markdown]
# **Offline imitation.** SFT ({glue:text}`sft_core`% on core) and DPO ({glue:text}`dpo_core`%)
# fall far below both RL methods, towards No-Tool's {glue:text}`notool_core`%: the empty
# subset is reward-optimal on {glue:text}`empty_optimal`% of core questions, and imitation
# learns the table's most frequent target (SFT's argmax is empty on
# {glue:text}`sft_argmax_empty`%; the paper: {glue:text}`paper_empty_optimal`% and
# {glue:text}`paper_sft_argmax_empty`%).

# %% tags=["remove-input"]
claim("imitation-low", max(core_acc["sft"], core_acc["dpo"]) < min(core_acc["fgpo"], core_acc["grpo"]) - 5,
      "SFT and DPO are well below FGPO and GRPO on core")

# %% [markdown]
# **Another reader.** Moved without retraining to the zero-shot MiniLM reader, FGPO and GRPO are
# level: the largest gap over its {glue:text}`moved_cells` suites is
# {glue:text}`moved_largest` points and none is a difference, where the paper's FGPO won all
# {glue:text}`paper_transfer_wins` of its transfer cells. A weak reader that barely uses the
# evidence cannot reward a better choice of evidence. SmolLM2-135M's table covers too few
# questions to weigh.

# %% tags=["remove-input"]
claim("moved-level", all(not v.is_difference for v in minilm.values()) and len(minilm) > 0,
      "moved to MiniLM, FGPO and GRPO do not differ on any suite")

# %% [markdown]
# ## Re-running it
#
# ```bash
# .venv/bin/fgpo features --encoder minilm --out data/features/cpu/minilm   # once: the frozen prompt features
# .venv/bin/fgpo study --out-dir runs/cpu/study                              # every method x seed x rate (resumable)
# ```
#
# `fgpo study --help` lists its settings.

# %% tags=["remove-input"]
print(paper.CITATION)
