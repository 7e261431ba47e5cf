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
# # How post-training shapes the selector
#
# The book's second source is a controlled study of post-training for biological reasoning
# models (supervised fine-tuning, then reinforcement learning, judged in and out of the
# training domain). Its four findings, in its own words as summarised in the book's paper
# facts:
#
# 1. SFT raises in-domain (ID) accuracy while out-of-domain (OOD) accuracy peaks early and
#    then declines as SFT continues;
# 2. RL started from a strong SFT checkpoint improves OOD most, and mostly in its first epochs;
# 3. under a fixed budget, a brief SFT warm start followed by more RL beats both pure SFT
#    and pure RL;
# 4. SFT benefits from a high LoRA rank, while RL is best at a moderate one.
#
# This chapter asks the same four questions of the tool selector. Its training families
# (CpG islands, promoters, repeats, splice sites) are not the families of every test
# question, and one test suite comes from other organisms, so the selector has an ID and an
# OOD side too. The selector is the policy-head selector of "Exact versus sampled on the real
# tables"; a stage of post-training is a head, and the next stage freezes it and trains a
# fresh head stacked on top, whose scores add to it (the analogue of merging a stage's LoRA
# adapter into the weights and training a fresh adapter for the next, as the study does).
# Its width is the analogue of the LoRA rank.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the small study trained when companion_dir is empty
companion_dir = "../runs/cpu/companion"  # `fgpo study --methods companion --keep last`; empty: a small one now
study_tables = "../data/tables/cpu/reader"  # the training reader's tables, one subfolder per suite
study_features = "../data/features/cpu/minilm"  # cached prompt features
study_bench = "../data/benchmarks/cpu"  # the benchmark both were made from
head_seeds = 2  # seeds of the small study (only when companion_dir is empty)
head_questions = 200  # its training, dev and test questions per suite
lm_companion_dir = "../runs/cpu/lm-companion"  # `fgpo lm-companion`; empty or unfinished: the section says how to run it

# %% tags=["hide-input"]
import json
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fgpo_core.book import paper
from fgpo_core.book.chapter import profile_note, show_source
from fgpo_core.book.findings import lm_companion_findings, post_training_findings
from fgpo_core.algorithms.head import parse_method
from fgpo_core.book.plots import plot_id_ood_panels, plot_id_ood_plane, plot_lm_companion, set_style
from fgpo_core.experiments.companion_report import (budget_tests, domain_of, domain_split, id_ood_checkpoints,
                                                    id_ood_scores, id_ood_summary, lm_capacity_tests,
                                                    lm_companion_costs, lm_companion_table, lm_companion_tests,
                                                    load_lm_companion, width_effects)
from fgpo_core.experiments.lm_companion import LMCompanionConfig
from fgpo_core.experiments.study import COMPANION, StudyConfig, load_study, run_study
from fgpo_core.selectors.head import StackedHead
from fgpo_core.table import load_tables

set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
if not companion_dir:  # the ci profile: the same study, small, trained now
    companion_dir = tempfile.mkdtemp(prefix="fgpo-companion-")
    run_study(StudyConfig(methods="companion", seeds=head_seeds, lrs="3e-2", keep="last", checkpoints=4,
                          n_train=head_questions, n_dev=head_questions, n_test=head_questions,
                          table_dir=study_tables, features_dir=study_features, bench_dir=study_bench,
                          out_dir=companion_dir), progress=False)
st = load_study(companion_dir)
cfg = st.manifest["config"]
TEST = cfg["suites"].split(",")
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
train_families = sorted(set(tables["train"].family.tolist()))
ids = {s: st.picks[st.picks.suite == s].question_id.unique().tolist() for s in TEST}
test_tables = {s: tables[s].select(ids[s]) for s in TEST}
scores = id_ood_scores(st, test_tables, train_families)
curves = id_ood_checkpoints(st, train_families)
profile_note(profile, methods=len(cfg["methods"].split(",")), seeds=cfg["seeds"], questions=st.manifest["n_questions"])
print(f"{len(st.sweep)} runs, {st.manifest['train_seconds'] / 60:.1f} min of training on one CPU thread.")

# %% [markdown]
# ## In domain and out of domain, here
#
# One rule (`fgpo_core.experiments.companion_report.domain_of`): a test question is ID when
# its family is a training family and its suite is not the microbe suite, OOD otherwise.

# %% tags=["remove-input"]
display(show_source(domain_of))

# %%
split = domain_split(test_tables, train_families)
display(split.pivot_table(index=["domain", "suite"], columns="family", values="n", aggfunc="sum").fillna(0)
        .astype(int))
print("training families: " + ", ".join(train_families) + "; questions per domain: "
      + ", ".join(f"{d} {n}" for d, n in split.groupby("domain").n.sum().items()))

# %% [markdown]
# Every run keeps its **final** head (not its best dev evaluation: the point is what more
# training does). SFT trains at one fixed learning rate, so the SFT stage of every pipeline
# below is the same head; each RL stage's learning rate is chosen on dev, like every method
# of this book. The stacked head of a later stage, in code:

# %% tags=["remove-input"]
display(show_source(StackedHead, drop_docstring=True))


# %%
def summary(methods):
    return id_ood_summary(scores, methods)


def by_setting(methods, xs):
    t = id_ood_summary(scores, methods)
    t.index = xs[:len(t)]
    return t


# %% [markdown]
# ## 1. More SFT epochs
#
# SFT (cross-entropy to each training question's reward-optimal subset) for 1 to 32 epochs,
# each run from scratch with its own cosine schedule; ID and OOD accuracy of the final heads.

# %%
epochs = [parse_method(m).overrides["epochs"] for m in COMPANION["sft_epochs"]]
sft = by_setting(COMPANION["sft_epochs"], epochs)
display(sft.round(2))
long = curves[curves.method == COMPANION["sft_epochs"][-1]].groupby("epoch")[["ID", "OOD"]].mean()

# %% [markdown]
# ## 2. RL from SFT checkpoints
#
# FGPO or GRPO for 8 epochs, each started from one of the SFT heads above (the study's
# RL arm: 8 epochs from its SFT checkpoints). The gain is the change from the SFT head it
# started from.

# %%
rl_rows = {}
for rl in ("fgpo", "grpo"):
    for e in epochs:
        m = f"sft-e{e}-lr0.1+{rl}-e8"
        start = sft.loc[e]
        end = summary([m])
        if len(end):
            end = end.iloc[0]
            rl_rows[(rl.upper(), e)] = {"SFT ID": start.ID, "SFT OOD": start.OOD, "after RL ID": end.ID,
                                        "after RL OOD": end.OOD, "ID gain": end.ID - start.ID,
                                        "OOD gain": end.OOD - start.OOD, "OOD sd": end["OOD sd"]}
rl_table = pd.DataFrame(rl_rows).T.rename_axis(["RL", "from SFT epochs"])
display(rl_table.round(2))
id_peak = int(sft.ID.idxmax())
print(f"SFT's ID peak: {id_peak} epochs; early: {epochs[0]}; late: {epochs[-1]}.")

# %% [markdown]
# Over the 8 RL epochs, from the early, ID-peak and late SFT checkpoints (checkpoints of the
# chosen runs, mean over seeds):

# %%
rl_curve = curves[curves.stage == 1].groupby(["method", "epoch"])[["ID", "OOD"]].mean()
starts = sorted({epochs[0], id_peak, epochs[-1]})
traj = {}
for rl in ("fgpo", "grpo"):
    for e in starts:
        m = f"sft-e{e}-lr0.1+{rl}-e8"
        if m in rl_curve.index.get_level_values(0):
            f = rl_curve.loc[m].reset_index()
            f = pd.concat([pd.DataFrame({"epoch": [float(e)], "ID": [sft.loc[e, "ID"]], "OOD": [sft.loc[e, "OOD"]]}),
                           f], ignore_index=True)
            traj[f"{rl.upper()} from SFT {e} ep."] = f
traj["SFT, epoch by epoch"] = long.reset_index()
fig = plot_id_ood_plane(traj, "ID against OOD: SFT alone, then RL from its checkpoints")
plt.show()

# %% [markdown]
# ## 3. A fixed budget of question visits
#
# Twenty epochs of question visits in all, split between SFT and RL: 0, 20, 50, 80 and 100%
# SFT, with FGPO or with GRPO as the RL stage.

# %%
shares = [0, 20, 50, 80, 100]
budget, budget_p = {}, {}
for rl in ("fgpo", "grpo"):
    ms = [f"{rl}-e20", f"sft-e4-lr0.1+{rl}-e16", f"sft-e10-lr0.1+{rl}-e10", f"sft-e16-lr0.1+{rl}-e4", "sft-e20-lr0.1"]
    budget[rl.upper()] = by_setting(ms, shares)
    budget_p[rl.upper()] = budget_tests(scores, dict(zip(shares, ms)))
display(pd.concat(budget, names=["RL", "SFT share (%)"]).round(2))
display(Markdown("The mean of ID and OOD by share, and each share against the best one (paired t-test over seeds):"))
display(pd.concat(budget_p, names=["RL"]).round(3))
fig = plot_id_ood_panels([
    {"title": "more SFT epochs", "xlabel": "SFT epochs", "series": {"SFT": sft}, "log_x": True},
    {"title": "fixed budget: 20 epochs", "xlabel": "share of the budget given to SFT (%)",
     "series": budget},
])
plt.show()

# %% [markdown]
# ## 4. Capacity of each stage
#
# At the 20 / 80 split with FGPO, the width of the SFT head against the width of the RL head
# (0: a linear head; 64 and 256: one hidden layer), the analogue of the study's LoRA ranks:

# %%
width = {"": 0, "-h64": 64, "-h256": 256}
grid = {(wa, wb): f"sft-e4-lr0.1{a}+fgpo-e16{b}" for a, wa in width.items() for b, wb in width.items()}
cap = {}
for cell, m in grid.items():
    t = summary([m])
    if len(t):
        cap[cell] = t.iloc[0][["ID", "OOD"]]
cap = pd.DataFrame(cap).T.rename_axis(["SFT width", "RL width"])
display(Markdown("ID accuracy (%; rows: SFT head width, columns: RL head width):"))
display(cap.ID.unstack().round(2))
display(Markdown("OOD accuracy (%):"))
display(cap.OOD.unstack().round(2))
widths = width_effects(scores, grid)
display(Markdown("Each stage's width with the other's averaged out, against that stage's best width "
                 "(paired t-test over seeds):"))
display(widths.round(3))

# %% [markdown]
# ## The study's findings beside ours

# %%
findings = post_training_findings(sft, rl_table, budget, cap, id_peak, budget_p, widths)
display(Markdown("\n".join(findings)))

# %% [markdown]
# (post-training-lm)=
# ## 5. The language-model selector
#
# One question of the study asked of the LM selector of "FGPO versus GRPO": under one budget
# of question visits (each training question once), does a brief SFT stage followed by FGPO
# (20% / 80%) beat pure SFT and pure FGPO, in and out of domain, and do LoRA ranks 4, 16 and 64
# order the arms as the study found? Every run starts from that chapter's format warm-up,
# merged into the weights, with a fresh adapter of its rank on top, and keeps its last adapter;
# each is judged by free generation on in- and out-of-domain core questions and on the
# microbe suite (`fgpo_core.experiments.lm_companion`). A fresh adapter starts at zero, so the
# warm-up itself, as evaluated in "FGPO versus GRPO", is every rank's step 0: the **start** row,
# against which each arm is also tested question by question. Each adapter's alpha is twice
# its rank, and the learning rates are the same at every rank (only the rank varies); a
# higher rank can therefore move the weights
# further in the same steps, which is why the table keeps each arm's format failures.

# %%
lm_ready = bool(lm_companion_dir) and (Path(lm_companion_dir) / "picks.parquet").exists()
if lm_ready:
    lm_picks = load_lm_companion(lm_companion_dir)
    lm_cfg = json.loads((Path(lm_companion_dir) / "manifest.json").read_text())["config"]
    lm_table = lm_companion_table(lm_picks, tables, train_families)
    lm_tests = lm_companion_tests(lm_picks, tables, train_families)
    lm_vs_start = lm_companion_tests(lm_picks, tables, train_families, arm="start")
    lm_cost = lm_companion_costs(lm_companion_dir)
    print(f"Budget: {lm_cfg['budget']} question visits per run, {round(100 * lm_cfg['sft_share'])}% of them SFT in "
          f"the sequential arm; learning rates {lm_cfg['sft_lr']:g} (SFT) and {lm_cfg['fgpo_lr']:g} (FGPO); seed "
          f"{lm_cfg['seed']}; LoRA ranks evaluated: {', '.join(str(r) for r in sorted(set(lm_table.index.get_level_values(1))))} "
          f"(the sweep: {LMCompanionConfig.ranks}). Training took {lm_cost['train seconds'].sum() / 60:.0f} min on "
          f"{lm_cfg['threads']} CPU threads.")
    display(lm_table.round(1))
else:
    print("The LM selector's study has not been run into " + (lm_companion_dir or "this profile") + "; "
          "`make lm-companion` runs it (resumable; its budget and evaluated questions are "
          "`fgpo lm-companion --help`'s defaults).")

# %% [markdown]
# Each arm's path from the start, rank by rank:

# %%
if lm_ready:
    plot_lm_companion(lm_table)
    plt.show()

# %% [markdown]
# The question-paired tests (exact McNemar, seed 0): the sequential arm against each other
# arm, then the start against each trained arm ("start only": questions the start gets right
# and the arm wrong), then each arm's LoRA ranks against each other (the lower rank first).

# %%
if lm_ready:
    lm_capacity = lm_capacity_tests(lm_picks, tables, train_families)
    if len(lm_tests):
        display(lm_tests.round(3))
    display(lm_vs_start.round(3))
    if len(lm_capacity):
        display(lm_capacity.round(3))
    display(Markdown("\n".join(lm_companion_findings(lm_table, lm_tests, lm_vs_start, lm_capacity))))

# %% [markdown]
# What each training run cost (its stages counted apart; evaluations not included; "timed
# by" says how a run stopped and resumed across processes was timed):

# %%
if lm_ready:
    display(lm_cost.round(2))

# %% [markdown]
# What the difference between the two settings predicts. The study's models generate
# answers token by token, and SFT fits them to the training distribution's answers, which
# OOD questions do not share. Here SFT fits one subset per training question, the one that
# is reward-optimal under Eq. 1, and for many questions that is the empty subset (the
# appendix's SFT section gives the share). So one would expect SFT alone to gain little on
# either side, whatever its epochs, and the RL stage, which sees every subset's reward, to do
# most of the work in and out of domain alike. The findings above say whether it did; for
# the LM selector, the tools per question of its table are the direct check.
#
# ## Re-running it
#
# ```bash
# .venv/bin/fgpo study --methods companion --keep last --checkpoints 16 --out-dir runs/cpu/companion
# ```
#
# The method lists are `fgpo_core.experiments.study.COMPANION` (`make companion`).

# %% tags=["remove-input"]
print(paper.COMPANION_CITATION)
