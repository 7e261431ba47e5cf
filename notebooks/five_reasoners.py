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
# # Five reasoners, three suites
#
# The paper's headline is a grid: a selector trained for one reasoner (Qwen3-8B), moved without
# retraining to four other LLM reasoners and scored on three benchmarks, leads GRPO in
# {glue:text}`g_paper_wins` of {glue:text}`g_paper_cells` cells (by {glue:text}`g_paper_min` to
# {glue:text}`g_paper_max` points, median {glue:text}`g_paper_median`) and the best fixed subset
# in {glue:text}`g_paper_fixed`.
#
# Here the grid is built from the reasoners two CPU cores can read, twice: each reasoner's
# selector trained on its own table, and the evidence reader's selector moved to every reasoner.
# The selector is the policy head of {doc}`head_study`, trained with the fair test's methods at
# the settings it chose on the evidence reader's in-domain dev (not tuned again per reasoner):
# exact FGPO and {glue:text}`g_sampled` at their best regularizers, and GRPO twice, with the
# entropy bonus (*GRPO + bonus*) and without (*GRPO*, as the paper ran it); {glue:text}`g_seeds`
# seeds each, every checkpoint chosen on the reasoner's own in-domain dev. A star marks a gap whose
# 95% paired-bootstrap interval excludes zero, *a difference*.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
grid_dir = "../runs/cpu/grid"  # `make grid`: one study per reasoner
grid_tables = "../data/tables/cpu"  # one folder of tables per reasoner
grid_bench = "../data/benchmarks/cpu"  # the benchmark the tables were built from
grid_reasoners = "reader,reader-epoch1,reader-fifth,minilm"  # the reasoners with every table, in order
lm_table = "../data/tables/cpu/smollm2/indev"  # the causal LM's first table, whose build cost it records
grid_resamples = 2000  # bootstrap resamples per gap

# %% tags=["remove-input"]
import math
import warnings

import matplotlib.pyplot as plt
import pandas as pd

from fgpo_core.book import paper
from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_grid import plot_grid
from fgpo_core.evaluation.domains import question_domains
from fgpo_core.genomics.benchmarks import load_benchmark
from fgpo_core.reports import grid as G
from fgpo_core.reports.fair import cell_label
from fgpo_core.reports.tables import show

set_style()
warnings.filterwarnings("ignore")
REASONERS = [r for r in grid_reasoners.split(",") if r]
grid = G.load_grid(grid_dir, grid_tables, REASONERS)
_, questions = load_benchmark(grid_bench)
domains = question_domains({s: questions[s] for s in grid.suites}, questions["train"])
cells = G.grid_cells(grid, domains=domains, resamples=grid_resamples)
TRAINER = REASONERS[0]
own = cells[cells.trained == cells.scored]
moved = cells[cells.trained == TRAINER]
cfg = grid.studies[TRAINER].manifest
for key, value in (("g_paper_wins", paper.TRANSFER["fgpo_wins"]), ("g_paper_cells", paper.TRANSFER["cells"]),
                   ("g_paper_fixed", paper.TRANSFER["fgpo_beats_best_fixed"])):
    glue_number(key, value, 0)
for key in ("min", "max", "median"):
    glue_number(f"g_paper_{key}", paper.TRANSFER[f"margin_{key}"], 2, signed=True)
glue_text("g_sampled", cell_label(grid.methods[TRAINER]["sampled"]).replace(" + ", " with "))
glue_number("g_seeds", int(cfg["config"]["seeds"]), 0)
glue_number("g_n_train", int(cfg["n_questions"]["train"]), 0)
claim("g-same-methods", all(grid.methods[r] == grid.methods[TRAINER] for r in REASONERS),
      "every reasoner's study trains the same four methods at the same settings")

# %% [markdown]
# ## The reasoners
#
# Four are MiniLM-L6 readers that differ in what they were taught: the *evidence reader* of
# {doc}`reward_table`, two readers trained by its recipe on less, and the untrained encoder.

# %% tags=["remove-input"]
prof = G.reasoner_profile(grid).reset_index()
prof.insert(1, "what it is", [G.GRID_ABOUT.get(r, "") for r in REASONERS])
show(prof, caption="Accuracy (%) on core's questions of each reasoner: with no tool, with every tool, with the "
     "best fixed subset (chosen with hindsight) and the oracle; and the reasoner calls per second its tables "
     "took to build on this machine (a dash: built before builds recorded their cost).")

# %% [markdown]
# The fifth, the causal language model SmolLM2-135M, has no grid tables: its first,
# {glue:text}`g_lm_q` in-domain dev questions, read {glue:text}`g_lm_rate` prompts a second as
# built here beside other jobs (`perf/bench_reasoner.py` times it alone), so the
# {glue:text}`g_lm_calls` prompts of the grid's suites would take about {glue:text}`g_lm_hours`
# hours; {doc}`../book/rerun` says how to build them on a GPU. On what it has read it answers at
# chance ({doc}`reward_table`).

# %% tags=["remove-input"]
cost = G.build_cost(lm_table)
n_calls = sum(len(questions[s]) for s in ("train", "indev", *grid.suites)) * 16
glue_number("g_lm_q", cost["questions"], 0)
glue_number("g_lm_rate", cost["calls_per_second"], 2)
glue_number("g_lm_calls", n_calls, 0)
glue_number("g_lm_hours", n_calls / cost["calls_per_second"] / 3600, 0);

# %% [markdown]
# ## Each reasoner's own selector

# %% tags=["remove-input"]
def frame(part):
    per = part[~part.suite.isin(G.POOLED_ROWS)]
    return G.margin_frame(per, "vs_grpo").assign(row=[grid.label(r) for r in per.scored])


def gaps_of(part, col):
    return [iv.gap for iv in part[~part.suite.isin(G.POOLED_ROWS)][col]]


strips = {"own tables, vs GRPO + bonus": gaps_of(own, "vs_grpo"), "moved, vs GRPO + bonus": gaps_of(moved, "vs_grpo"),
          "moved, vs GRPO": gaps_of(moved, "vs_grpo_plain")}
fig = plot_grid(frame(own), frame(moved), strips, paper.TRANSFER, [grid.label(r) for r in REASONERS], grid.suites,
                grid.label(TRAINER))
plt.show()

# %% tags=["remove-input", "hide-output"]
show(G.cell_table(own, grid), caption="Each reasoner's selector on its own tables: accuracy (%), mean over seeds, "
     "and FGPO's gaps in points with their 95% intervals (a star: the interval excludes zero). The best fixed "
     "subset is the one best on the reasoner's training table; with hindsight, the one best on these questions.")

# %% tags=["remove-input"]
per_own = own[~own.suite.isin(G.POOLED_ROWS)]
n_own = len(per_own)
counts = G.cell_counts(own)
glue_number("g_n_cells", n_own, 0)
for role, name in (("grpo", "m"), ("grpo_plain", "p"), ("fixed", "f"), ("sampled", "s")):
    glue_number(f"g_{name}_ahead", counts.loc[role, "ahead"], 0)
    glue_number(f"g_{name}_diff", counts.loc[role, "ahead, a difference"], 0)
    glue_number(f"g_{name}_behind", counts.loc[role, "behind, a difference"], 0)
pooled = own[own.suite == "pooled"].set_index("scored")
gaps = pd.Series({r: pooled.loc[r, "vs_grpo"].gap for r in REASONERS})
glue_number("g_m_pool_behind", sum(pooled.loc[r, "vs_grpo"].b_better for r in REASONERS), 0)
glue_number("g_m_lo", gaps.min(), signed=True)
glue_number("g_m_hi", gaps.max(), signed=True);

# %% [markdown]
# At matched regularization FGPO is ahead of GRPO + bonus in {glue:text}`g_m_ahead` of the
# {glue:text}`g_n_cells` cells, by a difference in {glue:text}`g_m_diff`, and behind by one in
# {glue:text}`g_m_behind`. Pooled over the suites, reasoner by reasoner, the gap runs from
# {glue:text}`g_m_lo` to {glue:text}`g_m_hi` points: a difference in FGPO's favour for none, in
# GRPO + bonus's for {glue:text}`g_m_pool_behind`. FGPO leads the paper's GRPO by a difference in
# {glue:text}`g_p_diff` cells (behind in {glue:text}`g_p_behind`), the best sampled estimator in
# {glue:text}`g_s_diff` (behind in {glue:text}`g_s_behind`), and the best fixed subset of the
# training table in {glue:text}`g_f_diff` (behind in {glue:text}`g_f_behind`). The fair test's
# answer ({doc}`head_study`) holds on every reasoner: with the same bonus on both sides,
# enumerating buys no lead the grid detects. The folded tables give every cell, and the same gaps
# in and out of domain.

# %% tags=["remove-input"]
claim("g-matched-no-pooled-lead", not any(pooled.loc[r, "vs_grpo"].a_better for r in REASONERS),
      "pooled over the suites, FGPO leads GRPO + bonus by a difference for no reasoner")

# %% tags=["remove-input", "hide-output"]
dom = own[own.suite.isin(G.POOLED_ROWS)]
show(pd.DataFrame({"reasoner": [grid.label(r) for r in dom.scored], "questions": list(dom.suite),
                   "FGPO − (GRPO + bonus)": [G.gap_text(iv) for iv in dom.vs_grpo],
                   "FGPO − GRPO": [G.gap_text(iv) for iv in dom.vs_grpo_plain],
                   "FGPO − best fixed": [G.gap_text(iv) for iv in dom.vs_fixed]}),
     caption="The same gaps pooled over the three suites, in domain and out of domain by the book's rule "
     f"({{doc}}`benchmarks`): {int(dom[dom.suite == 'in domain'].questions.iloc[0]):,d} questions in domain, "
     f"{int(dom[dom.suite == 'out of domain'].questions.iloc[0]):,d} out.")

# %% [markdown]
# Where FGPO leads the paper's GRPO, it leads in domain; out of domain it does so for none of the
# {glue:text}`g_n_reasoners` reasoners, as the entropy bonus's lift is made in domain in
# {doc}`head_study`.

# %% tags=["remove-input"]
ood = own[own.suite == "out of domain"]
glue_number("g_n_reasoners", len(REASONERS), 0)
claim("g-ood-no-lead", not any(iv.a_better for iv in ood.vs_grpo_plain) and len(ood) == len(REASONERS),
      "out of domain FGPO leads the paper's GRPO by a difference for no reasoner")

# %% [markdown]
# ## Moved without retraining
#
# In the paper's shape, the evidence reader's selector is scored in every reasoner's table (its
# picks looked up there). It leads the paper's GRPO by a difference in {glue:text}`g_mv_p_diff` of
# {glue:text}`g_mv_cells` cells (behind in {glue:text}`g_mv_p_behind`) and the best fixed subset,
# chosen with hindsight as the paper's is, in {glue:text}`g_mv_h_diff` (behind in
# {glue:text}`g_mv_h_behind`): the paper's counts are {glue:text}`g_paper_wins` and
# {glue:text}`g_paper_fixed` of {glue:text}`g_paper_cells`. Against GRPO + bonus it leads in
# {glue:text}`g_mv_m_diff` (behind in {glue:text}`g_mv_m_behind`).

# %% tags=["remove-input"]
tm = G.transfer_matrix(cells, "pooled")
loss = pd.Series({r: tm.loc[r, r] - tm.loc[TRAINER, r] for r in REASONERS if r != TRAINER})
glue_number("g_move_lo", loss.min(), signed=True)
glue_number("g_move_hi", loss.max(), signed=True)
glue_text("g_move_worst", grid.label(loss.idxmax()))
mv = G.cell_counts(moved)
glue_text("g_trainer", grid.label(TRAINER))
glue_number("g_mv_cells", int(mv.loc["grpo", "cells"]), 0)
for role, name in (("grpo", "m"), ("grpo_plain", "p"), ("hindsight", "h")):
    glue_number(f"g_mv_{name}_ahead", mv.loc[role, "ahead"], 0)
    glue_number(f"g_mv_{name}_diff", mv.loc[role, "ahead, a difference"], 0)
    glue_number(f"g_mv_{name}_behind", mv.loc[role, "behind, a difference"], 0)

# %% [markdown]
# Pooled, a reasoner's own selector scores {glue:text}`g_move_lo` to {glue:text}`g_move_hi`
# points against the one moved to it, most on the {glue:text}`g_move_worst`: tools chosen for one
# reader can serve another less well (folded below, every selector in every reasoner's table).

# %% tags=["remove-input", "hide-output"]
show(G.transfer_table(cells, grid), caption="FGPO's accuracy (%), mean over seeds, when the selector trained "
     "on the row's reasoner picks the tools and the column's reasoner answers, suite by suite.")

# %% [markdown]
# ## What holds
#
# On these reasoners FGPO has little lead over GRPO to carry: at matched regularization no cell,
# own or moved, is more than {glue:text}`g_max_abs` points from zero. How the count compares with
# the paper's depends on which GRPO stands opposite: without the bonus it trails FGPO in more
# cells. The grid is smaller than the paper's where it matters: its reasoners share one encoder,
# and its one language model has no tables yet.

# %% tags=["remove-input"]
per_all = pd.concat([own, moved])
per_all = per_all[~per_all.suite.isin(G.POOLED_ROWS)]
max_abs = max(abs(iv.gap) for iv in per_all.vs_grpo)
glue_number("g_max_abs", math.ceil(max_abs * 10) / 10);
claim("g-moving-costs", loss.max() > 1, "moved, a selector scores over a point below some reasoner's own")
claim("g-small-cells", max_abs < 3, "no cell's FGPO minus GRPO + bonus is 3 points or more from zero")
claim("g-plain-more", mv.loc["grpo_plain", "ahead, a difference"] > mv.loc["grpo", "ahead, a difference"],
      "moved, FGPO leads the paper's GRPO by a difference in more cells than GRPO + bonus")
