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
# Here the grid is built from the reasoners two CPU cores can read (four of five have tables) on
# the test suites core, microbe and mosaic ({doc}`benchmarks`), twice: each
# reasoner's selector trained on its own table, and the evidence reader's selector moved to every
# reasoner. The selector is the policy head studied in {doc}`head_study`, trained with the fair
# test's methods at the settings it chose on the evidence reader's in-domain dev (not tuned again
# per reasoner): exact FGPO and the best sampled estimator, {glue:text}`g_sampled`, each at its best
# regularizer, and GRPO twice, with the entropy bonus (*GRPO + bonus*: matched regularization, the
# bonus on both sides) and without (*GRPO*, as the paper ran it); {glue:text}`g_seeds` seeds each,
# every checkpoint chosen on the reasoner's own in-domain dev. A gap is *a difference* (a star)
# when its 95% paired-bootstrap interval excludes zero; stars are not adjusted for the many cells,
# so a few may arise by chance.

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
# Training on less is not the same as weaker: on core the reader stopped after one pass does best
# ({glue:text}`g_strongest`% with its best fixed subset).

# %% tags=["remove-input"]
prof = G.reasoner_profile(grid).reset_index()
prof.insert(1, "what it is", [G.GRID_ABOUT.get(r, "") for r in REASONERS])
show(prof, caption="Accuracy (%) on core's questions of each reasoner: with no tool, with every tool, with the "
     "best fixed subset (chosen with hindsight) and the oracle (some subset answers); and the reasoner calls per "
     "second its tables took to build on one core (a dash: built before builds recorded their cost).")
strength = prof.set_index("reasoner")["best fixed"]
glue_number("g_strongest", strength.max())
claim("g-one-pass-strongest", strength.idxmax() == grid.label("reader-epoch1"),
      "on core the one-pass reader has the best fixed subset of the four")

# %% [markdown]
# :::{dropdown} The fifth reasoner, SmolLM2-135M, has no grid tables
# Its first table ({glue:text}`g_lm_q` in-domain dev questions, 16 prompts each, about a thousand
# tokens a prompt) was built at {glue:text}`g_lm_rate` prompts a second beside other jobs; at that
# rate the grid's {glue:text}`g_lm_calls` prompts would take about {glue:text}`g_lm_hours` hours
# of this machine ({doc}`../book/rerun` says how to build them on a GPU). On the few questions
# {doc}`reward_table` probes, it answers at chance.
# :::

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
    return G.margin_frame(part[~part.suite.isin(G.POOLED_ROWS)], col)


strips = {"own, − (GRPO + bonus)": gaps_of(own, "vs_grpo"), "moved, − (GRPO + bonus)": gaps_of(moved, "vs_grpo"),
          "moved, − GRPO": gaps_of(moved, "vs_grpo_plain")}
fig = plot_grid(frame(own), frame(moved), strips, paper.TRANSFER, [grid.label(r) for r in REASONERS], grid.suites,
                grid.label(TRAINER))
plt.show()

# %% tags=["remove-input", "hide-output"]
acc, gap = G.cell_table(own, grid)
show(acc, caption="Each reasoner's selector on its own tables, accuracy (%), mean over seeds. The best fixed "
     "subset is the one best on the reasoner's training table; with hindsight, the one best on these questions.")
show(gap, caption="FGPO's gaps (points) on the same cells, with 95% intervals; a star: the interval excludes zero.")

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
# (In the figure the evidence reader's row is the same in both maps; on the paper's line the bar
# marks its median, the diamond its mean.) At matched regularization FGPO is ahead of GRPO + bonus by a difference in {glue:text}`g_m_diff` of the
# {glue:text}`g_n_cells` cells and behind by one in {glue:text}`g_m_behind`. Pooled over the
# suites, reasoner by reasoner, the gap runs from {glue:text}`g_m_lo` to {glue:text}`g_m_hi`
# points: a difference in FGPO's favour for none, in GRPO + bonus's for
# {glue:text}`g_m_pool_behind`. FGPO leads the paper's GRPO by a difference in {glue:text}`g_p_diff`
# cells (behind in {glue:text}`g_p_behind`), the best sampled estimator in {glue:text}`g_s_diff`
# (behind in {glue:text}`g_s_behind`), and the best fixed subset of the training table in
# {glue:text}`g_f_diff` (behind in {glue:text}`g_f_behind`). The fair test's answer
# ({doc}`head_study`) holds on every reasoner: with the bonus on both sides, enumerating buys no
# pooled lead. The folded tables give every cell, and the gaps in and out of domain.

# %% tags=["remove-input"]
claim("g-matched-no-pooled-lead", not any(pooled.loc[r, "vs_grpo"].a_better for r in REASONERS),
      "pooled over the suites, FGPO leads GRPO + bonus by a difference for no reasoner")

# %% tags=["remove-input", "hide-output"]
dom = own[own.suite.isin(G.POOLED_ROWS)]
show(pd.DataFrame({"reasoner": [grid.label(r) for r in dom.scored], "questions": list(dom.suite),
                   "FGPO − (GRPO + bonus)": [G.gap_text(iv) for iv in dom.vs_grpo],
                   "FGPO − GRPO": [G.gap_text(iv) for iv in dom.vs_grpo_plain],
                   "FGPO − best fixed": [G.gap_text(iv) for iv in dom.vs_fixed]}),
     caption="The same gaps pooled over the three suites, in domain and out of domain by the book's domain rule: "
     f"{int(dom[dom.suite == 'in domain'].questions.iloc[0]):,d} questions in domain, "
     f"{int(dom[dom.suite == 'out of domain'].questions.iloc[0]):,d} out.")

# %% [markdown]
# Out of domain FGPO leads the paper's GRPO for none of the {glue:text}`g_n_reasoners` reasoners
# and trails it by a difference for {glue:text}`g_ood_behind_p`; it trails GRPO + bonus by one for
# {glue:text}`g_ood_behind_m`. What FGPO gains over the paper's GRPO, it gains in domain.

# %% tags=["remove-input"]
ood = own[own.suite == "out of domain"]
glue_number("g_n_reasoners", len(REASONERS), 0)
glue_number("g_ood_behind_p", sum(iv.b_better for iv in ood.vs_grpo_plain), 0)
glue_number("g_ood_behind_m", sum(iv.b_better for iv in ood.vs_grpo), 0)
ind = own[own.suite == "in domain"]
claim("g-id-gains", sum(iv.a_better for iv in ind.vs_grpo_plain) > 0, "in domain FGPO leads the paper's GRPO for some reasoner")
claim("g-ood-no-lead", not any(iv.a_better for iv in ood.vs_grpo_plain) and len(ood) == len(REASONERS),
      "out of domain FGPO leads the paper's GRPO by a difference for no reasoner")

# %% [markdown]
# ## Moved without retraining
#
# In the paper's shape, the evidence reader's selector is scored in every reasoner's table (its
# picks looked up there). It leads the paper's GRPO by a difference in {glue:text}`g_mv_p_diff` of
# {glue:text}`g_mv_cells` cells (behind in {glue:text}`g_mv_p_behind`), against the paper's
# {glue:text}`g_paper_wins` of {glue:text}`g_paper_cells`; GRPO + bonus in {glue:text}`g_mv_m_diff`
# (behind in {glue:text}`g_mv_m_behind`); and the best fixed subset, chosen with hindsight as the
# paper's is, in {glue:text}`g_mv_h_diff` while trailing it in {glue:text}`g_mv_h_behind`, against
# the paper's {glue:text}`g_paper_fixed` of {glue:text}`g_paper_cells`.

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
# points above the one moved to it (a negative value: the moved one did better), most on the
# {glue:text}`g_move_worst`: tools chosen for one reader can serve another less well.

# %% tags=["remove-input", "hide-output"]
mv_acc, mv_gap = G.cell_table(moved, grid)
show(mv_gap, caption=f"The {grid.label(TRAINER)}'s selector moved: FGPO's gaps (points) in each reasoner's table, "
     "with 95% intervals; a star: the interval excludes zero.")
show(G.transfer_table(cells, grid), caption="FGPO's accuracy (%), mean over seeds: the selector trained on the row's "
     "reasoner picks the tools, the column's reasoner answers them, suite by suite.", digits=1,
     **{grid.label(r): "{:.1f}" for r in REASONERS})

# %% [markdown]
# ## What holds
#
# On these reasoners FGPO has little lead over GRPO to carry: at matched regularization no cell,
# own or moved, is more than {glue:text}`g_max_abs` points from zero. The count beside the paper's
# depends on which GRPO stands opposite, with or without the bonus. The grid is also less varied
# than the paper's: its four reasoners share one encoder, and its language model has no tables.

# %% tags=["remove-input"]
per_all = pd.concat([own, moved])
per_all = per_all[~per_all.suite.isin(G.POOLED_ROWS)]
max_abs = max(abs(iv.gap) for iv in per_all.vs_grpo)
glue_number("g_max_abs", math.ceil(max_abs * 10) / 10);
claim("g-moving-costs", loss.max() > 1, "moved, a selector scores over a point below some reasoner's own")
claim("g-small-cells", max_abs < 3, "no cell's FGPO minus GRPO + bonus is 3 points or more from zero")
claim("g-plain-more", mv.loc["grpo_plain", "ahead, a difference"] > mv.loc["grpo", "ahead, a difference"],
      "moved, FGPO leads the paper's GRPO by a difference in more cells than GRPO + bonus")
