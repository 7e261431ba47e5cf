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
# FGPO rests on the $2^n$ subsets of a small tool library being few enough to score. The
# paper's conclusion names where that stops: larger libraries "may require adaptively
# constructed compact candidate sets, retaining exact optimization within each set". This
# chapter builds libraries of 8 and 12 real tools and measures what exact optimisation inside a
# **shortlist** of subsets buys, against exact FGPO over every subset and GRPO.
#
# Every method is **charged** the distinct (question, subset) pairs whose reward it read, as a
# reasoner that reads the whole prompt (the paper's 7B model) would bill them. This book's
# evidence reader scores each tool's evidence once, so one pass over $n + 1$ blocks answers all
# $2^n$ subsets: that is what lets exact FGPO run here at 12 tools.

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
from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import plot_budget, plot_shortlist_coverage, set_style
from fgpo_core.evaluation.domains import question_domains
from fgpo_core.experiments.domains import SPLITS, split_scores, study_training_table
from fgpo_core.experiments.study import StudyConfig, load_study, run_study
from fgpo_core.genomics.tools.registry import make_tool
from fgpo_core.genomics.benchmarks import load_benchmark
from fgpo_core.reports.ablation_intervals import interval_table, study_test
from fgpo_core.reports.fair import interval_text
from fgpo_core.reports.larger import (budget_table, dead_by_epoch, family_name, library_rows, nearest_budget,
                                      seen_by_epoch, tool_effects, tool_rates, uniform_dead)
from fgpo_core.reports.study import label
from fgpo_core.reports.tables import show
from fgpo_core.table import load_table

# %% tags=["remove-input"]
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


def tool_name(name):
    """A tool as it reads in prose and tables: its title without the source in brackets."""
    title = make_tool(name).title.split(" (")[0]
    return title if title[:3] == "CpG" else title[0].lower() + title[1:]


MOTIF = "motif_scan"

# %% tags=["remove-input"]
glue_number("pe_n_train", n_train, 0)
train_pool = load_table(TABLES / "reader" / "train")
train_families = set(study_training_table(studies[8], train_pool).family)
claim("larger-spread-pool", all(st.manifest["config"].get("train_spread") for st in studies.values())
      and train_families == set(train_pool.family),
      "the larger libraries' studies trained on questions spread over the whole pool, every family");
glue_text("pe_train_families", ", ".join(sorted(family_name(f) for f in train_families)))
_, bench_questions = load_benchmark(larger_bench)
train_ids = set(study_training_table(studies[8], train_pool).question_ids)
domains = question_domains({"core": [q for q in bench_questions["core"] if q.id in set(ids)]},
                           [q for q in bench_questions["train"] if q.id in train_ids])
ood = {i for i, d in domains["core"].items() if d == "OOD"}
ood_families = sorted({f for i, f in zip(core[12].question_ids, core[12].family) if i in ood})
glue_text("pe_ood_families", " and ".join(family_name(f) for f in ood_families))
glue_number("pe_n_test", len(ids), 0)
glue_number("pe_n_id", len(ids) - len(ood), 0)
glue_number("pe_n_ood", len(ood), 0)
devs = {n: st.manifest["config"].get("dev_suite", "dev") for n, st in studies.items()}
glue_text("pe_dev", "the in-domain dev" if set(devs.values()) == {"indev"} else
          " and ".join(f"{'the in-domain dev' if d == 'indev' else 'the former dev (mixed domains)'} at {n} tools"
                       for n, d in devs.items()))
seeds = {n: st.manifest["config"]["seeds"] for n, st in studies.items()}
glue_text("pe_seeds", f"{seeds[8]} seeds at both sizes" if seeds[8] == seeds[12]
          else f"{seeds[8]} seeds at 8 tools and {seeds[12]} at 12");

# %% [markdown]
# Each study trains on {glue:text}`pe_n_train` questions spread over the pool's families
# ({glue:text}`pe_train_families`) and is tested on the same {glue:text}`pe_n_test` core
# questions, {glue:text}`pe_seeds`: {glue:text}`pe_n_id` in domain and {glue:text}`pe_n_ood` out
# of domain by the book's rule ({doc}`benchmarks`; the out-of-domain ones are
# {glue:text}`pe_ood_families` questions). Gaps carry
# the book's 95% interval (two-level paired bootstrap, {doc}`intro`); a gap is a **difference**
# when its interval excludes zero, and one that is not is not shown to be a tie.
#
# ## Twelve tools
#
# The first four are the book's library (chapter {doc}`tool_library`), homology is the fifth
# tool of chapter {doc}`appendix`, the other seven are new:

# %% tags=["remove-input"]
names = tables[12].names()
show(pd.DataFrame({"tool": [make_tool(nm).title for nm in names],
                   "in the 8-tool library": ["yes" if nm in tables[8].names() else "no" for nm in names]}))

# %% [markdown]
# ## What more tools do to the reader
#
# Each library on the same test questions, and what its exhaustive training table costs a
# whole-prompt reasoner:

# %% tags=["remove-input"]
lib = library_rows(core, n_train)
show(lib.rename(columns={"no_tool": "No-Tool (%)", "all_tools": "All-Tools (%)", "best_fixed": "best fixed (%)",
                         "oracle": "oracle (%)", "table_calls": f"exhaustive table calls ({n_train:,} questions)"}), 1)
for n in (4, 12):
    for c in ("oracle", "best_fixed", "all_tools"):
        glue_number(f"pe_{c}_{n}", lib.loc[n, c])
glue_number("pe_all_gap", lib.loc[12, "best_fixed"] - lib.loc[12, "all_tools"])
eff = tool_effects(core[12]).rename(index=tool_name)
neg = eff[eff.marginal < 0].sort_values("marginal")
EXPERT, MOTIF_NAME = tool_name("expert"), tool_name(MOTIF)
glue_number("pe_n_neg", len(neg), 0)
glue_text("pe_neg", ", ".join(neg.index))
glue_number("pe_expert", eff.loc[EXPERT, "marginal"], signed=True)
glue_number("pe_motif", eff.loc[MOTIF_NAME, "marginal"], signed=True)
glue_number("pe_others_max", eff.drop([EXPERT, MOTIF_NAME]).marginal.abs().max());

# %% [markdown]
# From 4 to 12 tools the oracle (the best subset for each question, chosen with hindsight) rises
# from {glue:text}`pe_oracle_4`% to {glue:text}`pe_oracle_12`%, the best fixed subset barely
# moves ({glue:text}`pe_best_fixed_4`% → {glue:text}`pe_best_fixed_12`%) and All-Tools falls
# from {glue:text}`pe_all_tools_4`% to {glue:text}`pe_all_tools_12`%, {glue:text}`pe_all_gap`
# points below the best fixed subset: more tools give more ways to be right and more ways to be
# misled.
#
# What each tool does, from the 12-tool table: the mean change from adding it to a subset that
# lacks it (over all $2^{11}$ such subsets), and how often that turns a wrong answer right or a
# right one wrong.

# %% tags=["remove-input"]
claim("more_tools", lib.loc[12, "oracle"] > lib.loc[4, "oracle"] + 5 and lib.loc[12, "all_tools"] < lib.loc[4, "all_tools"]
      and abs(lib.loc[12, "best_fixed"] - lib.loc[4, "best_fixed"]) < 2,
      "from 4 to 12 tools the oracle rises, All-Tools falls and the best fixed subset barely moves")
claim("two_tools", set(eff.marginal.nlargest(2).index) == {EXPERT, MOTIF_NAME}
      and eff.drop([EXPERT, MOTIF_NAME]).marginal.abs().max() < 3 and len(neg) >= 3
      and (eff.helps > 0).all() and (eff.hurts > 0).all(),
      "the expert and motif scan carry the library; several tools lower accuracy; every tool helps and hurts somewhere")
show(eff[["marginal", "helps", "hurts"]].rename_axis("tool").rename(columns={
    "marginal": "mean change when added (points)", "helps": "wrong → right (% of pairs)",
    "hurts": "right → wrong (% of pairs)"}), 1)

# %% [markdown]
# Two tools carry the library, the genomic expert ({glue:text}`pe_expert` points on average) and
# the motif scan ({glue:text}`pe_motif`); no other moves accuracy by more than
# {glue:text}`pe_others_max` points, and {glue:text}`pe_n_neg` lower it
# ({glue:text}`pe_neg`). Every tool helps on some pairs and hurts on others.
#
# ## The shortlists
#
# A shortlist is a per-question set of $K$ subsets, rebuilt from the policy at every epoch;
# inside it the objective is FGPO's, exact ($q$ renormalised on the set, as in the coverage dial
# of chapter {doc}`exact_vs_sampled`). **Top** holds the policy's most likely subsets plus a few
# uniform draws, so the set keeps exploring:

# %% tags=["remove-input"]
display(show_source(shortlist_top))

# %% [markdown]
# **Grow** walks the subset lattice greedily: from the empty subset and the single tools, it adds
# the one-tool neighbours of the best two subsets found so far, judged by the rewards already paid
# for (its code is folded below).

# %% tags=["remove-input", "hide-output"]
display(show_source(shortlist_grow))

# %% [markdown]
# Beside them run the **coverage dial** (FGPO on $k$ subsets drawn uniformly at every visit) and
# **GRPO** ($G = 6$ draws from $q$) for 20 epochs and, to buy more calls, 40 and 80. All train
# the same linear head on the same frozen features, each at its learning rate chosen on
# {glue:text}`pe_dev`.
#
# ## Accuracy against reasoner calls
#
# Test accuracy (pooled; mean ± sd over seeds) against the pairs each method's training read, per
# training question; the dashed line is the exhaustive table.

# %% tags=["remove-input"]
scores, budgets, FT, C = {}, {}, {}, {}
for n, st in studies.items():
    scores[n] = split_scores(st, {"core": core[n]}, ["core"], train_families, domains=domains)
    budgets[n] = budget_table(st, scores[n], suite="pooled")
    for sp in SPLITS[1:]:
        budgets[n][sp] = budget_table(st, scores[n], suite=sp).accuracy
    FT[n] = study_test(st, {"core": tables[n]}, domains, {"BestFixed*": "best"})
    pairs = {m: (m, "fgpo") for m in budgets[n].index if m != "fgpo"} | {"BestFixed*": ("BestFixed*", "fgpo")}
    pairs |= {f"{m} | GRPO": (m, r) for m in budgets[n].index if (r := nearest_budget(budgets[n], m, "grpo"))}
    C[n] = FT[n].comparisons(pairs).set_index(["comparison", "split"])
fig = plot_budget(budgets, {n: float(core[n].ceilings()["no_tool"]) for n in budgets})
plt.show()

# %% [markdown]
# Each method minus exact FGPO, in points, with its 95% interval (\* a difference after Holm's
# adjustment over the library size's comparisons); the best fixed subset is chosen with hindsight
# on the test questions. The longer GRPO runs and the smallest shortlists, and each method
# against the GRPO run nearest it in calls, are in the table folded below.

# %% tags=["remove-input"]
FOLDED = {"fgpo", "grpo-e40", "grpo-e80", "shortlist-top4", "shortlist-grow4"}  # shown only in the folded table
GAP_ROWS = {n: {m: label(m) for m in budgets[n].index if m not in FOLDED} | {"BestFixed*": "best fixed subset"}
            for n in studies}
show(pd.concat({f"{n} tools": interval_table(C[n].reset_index(), GAP_ROWS[n], SPLITS) for n in studies},
               names=["library", "method"]))

# %% tags=["remove-input", "hide-output"]
def full_rows(n):
    """Every number of one library size: calls, accuracy per split, sd, tools, and each method
    against exact FGPO and the GRPO run nearest it in calls (pooled, with its interval)."""
    b = budgets[n]
    rows = {}
    for m in b.index:
        r = C[n].loc[(f"{m} | GRPO", "pooled")] if (f"{m} | GRPO", "pooled") in C[n].index else None
        rows[label(m)] = {"calls per training question": b.loc[m, "calls_per_question"]} | {
            f"{sp} (%)": b.loc[m, "accuracy" if sp == "pooled" else sp] for sp in SPLITS} | {
            "sd over seeds, pooled": b.loc[m, "accuracy_sd"], "tools per question": b.loc[m, "tools"],
            "minus exact FGPO, pooled (points)": "–" if m == "fgpo" else
            interval_text(*C[n].loc[(m, "pooled"), ["gap", "low", "high"]]),
            "minus the nearest GRPO, pooled (points)": "–" if r is None else
            f"{interval_text(r.gap, r.low, r.high)} ({label(r.b)})"}
    return pd.DataFrame.from_dict(rows, orient="index")


show(pd.concat({f"{n} tools": full_rows(n) for n in studies}, names=["library", "method"]), 1)

# %% tags=["remove-input"]
B8, B12 = budgets[8], budgets[12]


def gap(n, m, sp="pooled"):
    """Method ``m`` minus exact FGPO (points, interval) at ``n`` tools on split ``sp``."""
    return C[n].loc[(m, sp)]


def behind(n, m, sp="pooled"):
    return bool(gap(n, m, sp).high < 0)


def ahead(n, m, sp="pooled"):
    return bool(gap(n, m, sp).low > 0)


def no_diff(n, m, sp="pooled"):
    return not (behind(n, m, sp) or ahead(n, m, sp))


for n, B in ((8, B8), (12, B12)):
    glue_number(f"pe_f{n}", B.loc["fgpo", "accuracy"])
    for sp, short in (("pooled", "p"), ("in domain", "id"), ("out of domain", "ood")):
        g = gap(n, "grpo", sp)
        glue_text(f"pe_g{n}_{short}", interval_text(-g.gap, -g.high, -g.low))
        b = gap(n, "BestFixed*", sp)
        glue_text(f"pe_b{n}_{short}", interval_text(-b.gap, -b.high, -b.low))
glue_number("pe_top16_8", B8.loc["shortlist-top16", "accuracy"])
glue_number("pe_top16_8_share", 100 * B8.loc["shortlist-top16", "calls_per_question"] / 2 ** 8, 0)
glue_number("pe_top64_12", B12.loc["shortlist-top64", "accuracy"])
glue_number("pe_top64_12_share", 100 * B12.loc["shortlist-top64", "calls_per_question"] / 2 ** 12, 0)
def said(n, m, sp="pooled", sign=1):
    """A gap of ``C[n]`` as the page writes it (``sign=-1``: exact FGPO minus ``m``)."""
    r = gap(n, m, sp)
    return interval_text(sign * r.gap, *sorted((sign * r.low, sign * r.high)))


for n in studies:
    for sp, short in (("pooled", "p"), ("in domain", "id"), ("out of domain", "ood")):
        glue_text(f"pe_top{n}_{short}", said(n, "shortlist-top16" if n == 8 else "shortlist-top64", sp))
        glue_text(f"pe_topg{n}_{short}", said(n, f"{'shortlist-top16' if n == 8 else 'shortlist-top64'} | GRPO", sp))
glue_text("pe_k64_ood", said(12, "fgpo-k64", "out of domain"))
holm_id = [bool(gap(n, "grpo", "in domain").p_holm < 0.05) for n in studies]
glue_text("pe_holm_id", "both survive" if all(holm_id) else "neither survives" if not any(holm_id) else "one survives")
claim("vs_grpo", behind(8, "grpo", "in domain") and behind(12, "grpo", "in domain")
      and no_diff(8, "grpo", "out of domain") and ahead(12, "grpo", "out of domain")
      and no_diff(8, "grpo") and ahead(12, "grpo"),
      "exact FGPO is ahead of GRPO in domain at 8 and 12 tools; out of domain and pooled undecided at 8 tools, behind at 12")
claim("vs_fixed", behind(8, "BestFixed*", "in domain") and no_diff(8, "BestFixed*")
      and no_diff(8, "BestFixed*", "out of domain") and ahead(12, "BestFixed*") and ahead(12, "BestFixed*", "out of domain")
      and no_diff(12, "BestFixed*", "in domain"),
      "against the best fixed subset FGPO is ahead only in domain at 8 tools; at 12 behind pooled and out of domain")
claim("tops", all(no_diff(8, "shortlist-top16", sp) for sp in SPLITS)
      and ahead(12, "shortlist-top64") and ahead(12, "shortlist-top64", "out of domain")
      and no_diff(12, "shortlist-top64", "in domain")
      and C[12].loc[("shortlist-top64 | GRPO", "pooled")].low > 0
      and C[12].loc[("shortlist-top64 | GRPO", "in domain")].low > 0
      and C[12].loc[("shortlist-top64 | GRPO", "out of domain")].high < 0,
      "the top shortlist of 16 is undecided against exact FGPO on every split at 8 tools; at 12 the top shortlist of 64 "
      "is ahead of it pooled and out of domain, and ahead of its nearest GRPO pooled and in domain, behind out of domain")
claim("dial_12", all(behind(12, f"fgpo-k{k}", "in domain") for k in (4, 16, 64)) and ahead(12, "fgpo-k64", "out of domain"),
      "at 12 tools every coverage dial is behind exact FGPO in domain, and k = 64 is ahead of it out of domain");

# %% [markdown]
# **Exact FGPO** scores {glue:text}`pe_f8`% pooled at 8 tools and {glue:text}`pe_f12`% at 12.
# In domain it is ahead of GRPO at both sizes ({glue:text}`pe_g8_id` and {glue:text}`pe_g12_id`
# points; {glue:text}`pe_holm_id` Holm's adjustment over the table). Out of domain the sizes
# part: at 8 tools the gap is undecided ({glue:text}`pe_g8_ood`), at 12 exact FGPO falls behind
# ({glue:text}`pe_g12_ood`), and so it is behind pooled too ({glue:text}`pe_g12_p`; at 8 tools
# {glue:text}`pe_g8_p`, undecided). Against the best fixed subset, chosen with hindsight, it is
# ahead only in domain at 8 tools ({glue:text}`pe_b8_id`); at 12 tools it is behind pooled
# ({glue:text}`pe_b12_p`) and out of domain ({glue:text}`pe_b12_ood`).
#
# **The top shortlists** of 16 (8 tools) and 64 (12 tools) reach {glue:text}`pe_top16_8`% and
# {glue:text}`pe_top64_12`% for {glue:text}`pe_top16_8_share`% and
# {glue:text}`pe_top64_12_share`% of the table's calls. At 8 tools the gap to exact FGPO is
# undecided on every split ({glue:text}`pe_top8_p` pooled). At 12 tools the top shortlist of 64
# is ahead of exact FGPO pooled ({glue:text}`pe_top12_p`) and out of domain
# ({glue:text}`pe_top12_ood`), undecided in domain ({glue:text}`pe_top12_id`); against the GRPO
# run nearest it in calls it is ahead pooled ({glue:text}`pe_topg12_p`) and in domain
# ({glue:text}`pe_topg12_id`) and behind out of domain ({glue:text}`pe_topg12_ood`). The coverage
# dial, which draws its subsets uniformly, is behind exact FGPO in domain at 12 tools for every
# k, yet at k = 64 ahead of it out of domain ({glue:text}`pe_k64_ood`).
#
# ## Who calls the motif scan
#
# How often each method's subset holds the motif scan, per family of the test questions (%):

# %% tags=["remove-input"]
ROUTED = {8: ["fgpo", "grpo"], 12: ["fgpo", "grpo", "shortlist-top64", "shortlist-grow4"]}
family_of = {n: pd.Series(np.asarray(core[n].family), index=core[n].question_ids) for n in studies}
motif = {n: tool_rates(studies[n].picks[studies[n].picks.suite == "core"], family_of[n],
                       tables[n].names().index(MOTIF), ROUTED[n]) for n in studies}
show(pd.concat({f"{n} tools": m.rename(index=label) for n, m in motif.items()}, names=["library", "method"]), 0)
TF, CPG = family_name("tf_motif"), family_name("cpg")
fg = {n: motif[n].loc["fgpo"] for n in motif}
glue_number("pe_t2_tf8", fg[8][TF], 0)
glue_number("pe_t2_tf12", fg[12][TF], 0)
glue_number("pe_t2_cpg8", fg[8][CPG], 0)
t2_grpo = min(motif[n].loc["grpo"].min() for n in motif)
glue_text("pe_t2_grpo", "every question of every family" if t2_grpo >= 99.95
          else f"at least {t2_grpo:.0f}% of every family's questions")
glue_number("pe_grpo_tools", min(budgets[n].loc["grpo", "tools"] for n in budgets))
glue_number("pe_grow4_tools", budgets[12].loc["shortlist-grow4", "tools"])
grow4 = studies[12].picks[studies[12].picks.method == "shortlist-grow4"]
grow4_t2 = grow4.assign(t2=(grow4["mask"].to_numpy() >> tables[12].names().index(MOTIF)) & 1).groupby("seed").t2.mean()
glue_number("pe_grow4_seeds_t2", int((grow4_t2 > 0.5).sum()), 0)
glue_number("pe_grow4_seeds", len(grow4_t2), 0)
glue_number("pe_t2_top64_tf12", motif[12].loc["shortlist-top64", TF], 0)
ood12 = {m: budgets[12].loc[m, "out of domain"] for m in ("fgpo", "grpo", "shortlist-top64")}
glue_number("pe_ood12_fgpo", ood12["fgpo"])
glue_number("pe_ood12_grpo", ood12["grpo"])
glue_number("pe_ood12_top64", ood12["shortlist-top64"])
top12 = gap(12, "shortlist-top64")
claim("routing_8", fg[8][TF] == fg[8].max() > 80 and fg[8][CPG] == fg[8].min(),
      "at 8 tools FGPO calls the motif scan on most TF-motif questions, its most of any family, and least on CpG")
claim("collapse_12", fg[12][TF] < 50 < motif[12].loc["shortlist-top64", TF]
      and ood12["fgpo"] < min(ood12["grpo"], ood12["shortlist-top64"]) - 20
      and ahead(12, "grpo", "out of domain")
      and top12.low > 0,
      "at 12 tools FGPO calls the motif scan on under half the TF-motif questions, the top shortlist of 64 on more; "
      "out of domain FGPO falls over 20 points below GRPO and that shortlist; the shortlist is ahead of it pooled")
claim("routing_grpo", all(motif[n].loc["grpo"].min() > 85 for n in motif)
      and all(budgets[n].loc["grpo", "tools"] > budgets[n].loc["fgpo", "tools"] + 2 for n in budgets)
      and all(lib.loc[n, "all_tools"] < lib.loc[n, "best_fixed"] for n in (8, 12))
      and budgets[12].loc["shortlist-grow4", "tools"] < 2.5,
      "GRPO calls the motif scan nearly everywhere, with more tools than FGPO; the grow shortlist of 4 at 12 tools "
      "settles on small subsets");

# %% [markdown]
# At 8 tools exact FGPO calls the motif scan on most TF-motif questions
# ({glue:text}`pe_t2_tf8`%), a family it never trained on (the twin of regulator, which it
# did), and on {glue:text}`pe_t2_cpg8`% of CpG questions. GRPO calls it on at least
# {glue:text}`pe_t2_grpo`: it settles on large subsets
# ({glue:text}`pe_grpo_tools` tools per question or more), which cost this reader accuracy.
#
# At 12 tools exact FGPO's kept heads call it on only {glue:text}`pe_t2_tf12`% of TF-motif
# questions, and out of domain FGPO falls to {glue:text}`pe_ood12_fgpo`%, against GRPO's
# {glue:text}`pe_ood12_grpo`% and the top shortlist of 64's {glue:text}`pe_ood12_top64`% (it
# calls the motif scan on {glue:text}`pe_t2_top64_tf12`% of them). Every checkpoint and rate
# here is chosen on the in-domain dev, which holds no TF-motif question, so nothing in the
# choice rewards a head that routes the twin: exact FGPO's kept heads fit the training families
# (ahead of GRPO in domain, above) and lose the twin. The grow shortlist of 4 settles on small subsets
# ({glue:text}`pe_grow4_tools` tools per question), holding the motif scan on most questions in
# {glue:text}`pe_grow4_seeds_t2` of its {glue:text}`pe_grow4_seeds` seeds.
#
# So at 12 tools a shortlist that keeps exploring did better than exact optimisation over every
# subset: the top shortlist of 64, for {glue:text}`pe_top64_12_share`% of the table's calls, is
# ahead of exact FGPO pooled. The paper hoped compact candidate sets would keep exact
# optimisation affordable; here they also kept the twin.

# %% tags=["remove-input"]
lr = {n: st.manifest["chosen_lr"] for n, st in studies.items()}
gcalls = {n: {e: budgets[n].loc[m, "calls_per_question"] for e, m in ((20, "grpo"), (40, "grpo-e40"), (80, "grpo-e80"))}
          for n in studies}
for n in studies:
    for e in (20, 40, 80):
        glue_number(f"pe_gc_{n}_{e}", gcalls[n][e])
glue_text("pe_lr12_20", f"{lr[12]['grpo']:g}")
claim("grpo_epochs_8", len({lr[8][m] for m in ("grpo", "grpo-e40", "grpo-e80")}) == 1
      and max(gcalls[8].values()) < 1.2 * min(gcalls[8].values()),
      "at 8 tools the three GRPO runs share a rate and read about as many pairs")
glue_text("pe_lr12_40", f"{lr[12]['grpo-e40']:g}")
claim("grpo_epochs_12", lr[12]["grpo"] == lr[12]["grpo-e80"] < lr[12]["grpo-e40"]
      and abs(gcalls[12][80] - gcalls[12][20]) < 0.2 * gcalls[12][20] and gcalls[12][40] < 0.6 * gcalls[12][20],
      "at 12 tools the 20- and 80-epoch runs share a rate and read about as many pairs; the 40-epoch run, at a "
      "higher rate, far fewer");

# %% [markdown]
# ## What more GRPO epochs buy
#
# GRPO pays only for the pairs it draws, and how fast its policy concentrates sets how many. At
# 8 tools its 20-, 40- and 80-epoch runs share a learning rate and read {glue:text}`pe_gc_8_20`,
# {glue:text}`pe_gc_8_40` and {glue:text}`pe_gc_8_80` pairs per training question: four times
# the visits, almost no new pairs. At 12 tools the rate decides: the 20- and 80-epoch runs, at
# {glue:text}`pe_lr12_20`, read {glue:text}`pe_gc_12_20` and {glue:text}`pe_gc_12_80`; the
# 40-epoch run, at {glue:text}`pe_lr12_40`, concentrated sooner and read {glue:text}`pe_gc_12_40`.
#
# ## What the shortlist sees
#
# The share of training visits whose evaluated subsets held one of the question's Eq. 1-optimal
# subsets (exact FGPO: always):

# %% tags=["remove-input"]
seen = {n: seen_by_epoch(st) for n, st in studies.items()}
fig = plot_shortlist_coverage(seen, label, last_epoch=20)
plt.show()
last = {n: s.loc[20] for n, s in seen.items()}
grow = [m for m in seen[8].columns if m.startswith("shortlist-grow")]
top = [m for m in seen[8].columns if m.startswith("shortlist-top")]
glue_number("pe_grow_seen_lo", min(last[n][grow].min() for n in last), 0)
glue_number("pe_top_seen_hi", max(last[n][top].max() for n in last), 0)
claim("seen_vs_acc", min(last[n][grow].min() for n in last) > max(last[n][top].max() for n in last)
      and budgets[12].loc[grow, "accuracy"].max() < budgets[12].loc[["shortlist-top16", "shortlist-top64"], "accuracy"].min(),
      "the grow shortlists hold best subsets far more often than the top ones, yet at 12 tools are less accurate");

# %% [markdown]
# In the last epoch the grow shortlists held a best subset on at least
# {glue:text}`pe_grow_seen_lo`% of visits, the top ones on at most {glue:text}`pe_top_seen_hi`%,
# yet at 12 tools every grow shortlist's mean accuracy is below the top shortlists' of 16 and 64.
# A guess this chapter does not test: grow hunts each training question's optimum, while top
# follows the policy, which learns from every question at once.
#
# ## Dead groups
#
# The share of GRPO groups of six that are dead (chapter {doc}`dead_groups`): under the uniform
# policy by Eq. 7, with Eq. 1's reward and with the differential reward GRPO trains on here, and
# in GRPO's own 20-epoch run.

# %% tags=["remove-input"]
dead = {n: dead_by_epoch(st)["grpo"].dropna() for n, st in studies.items()}
rows = {}
for n, t in core.items():
    rows[n] = {"uniform, Eq. 1 classes (%)": uniform_dead(t, "eq1"),
               "uniform, differential classes (%)": uniform_dead(t, "differential")}
    if n in dead:
        rows[n].update({"GRPO, first epoch (%)": dead[n].iloc[0], "GRPO, last epoch (%)": dead[n].iloc[-1]})
dead_t = pd.DataFrame(rows).T.rename_axis("tools")
show(dead_t, 1)
glue_text("pe_dead_diff", f"{dead_t['uniform, differential classes (%)'].min():.0f}–"
                          f"{dead_t['uniform, differential classes (%)'].max():.0f}")
claim("dead", dead_t["uniform, Eq. 1 classes (%)"].max() < 1
      and all(dead[n].iloc[-1] > 90 for n in dead) and all(dead[n].iloc[0] > 40 for n in dead),
      "uniform Eq. 1 groups are almost never dead; GRPO's own groups end nearly all dead");

# %% [markdown]
# Eq. 1's parsimony term splits subsets of different sizes into different reward classes, so its
# uniform groups are almost never dead; under the differential reward
# {glue:text}`pe_dead_diff`% are, at every library size. GRPO's own groups end nearly all dead as
# its policy concentrates: a larger library does not rescue them.
#
# ## Re-running it
#
# ```bash
# make larger   # block scores, views, features and both studies; every step resumable
# ```

# %% tags=["remove-input"]
print(paper.CITATION)
