# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
# ---

# %% [markdown]
# # Past enumeration
#
# FGPO's argument rests on one fact about this problem: the $2^n$ subsets of a small tool
# library are few enough to score. The paper names where that stops (its conclusion): larger
# libraries "may require adaptively constructed compact candidate sets, retaining exact
# optimization within each set". This chapter builds such a library, 8 and then 12 real tools,
# and measures what exact optimisation inside a **shortlist** of subsets buys, against exact
# FGPO over every subset and against GRPO over the whole space, with every method charged the
# reasoner calls it causes.
#
# Two facts shape what follows.
#
# * **A larger library has distractors.** Most new tools say little about most questions, and
#   a reader shown everything can do worse. The tables measure it.
# * **This book's reader is cheap to ask about many subsets; the paper's is not.** The
#   evidence reader adds one score per tool block (a product of experts), so one pass over a
#   question's $n + 1$ blocks gives its answer for all $2^n$ subsets
#   (`fgpo_core.table.fusion`). The paper's 7B reasoner reads the whole prompt, so each
#   (question, subset) pair is a call. Every method below is therefore **charged** the distinct
#   pairs whose reward it read, as that reasoner would bill them (a shared cache: each pair
#   once). The fused table stands in for that reasoner: a method reads its rewards there and is
#   charged for each pair it reads; the whole table is the ground truth it is measured against.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
larger_eight = "../runs/cpu/larger-eight"  # a finished `fgpo study --methods larger` on 8 tools ("": train a small one)
larger_twelve = "../runs/cpu/larger-twelve"  # the same on 12 tools ("": train a small one)
larger_tables = "../data/tables/cpu"  # holds reader/ (4 tools), reader-eight/ and reader-twelve/ (views of the block scores)
larger_features = "../data/features/cpu"  # holds minilm-eight/ and minilm-twelve/ (`fgpo features --n-tools`)
larger_bench = "../data/benchmarks/cpu"  # the benchmark all of them were made from
larger_questions = 0  # training, dev and test questions of the small studies (0: the committed studies)
larger_seeds = 1  # seeds of the small studies
larger_epochs = 3  # their epochs

# %% tags=["remove-input"]
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from fgpo_core.algorithms.head import shortlist_grow, shortlist_top
from fgpo_core.book import paper
from fgpo_core.book.chapter import show_source
from fgpo_core.book.claims import claim, fmt_number, fmt_p, glue_number, glue_text
from fgpo_core.book.plots import plot_budget, plot_shortlist_coverage, set_style
from fgpo_core.core.dead_groups import dead_group_probability
from fgpo_core.core.estimators import fgpo_loss
from fgpo_core.experiments.ablation_report import verdicts
from fgpo_core.experiments.larger_report import (budget_table, dead_by_epoch, library_rows, nearest_budget,
                                                 seen_by_epoch, tool_effects)
from fgpo_core.experiments.domains import SPLITS, domain_accuracy, domain_verdicts, split_scores, study_training_table
from fgpo_core.experiments.study import StudyConfig, load_study, run_study
from fgpo_core.experiments.study_report import label, study_scores
from fgpo_core.genomics.tools.registry import make_tool
from fgpo_core.table import load_table

set_style()
warnings.filterwarnings("ignore")
TABLES, FEATURES = Path(larger_tables), Path(larger_features)
FOLDERS = {8: ("reader-eight", "minilm-eight", larger_eight), 12: ("reader-twelve", "minilm-twelve", larger_twelve)}
SMALL = {8: "fgpo,grpo,fgpo-k16,shortlist-top16,shortlist-grow16", 12: "fgpo,grpo,shortlist-top16,shortlist-grow16"}
studies = {}
for n, (tables_name, features_name, folder) in FOLDERS.items():
    if not folder:  # only when no study is given: a small study of each size, trained now
        folder = tempfile.mkdtemp(prefix=f"fgpo-larger-{n}-")
        run_study(StudyConfig(methods=SMALL[n], seeds=larger_seeds, epochs=larger_epochs, lrs="3e-2", suites="core",
                              n_train=larger_questions, train_spread=True, n_dev=larger_questions,
                              n_test=larger_questions,
                              table_dir=str(TABLES / tables_name), features_dir=str(FEATURES / features_name),
                              bench_dir=larger_bench, out_dir=folder), progress=False)
    studies[n] = load_study(folder)
tables = {4: load_table(TABLES / "reader" / "core")}
tables.update({n: load_table(TABLES / FOLDERS[n][0] / "core") for n in FOLDERS})
ids = studies[12].picks[studies[12].picks.suite == "core"].question_id.unique()
core = {n: t.select(list(ids)) for n, t in tables.items()}  # the test questions every study picked on
n_train = studies[8].manifest["n_questions"]["train"]


def show(df, digits=1, **formats):
    """A table as a reader sees it: rounded, a dash where a value is missing."""
    display(df.style.format(precision=digits, na_rep="–", thousands=",", formatter=formats or None)
            .set_table_styles([{"selector": "th, td", "props": "padding: 0.1em 0.7em"}]))


glue_number("pe_n_train", n_train, 0)
train_pool = load_table(TABLES / "reader" / "train")
train_families = set(study_training_table(studies[8], train_pool).family)
claim("larger-spread-pool", all(st.manifest["config"].get("train_spread") for st in studies.values())
      and train_families == set(train_pool.family),
      "the larger libraries' studies trained on questions spread over the whole pool, every family");
glue_text("pe_train_families", ", ".join(sorted(train_families)))
glue_number("pe_n_test", len(ids), 0)
glue_number("pe_n_id", int(np.isin(core[12].family, list(train_families)).sum()), 0)
glue_number("pe_n_ood", int((~np.isin(core[12].family, list(train_families))).sum()), 0)
glue_text("pe_seeds", f"{studies[8].manifest['config']['seeds']} seeds at 8 tools and "
                      f"{studies[12].manifest['config']['seeds']} at 12");

# %% [markdown]
# Each study trains on {glue:text}`pe_n_train` training questions spread evenly over the
# pool, so every training family is in it ({glue:text}`pe_train_families`), and is tested on
# the same {glue:text}`pe_n_test` `core` questions, {glue:text}`pe_seeds`. Accuracies are
# given pooled and split: in domain, the {glue:text}`pe_n_id` questions of families seen in
# training, and out of domain, the {glue:text}`pe_n_ood` of the two families first met at
# test time (taxonomy and TF motifs). A gap between two methods is called a **difference**
# only by the book's one rule (`fgpo_core.evaluation.difference`): on the same questions, a
# paired t-test over seeds gives p < 0.05 *and* the question-by-question McNemar test gives
# p < 0.05 in at least half of the seeds.
#
# ## Twelve tools
#
# The first four are the book's library (chapter "The tool library"), homology is the
# appendix's fifth; the other seven are new here. Each runs once per question through the same
# library and renderer; the 8-tool library is the first four and the first four new ones.

# %% tags=["remove-input"]
names = tables[12].names()
show(pd.DataFrame({"slot": [f"T{i + 1}" for i in range(len(names))],
                   "in the 8-tool library": ["yes" if nm in tables[8].names() else "no" for nm in names],
                   "what it is": [make_tool(nm).title for nm in names]}, index=pd.Index(names, name="tool")))

# %% [markdown]
# ## What more tools do to the reader
#
# The reference points of each library on the same test questions, and what an exhaustive
# training table costs a whole-prompt reasoner: $2^n$ calls per training question.

# %% tags=["remove-input"]
lib = library_rows(core, n_train)
show(lib.rename(columns={"no_tool": "No-Tool (%)", "all_tools": "All-Tools (%)", "best_fixed": "best fixed (%)",
                         "oracle": "oracle (%)", "table_calls": f"exhaustive table calls ({n_train:,} questions)"}), 1)
for n in (4, 12):
    for c in ("oracle", "best_fixed", "all_tools"):
        glue_number(f"pe_{c}_{n}", lib.loc[n, c])
glue_number("pe_all_gap", lib.loc[12, "best_fixed"] - lib.loc[12, "all_tools"])
eff = tool_effects(core[12])
neg = eff[eff.marginal < 0].sort_values("marginal")
glue_number("pe_n_neg", len(neg), 0)
glue_text("pe_neg", ", ".join(neg.index))
glue_number("pe_expert", eff.loc["expert", "marginal"], signed=True)
glue_number("pe_motif", eff.loc["motif_scan", "marginal"], signed=True)
glue_number("pe_others_max", eff.drop(["expert", "motif_scan"]).marginal.abs().max())
glue_number("pe_expert_hurts", eff.loc["expert", "hurts"]);

# %% [markdown]
# More tools give more ways to be right and more ways to be misled. From 4 to 12 tools the
# oracle (the best subset for each question, chosen with hindsight) rises from
# {glue:text}`pe_oracle_4`% to {glue:text}`pe_oracle_12`%, and the best fixed subset barely
# moves ({glue:text}`pe_best_fixed_4`% → {glue:text}`pe_best_fixed_12`%), while All-Tools falls
# from {glue:text}`pe_all_tools_4`% to {glue:text}`pe_all_tools_12`%,
# {glue:text}`pe_all_gap` points below the best fixed subset: showing the reader everything
# costs accuracy. The room a selector could use grows with the library; the room a fixed
# policy can use does not.
#
# Each tool's effect, from the 12-tool table alone: its accuracy alone, the mean change from
# adding it to a subset that lacks it (over all $2^{11}$ such subsets), and how often that
# addition turns a wrong answer right or a right one wrong. Two tools carry the library, the
# expert ({glue:text}`pe_expert` points on average) and the motif scan
# ({glue:text}`pe_motif`); no other moves accuracy by more than
# {glue:text}`pe_others_max` points on average, and {glue:text}`pe_n_neg` of them lower it
# ({glue:text}`pe_neg`). Every tool helps on some pairs and hurts on others; even the expert
# turns a right answer wrong on {glue:text}`pe_expert_hurts`% of pairs.

# %% tags=["remove-input"]
claim("more_tools", lib.loc[12, "oracle"] > lib.loc[4, "oracle"] + 5 and lib.loc[12, "all_tools"] < lib.loc[4, "all_tools"]
      and abs(lib.loc[12, "best_fixed"] - lib.loc[4, "best_fixed"]) < 2,
      "from 4 to 12 tools the oracle rises, All-Tools falls and the best fixed subset barely moves")
claim("two_tools", set(eff.marginal.nlargest(2).index) == {"expert", "motif_scan"}
      and eff.drop(["expert", "motif_scan"]).marginal.abs().max() < 3 and len(neg) >= 3
      and (eff.helps > 0).all() and (eff.hurts > 0).all(),
      "the expert and motif scan carry the library; several tools lower accuracy; every tool helps and hurts somewhere");

# %% tags=["remove-input"]
show(eff[["alone", "marginal", "helps", "hurts"]].rename(columns={
    "alone": "alone (%)", "marginal": "mean change when added (points)", "helps": "wrong → right (% of pairs)",
    "hurts": "right → wrong (% of pairs)"}), 1)

# %% [markdown]
# ## The shortlists
#
# A shortlist is a per-question set of $K$ subsets, rebuilt from the current policy at every
# epoch; inside it the objective is FGPO's, exact: $q$ renormalised on the set and the
# expectation taken over all of it (the `mask` of `fgpo_loss`, the same code as the coverage
# dial). Two constructions. **Top**: the policy's most likely subsets plus a few uniform draws,
# so the set keeps exploring.

# %% tags=["remove-input"]
display(show_source(shortlist_top))

# %% [markdown]
# **Grow**: greedy growth through the subset lattice. It starts from the empty subset and the
# single tools, then keeps the best two subsets found so far (by the rewards already paid for)
# and adds their one-tool neighbours. It reads no reward outside the set it has already paid for.

# %% tags=["remove-input"]
display(show_source(shortlist_grow))
display(show_source(fgpo_loss, drop_docstring=True))

# %% [markdown]
# Beside them, the **coverage dial** (FGPO on $k$ subsets drawn uniformly at every visit) and
# **GRPO** with $G = 6$ draws from $q$ over the whole space, for 20 epochs and, to buy more
# reasoner calls, for 40 and 80. Every method trains the same linear head on the same frozen
# features, questions and order, with a learning rate chosen on dev per method
# (chapter "Exact versus sampled on the real tables").
#
# ## Accuracy against reasoner calls
#
# Each method's test accuracy (pooled; mean ± sd over seeds) against the distinct (question,
# subset) pairs its training read, per training question. The dashed line is $2^n$: the exhaustive
# table.

# %% tags=["remove-input"]
scores, budgets, V, VG, VB, BF = {}, {}, {}, {}, {}, {}
for n, st in studies.items():
    scores[n] = split_scores(st, {"core": core[n]}, ["core"], train_families)
    budgets[n] = budget_table(st, scores[n], suite="pooled")
    for sp in SPLITS[1:]:
        budgets[n][sp] = budget_table(st, scores[n], suite=sp).accuracy
    V[n] = {sp: verdicts(scores[n], "fgpo", list(budgets[n].index), suite=sp) for sp in SPLITS}
    VG[n] = {m: verdicts(scores[n], r, [m], suite="pooled").iloc[0].to_dict() | {"rival": r} for m in budgets[n].index
             if (r := nearest_budget(budgets[n], m, "grpo")) is not None}
    VB[n] = domain_verdicts(st, {"core": core[n]}, "fgpo", [], ["core"], train_families)  # FGPO − BestFixed*
    BF[n] = domain_accuracy(st, {"core": core[n]}, [], ["core"], train_families).loc["BestFixed*"]
fig = plot_budget(budgets, {n: float(core[n].ceilings()["no_tool"]) for n in budgets})
plt.show()

# %% [markdown]
# The same numbers, pooled and split (the best fixed subset is chosen with hindsight on these
# test questions, so it reads no training rewards):

# %% tags=["remove-input"]
def accuracy_view(n):
    b = budgets[n].set_index("label")[["calls_per_question", "accuracy", *SPLITS[1:], "accuracy_sd", "tools"]]
    b.loc["best fixed subset"] = [np.nan, BF[n]["pooled"], BF[n]["in domain"], BF[n]["out of domain"], np.nan,
                                  np.nan]
    return b.rename(columns={"calls_per_question": "calls per training question", "accuracy": "pooled (%)",
                             "in domain": "in domain (%)", "out of domain": "out of domain (%)",
                             "accuracy_sd": "sd over seeds (pooled)", "tools": "tools per question"})


show(pd.concat({f"{n} tools": accuracy_view(n) for n in budgets}, names=["library", "method"]), 1)

# %% [markdown]
# Each method against exact FGPO on each split, and against the GRPO run nearest to it in
# reasoner calls (pooled): the row's method minus the rival, in points; \* marks a
# difference by the rule. The p-values are in the table after it.

# %% tags=["remove-input"]
def gap_text(v):
    return fmt_number(v["gap (points)"], 1, signed=True) + ("\u00a0*" if v["difference"] else "")


def tests_view(n, p=False):
    rows = {}
    for m in budgets[n].index:
        row = {}
        for sp in SPLITS:
            ok = m in V[n][sp].index
            row[f"vs exact FGPO, {sp}"] = (fmt_p(V[n][sp].loc[m, "p over seeds"]) if p else gap_text(V[n][sp].loc[m])) \
                if ok else "–"
        if m in VG[n]:
            epochs = VG[n][m]["rival"].replace("grpo-e", "").replace("grpo", "20")
            row["vs nearest GRPO"] = (fmt_p(VG[n][m]["p over seeds"]) if p
                                      else f"{gap_text(VG[n][m])} ({epochs}\u00a0ep.)")
        else:
            row["vs nearest GRPO"] = "–"
        rows[label(m)] = row
    bf = {}
    for sp in SPLITS:
        v = VB[n][("BestFixed*", sp)]
        bf[f"vs exact FGPO, {sp}"] = fmt_p(v.p_seeds) if p else gap_text({"gap (points)": -v.gap,
                                                                          "difference": v.is_difference})
    rows["best fixed subset"] = bf | {"vs nearest GRPO": "–"}
    return pd.DataFrame(rows).T


show(pd.concat({f"{n} tools": tests_view(n) for n in studies}, names=["library", "method"]))

# %% [markdown]
# The p-values of the paired t-test over seeds behind those marks:

# %% tags=["remove-input"]
show(pd.concat({f"{n} tools": tests_view(n, p=True) for n in studies}, names=["library", "method"]))


# %% tags=["remove-input"]
B8, B12 = budgets[8], budgets[12]
glue_number("pe_f8", B8.loc["fgpo", "accuracy"])
glue_number("pe_f8_sd", B8.loc["fgpo", "accuracy_sd"])
glue_number("pe_f12", B12.loc["fgpo", "accuracy"])
glue_number("pe_f12_sd", B12.loc["fgpo", "accuracy_sd"])
for n, B in ((8, B8), (12, B12)):
    others = B.drop("fgpo")
    glue_number(f"pe_lo_{n}", others.accuracy.min())
    glue_number(f"pe_hi_{n}", others.accuracy.max())
    glue_number(f"pe_calls_{n}", 2 ** n, 0)
glue_number("pe_top16_8", B8.loc["shortlist-top16", "accuracy"])
glue_number("pe_top16_8_share", 100 * B8.loc["shortlist-top16", "calls_per_question"] / 2 ** 8, 0)
glue_number("pe_top64_12", B12.loc["shortlist-top64", "accuracy"])
glue_number("pe_top64_12_share", 100 * B12.loc["shortlist-top64", "calls_per_question"] / 2 ** 12, 0)
glue_number("pe_grpo12_calls", B12.loc["grpo", "calls_per_question"])
glue_number("pe_grpo12", B12.loc["grpo", "accuracy"])
glue_number("pe_g4_12_gap", -V[12].loc["shortlist-grow4", "gap (points)"])
glue_number("pe_g16_12", B12.loc["shortlist-grow16", "accuracy"])
glue_number("pe_g16_12_tools", B12.loc["shortlist-grow16", "tools"], 2)
glue_number("pe_expert_alone", eff.loc["expert", "alone"])
diff8 = V[8].index[V[8].difference].tolist()
diff12 = V[12].index[V[12].difference].tolist()
grpo_diff = {n: [m for m, v in VG[n].items() if v["difference"]] for n in VG}
glue_text("pe_g16_rival", label(VG[12]["shortlist-grow16"]["rival"]))
glue_number("pe_g16_rival_gap", -VG[12]["shortlist-grow16"]["gap (points)"]);

# %% [markdown]
# **At 8 tools** exact FGPO reaches {glue:text}`pe_f8`% (sd {glue:text}`pe_f8_sd`) for
# {glue:text}`pe_calls_8` reasoner calls per training question, and every other method lands
# between {glue:text}`pe_lo_8`% and {glue:text}`pe_hi_8`%: none differs from exact FGPO by the
# rule. The top shortlist of 16 reaches {glue:text}`pe_top16_8`% for
# {glue:text}`pe_top16_8_share`% of the calls, and GRPO reads far fewer still.
#
# **At 12 tools** exact FGPO reaches {glue:text}`pe_f12`% (sd {glue:text}`pe_f12_sd`) for
# {glue:text}`pe_calls_12` calls per training question; the others land between
# {glue:text}`pe_lo_12`% and {glue:text}`pe_hi_12`%. The top shortlist of 64 reaches
# {glue:text}`pe_top64_12`% for {glue:text}`pe_top64_12_share`% of the calls, and GRPO
# {glue:text}`pe_grpo12`% reading {glue:text}`pe_grpo12_calls` pairs per question; neither is a
# difference. The one method that falls behind exact FGPO is the smallest grow shortlist
# ($K = 4$, {glue:text}`pe_g4_12_gap` points, a difference), and the next one, $K = 16$, is
# the clearest case of why: it ends at {glue:text}`pe_g16_12`% with
# {glue:text}`pe_g16_12_tools` tools per question, the expert alone on every question (the
# expert alone scores {glue:text}`pe_expert_alone`%). Against the GRPO run nearest in calls,
# only that shortlist loses ({glue:text}`pe_g16_rival_gap` points behind
# {glue:text}`pe_g16_rival`, a difference); no method beats GRPO at either size.
#
# So on this reader exactness over a large library buys nothing we can measure: a shortlist
# holding a few percent of the table matches exhaustive FGPO, as the paper's conjecture hoped,
# but so does GRPO, at a fraction of the shortlist's cost. Both fit the tool effects above:
# with two tools carrying the library, any method that finds a subset holding the
# expert and, often, the motif scan has most of what there is to find.

# %% tags=["remove-input"]
claim("none_differ_8", not diff8, "no method differs from exact FGPO at 8 tools")
claim("only_grow4_12", diff12 == ["shortlist-grow4"] and V[12].loc["shortlist-grow4", "gap (points)"] < 0,
      "at 12 tools only the grow shortlist of 4 differs from exact FGPO, behind it")
claim("grow16_expert", abs(B12.loc["shortlist-grow16", "tools"] - 1) < 0.01
      and abs(B12.loc["shortlist-grow16", "accuracy"] - eff.loc["expert", "alone"]) < 0.15,
      "the grow shortlist of 16 at 12 tools ends on the expert alone")
claim("vs_grpo", grpo_diff[8] == [] and grpo_diff[12] == ["shortlist-grow16"]
      and VG[12]["shortlist-grow16"]["gap (points)"] < 0,
      "against the nearest GRPO only the grow shortlist of 16 at 12 tools differs, behind it")
claim("cheap_shortlists", B8.loc["shortlist-top16", "calls_per_question"] < 0.5 * 2 ** 8
      and B12.loc["shortlist-top64", "calls_per_question"] < 0.2 * 2 ** 12
      and B12.loc["grpo", "calls_per_question"] < B12.loc["shortlist-top64", "calls_per_question"] / 10,
      "the shortlists read a fraction of the table and GRPO a fraction of the shortlists");

# %% [markdown]
# ### More GRPO epochs do not buy more of the table

# %% tags=["remove-input"]
lr = {n: st.manifest["chosen_lr"] for n, st in studies.items()}
gcalls = {n: {e: budgets[n].loc[m, "calls_per_question"] for e, m in ((20, "grpo"), (40, "grpo-e40"), (80, "grpo-e80"))}
          for n in studies}
for n in studies:
    for e in (20, 40, 80):
        glue_number(f"pe_gc_{n}_{e}", gcalls[n][e])
glue_text("pe_lr8_20", f"{lr[8]['grpo']:g}")
glue_text("pe_lr8_40", f"{lr[8]['grpo-e40']:g}")
dead = {n: dead_by_epoch(st) for n, st in studies.items()}
g20 = {n: dead[n]["grpo"].dropna() for n in studies}
glue_number("pe_dead8_first", g20[8].iloc[0], 0)
glue_number("pe_dead8_last", g20[8].iloc[-1], 0);

# %% [markdown]
# GRPO pays only for the pairs it draws, and how many distinct pairs it draws is set by how
# fast its policy concentrates, not by how long it trains. At 8 tools the 20-epoch run read
# {glue:text}`pe_gc_8_20` distinct pairs per training question and the 80-epoch run, at the
# same learning rate, {glue:text}`pe_gc_8_80`: four times the visits, almost no new pairs.
# The 40-epoch run read only {glue:text}`pe_gc_8_40`: its learning rate, chosen on dev, was
# {glue:text}`pe_lr8_40` against {glue:text}`pe_lr8_20`, so it concentrated sooner and redrew
# what it had already paid for. At 12 tools the three runs read {glue:text}`pe_gc_12_20`,
# {glue:text}`pe_gc_12_40` and {glue:text}`pe_gc_12_80`. Once concentrated, its groups are
# dead (see "Dead groups" below): at 8 tools {glue:text}`pe_dead8_first`% of them in the first epoch,
# {glue:text}`pe_dead8_last`% by the twentieth.

# %% tags=["remove-input"]
claim("grpo_epochs_8", abs(gcalls[8][80] - gcalls[8][20]) < 0.1 * gcalls[8][20] and lr[8]["grpo-e80"] == lr[8]["grpo"]
      and gcalls[8][40] < gcalls[8][20] and lr[8]["grpo-e40"] > lr[8]["grpo"],
      "at 8 tools 80 epochs read about as many pairs as 20 at the same rate; 40 epochs, at a higher rate, fewer")
claim("grpo_epochs_12", max(gcalls[12].values()) < 1.5 * min(gcalls[12].values()),
      "at 12 tools the three GRPO runs read about as many pairs")
claim("grpo_dead_rises", g20[8].iloc[-1] > g20[8].iloc[0] + 20, "GRPO's dead groups rise over training at 8 tools");

# %% [markdown]
# ## What the shortlist sees
#
# The share of training visits whose evaluated subsets held one of the question's
# Eq. 1-optimal subsets, epoch by epoch (exact FGPO: always). A shortlist can only move mass
# onto what it holds.

# %% tags=["remove-input"]
seen = {n: seen_by_epoch(st) for n, st in studies.items()}
fig = plot_shortlist_coverage(seen, label, last_epoch=20)
plt.show()
last = {n: s.loc[20] for n, s in seen.items()}
grow = [m for m in seen[8].columns if m.startswith("shortlist-grow")]
top = [m for m in seen[8].columns if m.startswith("shortlist-top")]
glue_number("pe_grow_seen_lo", min(last[n][grow].min() for n in last), 0)
glue_number("pe_top_seen_hi", max(last[n][top].max() for n in last), 0)
glue_text("pe_grow_tools", f"{min(budgets[n].loc[grow, 'tools'].min() for n in budgets):.1f}–"
                           f"{max(budgets[n].loc[grow, 'tools'].max() for n in budgets):.1f}");

# %% [markdown]
# In the last epoch the grow shortlists held a best subset on at least
# {glue:text}`pe_grow_seen_lo`% of visits, the top shortlists on at most
# {glue:text}`pe_top_seen_hi`%; yet the grow shortlists are not the more accurate. A best
# subset under Eq. 1 is the right answer with the fewest tools, and the grow construction,
# which starts from the empty subset and single tools, finds those small subsets and settles
# on them ({glue:text}`pe_grow_tools` tools per question). Holding the Eq. 1 optimum of each
# training question is not the same as finding a subset that generalises.

# %% tags=["remove-input"]
claim("seen_vs_acc", min(last[n][grow].min() for n in last) > max(last[n][top].max() for n in last)
      and all(budgets[n].loc[grow, "tools"].max() < budgets[n].loc[top, "tools"].min() for n in budgets),
      "the grow shortlists hold best subsets far more often, with fewer tools, than the top ones");

# %% [markdown]
# ## Dead groups
#
# How often a GRPO group of six is dead (all rewards equal, every advantage zero) under the
# uniform policy, by the closed form of Eq. 7 on the test questions, under the reward classes
# of Eq. 1 and of the differential reward GRPO trains on here; and what GRPO's own draws found
# during training (its 20-epoch run).

# %% tags=["remove-input"]
def uniform_dead(t, kind):
    return 100 * float(dead_group_probability(np.full(t.correct.shape, 1 / t.n_actions), t.rewards(kind), 6).mean())


rows = {}
for n, t in core.items():
    rows[n] = {"uniform, Eq. 1 classes (%)": uniform_dead(t, "eq1"),
               "uniform, differential classes (%)": uniform_dead(t, "differential")}
    if n in g20:
        rows[n].update({"GRPO, first epoch (%)": g20[n].iloc[0], "GRPO, last epoch (%)": g20[n].iloc[-1]})
dead_t = pd.DataFrame(rows).T.rename_axis("tools")
show(dead_t, 1)
glue_number("pe_dead_eq1_max", dead_t["uniform, Eq. 1 classes (%)"].max())
glue_text("pe_dead_diff", f"{dead_t['uniform, differential classes (%)'].min():.0f}–"
                          f"{dead_t['uniform, differential classes (%)'].max():.0f}")
glue_number("pe_dead12_first", g20[12].iloc[0], 0)
glue_number("pe_dead12_last", g20[12].iloc[-1], 0);

# %% [markdown]
# Eq. 1's parsimony term splits subsets of different sizes into different reward classes, so
# under the uniform policy its groups are almost never dead (at most
# {glue:text}`pe_dead_eq1_max`%). Under the differential reward a group is dead when its six
# subsets are all right or all wrong, {glue:text}`pe_dead_diff`% of uniform groups at every
# library size. GRPO's own groups start above that and end nearly all dead
# ({glue:text}`pe_dead8_first`% → {glue:text}`pe_dead8_last`% at 8 tools,
# {glue:text}`pe_dead12_first`% → {glue:text}`pe_dead12_last`% at 12): a concentrated policy
# draws the same subsets again. A larger library does not rescue GRPO's groups.

# %% tags=["remove-input"]
claim("dead", dead_t["uniform, Eq. 1 classes (%)"].max() < 1
      and all(g20[n].iloc[-1] > 95 for n in g20) and all(g20[n].iloc[0] > 40 for n in g20),
      "uniform Eq. 1 groups are almost never dead; GRPO's own groups end nearly all dead");

# %% [markdown]
# ## Re-running it
#
# ```bash
# make larger   # block scores, views, features and both studies; every step resumable
# ```
#
# `make larger` lists each command: `fgpo table blocks` (the reader's block scores, per suite),
# `fgpo table view` (a library of any of those tools as an ordinary reward table),
# `fgpo features --n-tools` and `fgpo study --methods larger`.

# %% tags=["remove-input"]
print(paper.CITATION)
