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

# %% tags=["hide-input"]
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fgpo_core.algorithms.head import shortlist_grow, shortlist_top
from fgpo_core.book import paper
from fgpo_core.book.chapter import profile_note, show_source
from fgpo_core.book.findings import past_enumeration_findings
from fgpo_core.book.plots import plot_budget, set_style
from fgpo_core.core.dead_groups import dead_group_probability
from fgpo_core.core.estimators import fgpo_loss
from fgpo_core.experiments.larger_report import (budget_table, budget_tests, dead_by_epoch, library_rows,
                                                 seen_by_epoch, tool_effects)
from fgpo_core.experiments.study import StudyConfig, load_study, run_study
from fgpo_core.experiments.study_report import label, study_scores
from fgpo_core.genomics.tools.registry import make_tool
from fgpo_core.table import load_table

set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
TABLES, FEATURES = Path(larger_tables), Path(larger_features)
FOLDERS = {8: ("reader-eight", "minilm-eight", larger_eight), 12: ("reader-twelve", "minilm-twelve", larger_twelve)}
SMALL = {8: "fgpo,grpo,fgpo-k16,shortlist-top16,shortlist-grow16", 12: "fgpo,grpo,shortlist-top16,shortlist-grow16"}
studies = {}
for n, (tables_name, features_name, folder) in FOLDERS.items():
    if not folder:  # the ci profile: a small study of each size, trained now from the committed views and features
        folder = tempfile.mkdtemp(prefix=f"fgpo-larger-{n}-")
        run_study(StudyConfig(methods=SMALL[n], seeds=larger_seeds, epochs=larger_epochs, lrs="3e-2", suites="core",
                              n_train=larger_questions, n_dev=larger_questions, n_test=larger_questions,
                              table_dir=str(TABLES / tables_name), features_dir=str(FEATURES / features_name),
                              bench_dir=larger_bench, out_dir=folder), progress=False)
    studies[n] = load_study(folder)
tables = {4: load_table(TABLES / "reader" / "core")}
tables.update({n: load_table(TABLES / FOLDERS[n][0] / "core") for n in FOLDERS})
ids = studies[12].picks[studies[12].picks.suite == "core"].question_id.unique()
core = {n: t.select(list(ids)) for n, t in tables.items()}  # the test questions every study picked on
profile_note(profile, **{f"{n}-tool study": f"{len(s.manifest['config']['methods'].split(','))} methods x "
                         f"{s.manifest['config']['seeds']} seeds, {s.manifest['n_questions']['train']} training "
                         f"questions" for n, s in studies.items()}, test_questions=len(ids))

# %% [markdown]
# ## Twelve tools
#
# The first four are the book's library (chapter "The tool library"), homology is the
# appendix's fifth; the other seven are new here. Each runs once per question through the same
# library and renderer; the 8-tool library is the first four and the first four new ones.

# %%
names = tables[12].names()
display(pd.DataFrame({"tool": names,
                      "slot": [f"T{i + 1}" for i in range(len(names))],
                      "in the 8-tool library": [nm in tables[8].names() for nm in names],
                      "what it is": [make_tool(nm).title for nm in names]}).set_index("tool"))

# %% [markdown]
# ## What more tools do to the reader
#
# The reference points of each library on the same test questions, and what an exhaustive
# training table costs a whole-prompt reasoner: $2^n$ calls per training question.

# %%
n_train = studies[8].manifest["n_questions"]["train"]
lib = library_rows(core, n_train)
display(lib.rename(columns={"no_tool": "No-Tool (%)", "all_tools": "All-Tools (%)", "best_fixed": "best fixed (%)",
                            "oracle": "oracle (%)", "table_calls": f"exhaustive table calls ({n_train} questions)"})
        .round(1))

# %% [markdown]
# Each tool's effect on the reader, from the 12-tool table alone: its accuracy alone, the mean
# change from adding it to a subset that lacks it (over all $2^{11}$ such subsets), how often
# that addition turns a wrong answer right or a right one wrong, and All-Tools without it.

# %%
eff = tool_effects(core[12])
display(eff.rename(columns={"alone": "alone (%)", "marginal": "mean change when added (points)",
                            "helps": "wrong → right (% of pairs)", "hurts": "right → wrong (% of pairs)",
                            "all_but": "All-Tools without it (%)"}).round(1))
fig, ax = plt.subplots(figsize=(7, 3.4))
order = eff.marginal.sort_values()
ax.barh(range(len(order)), order.to_numpy(), color=["#c8553d" if v < 0 else "#1b7f79" for v in order])
ax.set_yticks(range(len(order)), order.index, fontsize=8)
ax.axvline(0, color="#444444", lw=0.8)
ax.set(xlabel="mean change in accuracy when the tool is added (points)",
       title="What each tool does to the reader (12-tool table, test questions)")
fig.tight_layout()
plt.show()

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

# %% [markdown]
# ## Accuracy against reasoner calls
#
# Each method's test accuracy (mean ± sd over seeds) against the distinct (question, subset)
# pairs its training read, per training question. The dashed line is $2^n$: the exhaustive
# table.

# %%
scores, budgets = {}, {}
for n, st in studies.items():
    scores[n] = study_scores(st, {"core": core[n]})
    budgets[n] = budget_table(st, scores[n])
fig = plot_budget(budgets, {n: float(core[n].ceilings()["no_tool"]) for n in budgets})
plt.show()
for n, b in budgets.items():
    display(Markdown(f"**{n} tools** ({b.seeds.max()} seeds, {len(ids)} test questions):"))
    display(b.set_index("label")[["calls_per_question", "accuracy", "accuracy_sd", "tools"]]
            .rename(columns={"calls_per_question": "calls per training question", "accuracy": "accuracy (%)",
                             "accuracy_sd": "sd over seeds", "tools": "tools per question"}).round(2))

# %% [markdown]
# ## Question-paired tests
#
# Every method against exact FGPO (the optimum the shortlists approximate), and against the
# GRPO run whose reasoner calls lie nearest to its own, seed by seed on the same test
# questions (exact McNemar). A positive difference favours the row's method.

# %%
vs_exact = {n: budget_tests(scores[n], budgets[n], rival="fgpo") for n in studies}
vs_grpo = {n: budget_tests(scores[n], budgets[n], family="grpo") for n in studies}
for n in studies:
    display(Markdown(f"**{n} tools, against exact FGPO:**"))
    display(vs_exact[n].rename(index=label).round(3))
    display(Markdown(f"**{n} tools, against GRPO at the nearest budget:**"))
    display(vs_grpo[n].assign(rival=vs_grpo[n].rival.map(label)).rename(index=label).round(3))

# %% [markdown]
# ## What the shortlist sees
#
# The share of training visits whose evaluated subsets held one of the question's Eq. 1-optimal
# subsets, epoch by epoch (exact FGPO: always). A shortlist can only move mass onto what it
# holds.

# %%
seen = {n: seen_by_epoch(st) for n, st in studies.items()}
fig, axes = plt.subplots(1, len(seen), figsize=(5.2 * len(seen), 3.4), sharey=True, squeeze=False)
for ax, (n, s) in zip(axes[0], seen.items()):
    for m in s.columns:
        if m != "fgpo":
            ax.plot(s.index, s[m], marker=".", label=label(m))
    ax.set(xlabel="epoch", title=f"{n} tools", ylim=(0, 100))
axes[0][0].set_ylabel("visits holding a best subset (%)")
axes[0][-1].legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Dead groups
#
# How often a GRPO group of six is dead (all rewards equal, every advantage zero) under the
# uniform policy, by the closed form of Eq. 7 on the test questions, under the reward classes
# of Eq. 1 and of the differential reward GRPO trains on here; and what GRPO's own draws found
# during training. Eq. 1's parsimony term splits subsets of different sizes into different
# classes, so its groups are rarely dead; under the differential reward a group is dead when
# its six subsets are all right or all wrong, and a policy that concentrates draws the same
# subsets again.

# %%
def uniform_dead(t, kind):
    return 100 * float(dead_group_probability(np.full(t.correct.shape, 1 / t.n_actions), t.rewards(kind), 6).mean())


dead = {n: dead_by_epoch(st) for n, st in studies.items()}
rows = {}
for n, t in core.items():
    d = dead.get(n, pd.DataFrame())
    rows[n] = {"uniform, Eq. 1 classes (%)": uniform_dead(t, "eq1"),
               "uniform, differential classes (%)": uniform_dead(t, "differential")}
    if "grpo" in d:
        g = d.grpo.dropna()  # GRPO's own 20 epochs (its 40- and 80-epoch runs extend the index)
        rows[n].update({"GRPO, first epoch (%)": g.iloc[0], "GRPO, last epoch (%)": g.iloc[-1]})
display(pd.DataFrame(rows).T.rename_axis("tools").round(1))

# %% [markdown]
# ## Findings, plainly

# %%
# each method's own last epoch: the longer GRPO runs extend the epoch index past the others' end
display(Markdown("\n".join(past_enumeration_findings(lib, eff, budgets, vs_exact, vs_grpo, seen, dead))))

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
