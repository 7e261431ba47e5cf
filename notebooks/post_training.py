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
# models: supervised fine-tuning (SFT), then reinforcement learning (RL), judged in and out of
# the training domain. Its four findings:
#
# 1. SFT raises in-domain (ID) accuracy while out-of-domain (OOD) accuracy peaks early and then
#    declines;
# 2. RL started from a strong SFT checkpoint improves OOD most, and mostly in its first epochs;
# 3. under a fixed budget, a brief SFT warm start followed by more RL beats both pure SFT and
#    pure RL;
# 4. SFT benefits from a high LoRA rank, RL from a moderate one.
#
# This chapter asks the same questions of the policy-head selector of {doc}`head_study` (sections 1–4) and of the language-model selector of {doc}`fgpo_vs_grpo`
# (section 5). For the policy head, each stage trains a fresh head on top of the frozen heads
# before it, its scores added to theirs (as the study merges each stage's LoRA adapter and
# trains a fresh one); head width stands in for LoRA rank. SFT is cross-entropy to each
# training question's reward-optimal subset under Eq. 1; RL is FGPO or GRPO.
#
# A gap is a **difference** only by the book's one rule (`fgpo_core.evaluation.difference`): a
# paired t-test over seeds at p < 0.05 *and* McNemar's test at p < 0.05 in at least half the
# seeds (with one seed, McNemar alone). The tests are in one table at the end.

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

# %% tags=["remove-input"]
import json
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from fgpo_core.algorithms.head import parse_method
from fgpo_core.book import paper
from fgpo_core.book.chapter import show_source
from fgpo_core.book.claims import claim, fmt_number, fmt_p, glue_number, glue_text
from fgpo_core.book.plots import plot_id_ood_panels, plot_id_ood_plane, plot_lm_companion, set_style
from fgpo_core.evaluation.domains import domain_of
from fgpo_core.experiments.domains import study_training_table
from fgpo_core.experiments.study import COMPANION, StudyConfig, load_study, run_study
from fgpo_core.reports.companion import (domain_correct, domain_split, id_ood_checkpoints,
                                         id_ood_scores, id_ood_summary, id_ood_verdicts,
                                         lm_companion_costs, lm_companion_table, load_lm_companion)
from fgpo_core.reports.tables import show
from fgpo_core.selectors.head import StackedHead
from fgpo_core.table import load_table, load_tables

# %% tags=["remove-input"]
set_style()
warnings.filterwarnings("ignore")
if not companion_dir:  # only when no study is given: the same study, small, trained now
    companion_dir = tempfile.mkdtemp(prefix="fgpo-companion-")
    run_study(StudyConfig(methods="companion", seeds=head_seeds, lrs="3e-2", keep="last", checkpoints=4,
                          n_train=head_questions, n_dev=head_questions, n_test=head_questions,
                          table_dir=study_tables, features_dir=study_features, bench_dir=study_bench,
                          out_dir=companion_dir), progress=False)
st = load_study(companion_dir)
cfg = st.manifest["config"]
TEST = cfg["suites"].split(",")
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
tables["train"] = study_training_table(st, tables["train"])  # the rows the study trained on
train_families = sorted(set(tables["train"].family.tolist()))
ids = {s: st.picks[st.picks.suite == s].question_id.unique().tolist() for s in TEST}
test_tables = {s: tables[s].select(ids[s]) for s in TEST}
scores = id_ood_scores(st, test_tables, train_families)
curves = id_ood_checkpoints(st, train_families)
fam_of = {(s, q): f for s in TEST for q, f in zip(test_tables[s].question_ids, test_tables[s].family)}
MOTIF = 1 << list(test_tables["core"].names()).index("motif_scan")

# %% tags=["remove-input"]
def by_question(method):
    """A method's picks read question by question over every seed: ``domain, family, correct``."""
    c = pd.concat([domain_correct(f, test_tables, train_families) for _, f in st.picks[st.picks.method == method]
                   .groupby("seed")], ignore_index=True)
    return c.assign(family=[fam_of[(s, q)] for s, q in zip(c.suite, c.question_id)])


def tf_motif(method, other=False):
    """Accuracy (%) on the tf_motif test questions (``other``: on the other OOD questions)."""
    c = by_question(method)
    keep = (c.family != "tf_motif") & (c.domain == "OOD") if other else c.family == "tf_motif"
    return 100 * float(c.correct[keep].mean())


def motif_share(method):
    """Share (%) of a method's test picks that call the motif scan."""
    return 100 * float(((st.picks["mask"][st.picks.method == method] & MOTIF) > 0).mean())


def summary(methods):
    return id_ood_summary(scores, methods)


def by_setting(methods, xs):
    t = id_ood_summary(scores, methods)
    t.index = xs[:len(t)]
    return t


def verdict(a, b, picks=None):
    """``{"ID": Verdict, "OOD": Verdict}`` of method a against method b (the book's rule)."""
    return id_ood_verdicts(st.picks if picks is None else picks, test_tables if picks is None else tables,
                           train_families, a, b)


TESTS = []  # (selector, comparison, verdicts): the chapter's one table of tests


def tested(selector, comparison, a, b, picks=None):
    v = verdict(a, b, picks)
    TESTS.append((selector, comparison, v))
    return v

# %% tags=["remove-input"]
# the empty subset (No-Tool) on the same questions, as a floor
empty = domain_correct(pd.concat([pd.DataFrame({"suite": s, "question_id": ids[s], "mask": 0}) for s in TEST]),
                       test_tables, train_families)
no_tool = {d: 100 * float(empty.correct[empty.domain == d].mean()) for d in ("ID", "OOD")}
split = domain_split(test_tables, train_families)
n_dom = split.groupby("domain").n.sum()
glue_number("pt_n_id", int(n_dom["ID"]), 0)
glue_number("pt_n_ood", int(n_dom["OOD"]), 0)
glue_number("pt_seeds", cfg["seeds"], 0)
glue_number("pt_n_train", st.manifest["n_questions"]["train"], 0)
glue_text("pt_train_families", ", ".join(train_families))
test_families = set(split.family)
tf_ood = set(split.domain[split.family == "tf_motif"]) == {"OOD"};

# %% [markdown]
# ## In domain and out of domain, here
#
# The policy head trains on the whole pool: {glue:text}`pt_n_train` questions of the families
# {glue:text}`pt_train_families`, {glue:text}`pt_seeds` seeds. The motif scan decides the
# regulator family's questions; no test question is of that family, but, as section 1 shows,
# the motif scan matters for the OOD test family `tf_motif` too. A test question is ID when its
# family is a training family and its suite is not the microbe suite, OOD otherwise (the rule
# below). That gives {glue:text}`pt_n_id` ID and {glue:text}`pt_n_ood` OOD test questions:

# %% tags=["remove-input"]
claim("pool_regulator", "regulator" in train_families and "regulator" not in test_families and tf_ood,
      "the policy head trains on the regulator family, no test question is of it, and tf_motif is OOD");

# %% tags=["remove-input"]
display(show_source(domain_of))
show(split.pivot_table(index=["domain", "suite"], columns="family", values="n", aggfunc="sum").fillna(0)
     .astype(int), 0)

# %% [markdown]
# Every run keeps its **final** head. SFT trains at one fixed learning rate, so every
# pipeline's SFT stage is the same head; each RL stage's learning rate is chosen on dev. The
# stacked head of a later stage:

# %% tags=["remove-input", "hide-output"]
display(show_source(StackedHead, drop_docstring=True))

# %% [markdown]
# ## 1. More SFT epochs
#
# SFT for 1 to 32 epochs, each run from scratch with its own cosine schedule; ID and OOD
# accuracy of the final heads (mean and sd over seeds):

# %% tags=["remove-input"]
epochs = [parse_method(m).overrides["epochs"] for m in COMPANION["sft_epochs"]]
sft = by_setting(COMPANION["sft_epochs"], epochs)
show(sft.drop(columns=["seeds"]).rename_axis("SFT epochs"), 1)
e1, eL = epochs[0], epochs[-1]
sft_last = tested("policy head", f"SFT, {eL} epochs against {e1}", COMPANION["sft_epochs"][-1], COMPANION["sft_epochs"][0])
glue_number("pt_sft_id_first", sft.loc[e1, "ID"])
glue_number("pt_sft_id_last", sft.loc[eL, "ID"])
glue_number("pt_sft_ood_first", sft.loc[e1, "OOD"])
glue_number("pt_sft_ood_last", sft.loc[eL, "OOD"])
glue_number("pt_sft_last_epochs", eL, 0)
glue_number("pt_no_tool_id", no_tool["ID"])
glue_number("pt_paper_sft_ood_1", paper.COMPANION["sft_ood_by_epoch"][1])
glue_number("pt_paper_sft_ood_4", paper.COMPANION["sft_ood_by_epoch"][4])
last_sft_picks = st.picks[(st.picks.method == "sft-e20-lr0.1")]
glue_number("pt_sft_empty", 100 * float((last_sft_picks["mask"] == 0).mean()), 0)
ood_peak = int(sft.OOD.idxmax())
glue_number("pt_sft_id_above_floor", (sft.ID - no_tool["ID"]).max())
sft_tf = {k: glue_number(f"pt_sft_tf_{k}", tf_motif(m)) for k, m in (("first", COMPANION["sft_epochs"][0]),
                                                                    ("last", COMPANION["sft_epochs"][-1]))}
sft_other = [tf_motif(m, other=True) for m in (COMPANION["sft_epochs"][0], COMPANION["sft_epochs"][-1])]
glue_number("pt_sft_motif", motif_share("sft-e20-lr0.1"), 0)
empty_fam = np.array([fam_of[(s, q)] for s, q in zip(empty.suite, empty.question_id)])
no_tool_other = 100 * float(empty.correct[(empty.domain == "OOD") & (empty_fam != "tf_motif")].mean());

# %% [markdown]
# SFT raises both sides, OOD far more than ID: ID from {glue:text}`pt_sft_id_first`% after one
# epoch to {glue:text}`pt_sft_id_last`% after {glue:text}`pt_sft_last_epochs`, OOD from
# {glue:text}`pt_sft_ood_first`% to {glue:text}`pt_sft_ood_last`%, both differences. OOD is
# highest at the last checkpoint, so the study's first finding (OOD peaks early, then falls:
# {glue:text}`pt_paper_sft_ood_1`% after one epoch, {glue:text}`pt_paper_sft_ood_4`% after
# four) does not appear here.
#
# In domain, no SFT head is more than {glue:text}`pt_sft_id_above_floor` points above No-Tool
# ({glue:text}`pt_no_tool_id`%): the subset SFT imitates is most often the empty one, which the
# 20-epoch SFT head of section 3 (its pure-SFT arm) picks on {glue:text}`pt_sft_empty`% of test
# questions. Out of domain, SFT learns the motif scan from the regulator family (that head calls
# it on {glue:text}`pt_sft_motif`% of all test questions), and the gain is on `tf_motif`: the first head answers
# {glue:text}`pt_sft_tf_first`% of them, the last {glue:text}`pt_sft_tf_last`%. On the other OOD
# questions SFT stays near No-Tool. On the first pool, without the regulator family, OOD
# stayed near No-Tool too.

# %% tags=["remove-input"]
claim("sft_rises", sft_last["ID"].a_better and sft_last["OOD"].a_better,
      "SFT's last checkpoint is ahead of its first in ID and in OOD, both differences")
claim("sft_no_ood_peak", ood_peak == eL, "OOD is highest at SFT's last checkpoint")
claim("sft_ood_more", sft.loc[eL, "OOD"] - sft.loc[e1, "OOD"] > 2 * (sft.loc[eL, "ID"] - sft.loc[e1, "ID"]),
      "SFT raises OOD far more (over twice as much) as ID")
claim("sft_id_near_floor", (sft.ID - no_tool["ID"]).max() < 10, "no SFT head is far above No-Tool in domain (under ten points)")
claim("sft_empty", (last_sft_picks["mask"] == 0).mean() > 0.5, "the 20-epoch SFT head mostly picks the empty subset")
claim("sft_motif", sft_tf["last"] - sft_tf["first"] > 30 and abs(sft_other[1] - sft_other[0]) < 3
      and max(sft_other) - no_tool_other < 5,
      "SFT's OOD gain is on tf_motif (over thirty points); on the other OOD questions it stays near No-Tool");

# %% [markdown]
# ## 2. RL from SFT checkpoints
#
# FGPO or GRPO for 8 epochs from each SFT head above, as in the study. ID and OOD after RL:

# %% tags=["remove-input"]
rl_rows = {}
for e in epochs:
    row = {"SFT ID": sft.loc[e, "ID"], "SFT OOD": sft.loc[e, "OOD"]}
    for rl in ("fgpo", "grpo"):
        end = summary([f"sft-e{e}-lr0.1+{rl}-e8"])
        if len(end):
            row[f"{rl.upper()} ID"], row[f"{rl.upper()} OOD"] = end.iloc[0].ID, end.iloc[0].OOD
    rl_rows[e] = row
rl_table = pd.DataFrame(rl_rows).T.rename_axis("from SFT epochs")
show(rl_table, 1)
after = rl_table[["FGPO ID", "FGPO OOD", "GRPO ID", "GRPO OOD"]]
rl_same = {rl: tested("policy head", f"{rl.upper()} from SFT {eL} epochs against from SFT {e1}",
                      f"sft-e{eL}-lr0.1+{rl}-e8", f"sft-e{e1}-lr0.1+{rl}-e8") for rl in ("fgpo", "grpo")}
gain_ood = rl_table["FGPO OOD"] - rl_table["SFT OOD"]
gain_id = rl_table["FGPO ID"] - rl_table["SFT ID"]
glue_number("pt_rl_id", rl_table["FGPO ID"].mean())
glue_number("pt_rl_ood", rl_table["FGPO OOD"].mean())
glue_number("pt_rl_spread", float((after.max() - after.min()).max()))
glue_number("pt_rl_gain_lo", min(gain_ood.min(), gain_id.min()), 0)
glue_number("pt_rl_gain_hi", max(gain_ood.max(), gain_id.max()), 0)
glue_number("pt_paper_rl_from", paper.COMPANION["rl_from_sft_ood"][0])
glue_number("pt_paper_rl_to", paper.COMPANION["rl_from_sft_ood"][1])
fp = st.picks[st.picks.method == f"sft-e{e1}-lr0.1+fgpo-e8"]
top = fp["mask"].value_counts(normalize=True)
glue_text("pt_rl_top", test_tables["core"].labels()[int(top.index[0])])
glue_number("pt_rl_top_share", 100 * float(top.iloc[0]), 0)
glue_number("pt_rl_grpo_late", rl_same["grpo"]["OOD"].gap, signed=True)
glue_number("pt_rl_fgpo_late_id", rl_same["fgpo"]["ID"].gap, signed=True)
glue_number("pt_rl_fgpo_late_ood", rl_same["fgpo"]["OOD"].gap, signed=True);

# %% [markdown]
# Eight epochs of RL lift every SFT head by {glue:text}`pt_rl_gain_lo` to
# {glue:text}`pt_rl_gain_hi` points on both sides, to about {glue:text}`pt_rl_id`% ID and
# {glue:text}`pt_rl_ood`% OOD. The start matters little: the after-RL columns span at most
# {glue:text}`pt_rl_spread` points. From the last SFT checkpoint rather than the first, FGPO
# ends {glue:text}`pt_rl_fgpo_late_id` points ID and {glue:text}`pt_rl_fgpo_late_ood` OOD, no
# difference by the book's rule; GRPO {glue:text}`pt_rl_grpo_late` points ahead OOD (a difference) and level
# ID. On the first pool no start differed.
#
# So the study's second finding holds in its first half, RL does most of the work out of
# domain (the study: OOD {glue:text}`pt_paper_rl_from`% → {glue:text}`pt_paper_rl_to`% after
# eight epochs from its four-epoch SFT checkpoint); that a stronger start ends higher holds
# only for GRPO out of domain. The RL heads converge to nearly one policy, which leaves little
# room for the start to show: after FGPO from the one-epoch checkpoint the subset
# {glue:text}`pt_rl_top` alone is picked on {glue:text}`pt_rl_top_share`% of test questions.

# %% tags=["remove-input"]
claim("rl_start", float((after.max() - after.min()).max()) < 5
      and not any(rl_same["fgpo"][d].is_difference for d in ("ID", "OOD"))
      and rl_same["grpo"]["OOD"].a_better and not rl_same["grpo"]["ID"].is_difference,
      "RL lands within a few points from every start; from the last SFT checkpoint FGPO does not differ "
      "from the first, GRPO is ahead OOD only")
claim("rl_gains", min(gain_ood.min(), gain_id.min()) > 10, "RL lifts every SFT head by more than ten points on both sides")
claim("rl_near_fixed", top.iloc[0] > 0.7, "the RL head picks one subset on most test questions");

# %% tags=["remove-input"]
rl_curve = curves[curves.stage == 1].groupby(["method", "epoch"])[["ID", "OOD"]].mean()
long = curves[curves.method == COMPANION["sft_epochs"][-1]].groupby("epoch")[["ID", "OOD"]].mean()
traj = {}
for rl in ("fgpo", "grpo"):
    for e in sorted({e1, eL}):
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
# SFT, with FGPO or with GRPO as the RL stage (the figure below shows ID and OOD of each split).

# %% tags=["remove-input"]
shares = [0, 20, 50, 80, 100]
budget, arms = {}, {}
for rl in ("fgpo", "grpo"):
    arms[rl] = [f"{rl}-e20", f"sft-e4-lr0.1+{rl}-e16", f"sft-e10-lr0.1+{rl}-e10", f"sft-e16-lr0.1+{rl}-e4",
                "sft-e20-lr0.1"]
    budget[rl.upper()] = by_setting(arms[rl], shares)
bv = {}
for rl in ("fgpo", "grpo"):
    R = rl.upper()
    bv[(rl, 0)] = tested("policy head", f"20% SFT + {R} against pure {R}", arms[rl][1], arms[rl][0])
    bv[(rl, 100)] = tested("policy head", f"20% SFT + {R} against pure SFT", arms[rl][1], arms[rl][4])
mixed_vs_pure = {rl: [bv[(rl, 0)]] + [tested("policy head", f"{s}% SFT + {rl.upper()} against pure {rl.upper()}",
                                              m, arms[rl][0]) for s, m in zip(shares[2:4], arms[rl][2:4])]
                 for rl in ("fgpo", "grpo")}
glue_number("pt_b_fgpo_id", budget["FGPO"].loc[0, "ID"])
glue_number("pt_b_fgpo_ood", budget["FGPO"].loc[0, "OOD"])
glue_number("pt_b_sft_id", budget["FGPO"].loc[100, "ID"])
glue_number("pt_b_sft_ood", budget["FGPO"].loc[100, "OOD"])
glue_number("pt_b_grpo20_gap_id", bv[("grpo", 0)]["ID"].gap, signed=True)
glue_number("pt_b_grpo20_gap_ood", -bv[("grpo", 0)]["OOD"].gap)
glue_number("pt_b_fgpo20_gap_ood", -bv[("fgpo", 0)]["OOD"].gap)
b_tf = {k: glue_number(f"pt_b_tf_{k}", tf_motif(arms["fgpo"][i])) for k, i in (("pure", 0), ("mixed", 1))}
b_motif = {k: glue_number(f"pt_b_motif_{k}", motif_share(arms["fgpo"][i]), 0) for k, i in (("pure", 0), ("mixed", 1))}
glue_text("pt_paper_split", "/".join(str(x) for x in paper.COMPANION["budget_best_split"]));

# %% [markdown]
# Every split with RL in it beats pure SFT ({glue:text}`pt_b_sft_id`% ID,
# {glue:text}`pt_b_sft_ood`% OOD) on both sides. Against pure RL ({glue:text}`pt_b_fgpo_id`% ID
# and {glue:text}`pt_b_fgpo_ood`% OOD with FGPO; each run's last head, where {doc}`head_study` keeps the head best on dev, hence its other numbers), a warm start trades one side for the other.
# After 20% SFT, GRPO gains {glue:text}`pt_b_grpo20_gap_id` points
# ID and loses {glue:text}`pt_b_grpo20_gap_ood` OOD; FGPO loses
# {glue:text}`pt_b_fgpo20_gap_ood` OOD and is level ID. Those three gaps are differences, and
# every mixed split, with either RL, is behind pure RL out of domain.
#
# The loss is on `tf_motif`. Pure FGPO calls the motif scan on {glue:text}`pt_b_motif_pure`% of
# all test questions (ID and OOD) and answers {glue:text}`pt_b_tf_pure`% of `tf_motif`'s; after
# 20% SFT it calls it on {glue:text}`pt_b_motif_mixed`% and answers {glue:text}`pt_b_tf_mixed`%, settling on the
# subset of section 2. So the study's third finding (best split {glue:text}`pt_paper_split`,
# above both pure arms) does not hold: a warm start can help in domain (with GRPO at every
# split, with FGPO at 50 and 80%) and always costs out of domain. On the first pool it cost
# FGPO nothing out of domain.

# %% tags=["remove-input"]
claim("budget_sft_low", all(bv[(rl, 100)][d].a_better for rl in ("fgpo", "grpo") for d in ("ID", "OOD")),
      "20% SFT then RL beats pure SFT on both sides")
claim("budget_grpo", bv[("grpo", 0)]["ID"].a_better and bv[("grpo", 0)]["OOD"].b_better,
      "20% SFT then GRPO beats pure GRPO in domain and loses to it out of domain")
claim("budget_fgpo", not bv[("fgpo", 0)]["ID"].is_difference and bv[("fgpo", 0)]["OOD"].b_better,
      "20% SFT then FGPO is level with pure FGPO in domain and loses to it out of domain")
claim("budget_id", all(v["ID"].a_better for v in mixed_vs_pure["grpo"])
      and all(v["ID"].a_better for v in mixed_vs_pure["fgpo"][1:]),
      "every mixed split beats pure GRPO in domain; with FGPO the 50 and 80% splits do")
claim("budget_ood_cost", all(v["OOD"].b_better for rl in ("fgpo", "grpo") for v in mixed_vs_pure[rl]),
      "every mixed split is behind pure RL out of domain, a difference")
mixed_top = st.picks["mask"][st.picks.method == arms["fgpo"][1]].value_counts().index[0]
claim("budget_motif", b_motif["pure"] > 2 * b_motif["mixed"] and b_tf["pure"] - b_tf["mixed"] > 10
      and mixed_top == top.index[0],
      "pure FGPO calls the motif scan far more often than 20% SFT then FGPO, and answers more tf_motif questions");

# %% tags=["remove-input"]
fig = plot_id_ood_panels([
    {"title": "more SFT epochs", "xlabel": "SFT epochs", "series": {"SFT": sft}, "log_x": True},
    {"title": "fixed budget: 20 epochs", "xlabel": "share of the budget given to SFT (%)", "series": budget},
])
plt.show()

# %% [markdown]
# ## 4. Capacity of each stage
#
# At the 20 / 80 split with FGPO, the width of the SFT head against that of the RL head (0: a
# linear head; 64 and 256: one hidden layer), the analogue of the study's LoRA ranks. ID / OOD
# accuracy (%):

# %% tags=["remove-input"]
width = {"": 0, "-h64": 64, "-h256": 256}
grid = {(wa, wb): f"sft-e4-lr0.1{a}+fgpo-e16{b}" for a, wa in width.items() for b, wb in width.items()}
cells = {}
for cell, m in grid.items():
    t = summary([m])
    if len(t):
        cells[cell] = f"{fmt_number(t.iloc[0].ID)} / {fmt_number(t.iloc[0].OOD)}"
capt = pd.Series(cells).unstack()
capt.index.name, capt.columns.name = "SFT width", "RL width"
show(capt)
wv = {cell: verdict(m, grid[(0, 0)]) for cell, m in grid.items() if cell != (0, 0) and m in set(st.picks.method)}
far, far_d = max(((c, d) for c in wv for d in ("ID", "OOD")), key=lambda cd: abs(wv[cd[0]][cd[1]].gap))
TESTS.append(("policy head", f"SFT width {far[0]}, RL width {far[1]} against both linear", wv[far]))
glue_number("pt_w_far_gap", wv[far][far_d].gap, signed=True)
glue_text("pt_w_far", f"{far[0]} and {far[1]}")
glue_text("pt_w_far_side", far_d)
glue_number("pt_paper_sft_rank", paper.COMPANION["sft_best_rank"], 0)
glue_number("pt_paper_rl_rank", paper.COMPANION["rl_best_rank"], 0);

# %% [markdown]
# No pair of widths differs from the linear pair on either side; the largest gap in absolute value,
# {glue:text}`pt_w_far_side` with widths {glue:text}`pt_w_far` (SFT, RL), is {glue:text}`pt_w_far_gap` points. The study found
# SFT best at a high rank ({glue:text}`pt_paper_sft_rank`) and RL at a moderate one
# ({glue:text}`pt_paper_rl_rank`). Here neither stage uses the extra capacity: SFT learns
# mostly "no tools", RL after it mostly one subset, and a linear head represents both.

# %% tags=["remove-input"]
claim("width_none", not any(v[d].is_difference for v in wv.values() for d in ("ID", "OOD")),
      "no pair of head widths differs from the linear pair");

# %% [markdown]
# (post-training-lm)=
# ## 5. The language-model selector
#
# The same questions asked of the LM selector of {doc}`fgpo_vs_grpo`, under one budget of
# question visits: pure SFT, pure FGPO, and 20% SFT then 80% FGPO, at LoRA ranks 4, 16 and 64.
# This selector trained on the pool's first {glue:text}`lm_budget` questions, which hold no
# regulator question (their families: {glue:text}`lm_families`); no test question is of that family, so its ID and OOD questions are the policy head's. Every run starts
# from that chapter's format warm-up with a fresh adapter of its rank (so the warm-up is every
# rank's step 0: the **start** row) and keeps its last adapter. Alpha is twice the rank at the
# same learning rates, so a higher rank also takes larger steps. Each run is judged by free
# generation on {glue:text}`lm_n_id` ID questions (the first of `core`) and
# {glue:text}`lm_n_ood` OOD ones (`core` and `microbe`); a format failure counts as wrong. One
# seed: McNemar's test decides each comparison.

# %% tags=["remove-input"]
lm_ready = bool(lm_companion_dir) and (Path(lm_companion_dir) / "picks.parquet").exists()
if lm_ready:
    lm_picks = load_lm_companion(lm_companion_dir)
    lm_manifest = json.loads((Path(lm_companion_dir) / "manifest.json").read_text())
    lm_cfg, lm_families = lm_manifest["config"], lm_manifest.get("training_families", train_families)
    glue_text("lm_families", ", ".join(lm_families))
    lm_seen = set(np.asarray(load_table(Path(study_tables) / "train").family)[:lm_cfg["budget"]].tolist())
    claim("lm_same_split", "regulator" not in lm_seen and lm_seen <= set(lm_families)
          and set(train_families) - set(lm_families) == {"regulator"} and "regulator" not in test_families,
          "the LM selector's training questions, the pool's first ones, hold no regulator question, "
          "and no test question is of that family")
    lm_table = lm_companion_table(lm_picks, tables, train_families)
    ARM_LABELS = {"start": "start (the warm-up)", "sft": "SFT", "fgpo": "FGPO", "sft20-fgpo80": "20% SFT + FGPO"}
    show(lm_table.drop(columns=["n ID", "n OOD", "seeds"]).rename(index=ARM_LABELS, level=0)
         .rename_axis(["arm", "LoRA rank"]), 1)
    glue_number("lm_n_id", int(lm_table["n ID"].iloc[0]), 0)
    glue_number("lm_n_ood", int(lm_table["n OOD"].iloc[0]), 0)
else:
    glue_text("lm_n_id", "–")
    glue_text("lm_n_ood", "–")
    glue_text("lm_families", "–")
    print("The LM selector's study has not been run into this profile's folder; `make lm-companion` runs it.")

# %% tags=["remove-input"]
if lm_ready:
    plot_lm_companion(lm_table, labels=ARM_LABELS)
    plt.show()

# %% tags=["remove-input"]
if lm_ready:
    ranks = sorted(set(lm_table.index.get_level_values(1)))
    L = {(a, r): lm_table.loc[(a, r)] for a, r in lm_table.index}
    lv = {}
    for r in ranks:
        for a in ("sft", "fgpo", "sft20-fgpo80"):
            lv[(a, "start", r)] = tested("LM", f"{ARM_LABELS[a]}, rank {r}, against the start", f"{a}-r{r}",
                                         f"start-r{r}", lm_picks)
        lv[("mix", "fgpo", r)] = tested("LM", f"{ARM_LABELS['sft20-fgpo80']} against FGPO, rank {r}",
                                        f"sft20-fgpo80-r{r}", f"fgpo-r{r}", lm_picks)
        lv[("mix", "sft", r)] = tested("LM", f"{ARM_LABELS['sft20-fgpo80']} against SFT, rank {r}",
                                       f"sft20-fgpo80-r{r}", f"sft-r{r}", lm_picks)
    for lo, hi in ((4, 16), (4, 64), (16, 64)):
        lv[("fgpo-rank", lo, hi)] = verdict(f"fgpo-r{lo}", f"fgpo-r{hi}", lm_picks)
        lv[("sft-rank", lo, hi)] = verdict(f"sft-r{lo}", f"sft-r{hi}", lm_picks)
    TESTS.append(("LM", "FGPO, rank 4 against rank 64", lv[("fgpo-rank", 4, 64)]))

# %% tags=["remove-input"]
if lm_ready:
    start = L[("start", ranks[0])]
    glue_number("lm_start_id", start.ID)
    glue_number("lm_start_ood", start.OOD)
    glue_text("lm_sft_tools", ", ".join(fmt_number(L[("sft", r)].tools) for r in ranks))
    glue_text("lm_sft_ood", ", ".join(fmt_number(L[("sft", r)].OOD) for r in ranks))
    glue_text("lm_fgpo_ood", ", ".join(fmt_number(L[("fgpo", r)].OOD) for r in ranks))
    glue_number("lm_fgpo4_gain", lv[("fgpo", "start", 4)]["OOD"].gap, signed=True)
    glue_number("lm_fgpo64_loss", -lv[("fgpo", "start", 64)]["OOD"].gap)
    glue_number("lm_fgpo64_fail", L[("fgpo", 64)]["format failures (%)"])
    glue_number("lm_mix4_gain", lv[("sft20-fgpo80", "start", 4)]["OOD"].gap, signed=True)
    glue_number("lm_mix64_id", lv[("mix", "fgpo", 64)]["ID"].gap, signed=True)
    glue_number("lm_mix64_ood", lv[("mix", "fgpo", 64)]["OOD"].gap, signed=True)
    glue_number("lm_cost_min", lm_companion_costs(lm_companion_dir)["train seconds"].sum() / 60, 0)
    glue_number("lm_budget", lm_cfg["budget"], 0)
    glue_number("lm_threads", lm_cfg["threads"], 0)

# %% tags=["remove-input"]
if lm_ready:
    # the warm-up on the questions of "FGPO versus GRPO" (all it was evaluated on) and on this study's
    warm_eval = Path(lm_companion_dir).parent / lm_cfg["start"] / "eval"
    warm = pd.concat([pd.DataFrame({"suite": s, "question_id": e.question_id, "mask": e.generation_pick.astype(int)})
                      for s in ("core", "microbe", "mosaic") if (warm_eval / f"{s}.parquet").exists()
                      for e in [pd.read_parquet(warm_eval / f"{s}.parquet", columns=["question_id", "generation_pick"])]])
    wc = domain_correct(warm, tables, train_families)
    glue_number("lm_warm_id_all", 100 * wc.correct[wc.domain == "ID"].mean())
    glue_number("lm_warm_id_core", 100 * wc.correct[(wc.domain == "ID") & (wc.suite == "core")].mean())
    glue_number("lm_warm_id_mosaic", 100 * wc.correct[(wc.domain == "ID") & (wc.suite == "mosaic")].mean())

# %% [markdown]
# The start scores {glue:text}`lm_start_id`% ID and {glue:text}`lm_start_ood`% OOD. {doc}`fgpo_vs_grpo` reports the same warm-up at {glue:text}`lm_warm_id_all`% in domain because its ID
# questions include `mosaic`'s, on which it reads {glue:text}`lm_warm_id_mosaic`% (on all of
# `core`'s, {glue:text}`lm_warm_id_core`%); here they are `core`'s first {glue:text}`lm_n_id`.
#
# **SFT collapses onto the empty subset**, as the paper's SFT selector did: at ranks 4, 16 and
# 64 it calls {glue:text}`lm_sft_tools` tools per question, and OOD falls to
# {glue:text}`lm_sft_ood`%, a difference from the start at every rank. Unlike the policy head's,
# this SFT hurts out of domain, as in the study; with only the last adapter kept, we cannot see
# whether it peaked first.
#
# **FGPO alone** moves OOD to {glue:text}`lm_fgpo_ood`% at ranks 4, 16 and 64: a gain of
# {glue:text}`lm_fgpo4_gain` points at rank 4 (a difference), none at 16, and a loss of
# {glue:text}`lm_fgpo64_loss` at 64 (a difference), where {glue:text}`lm_fgpo64_fail`% of its
# answers were format failures. OOD falls with rank, and ranks 4 and 64 differ: the study too
# found RL best at a moderate rank, though our best is the lowest tried, and rank and step size
# move together here.
#
# **20% SFT then FGPO** is level with pure FGPO at ranks 4 and 16 on both sides, and gains OOD
# over the start only at rank 4 ({glue:text}`lm_mix4_gain` points). At rank 64 it is ahead of
# pure FGPO by {glue:text}`lm_mix64_id` points ID and {glue:text}`lm_mix64_ood` OOD, both
# differences, through pure FGPO's format failures (each counted wrong) rather than a gain of
# its own. It beats pure SFT OOD at every rank. So the study's fixed-budget finding holds for
# the LM selector only at rank 64. No two SFT ranks differ. The whole study took
# {glue:text}`lm_cost_min` minutes of training, {glue:text}`lm_budget` question visits per run
# on {glue:text}`lm_threads` CPU threads.

# %% tags=["remove-input"]
if lm_ready:
    claim("lm_warm_sets", abs(start.ID - 100 * wc.correct[wc.domain == "ID"].mean()) > 1
          and 100 * wc.correct[(wc.domain == "ID") & (wc.suite == "mosaic")].mean() > start.ID,
          "the warm-up's two ID numbers differ because of their question sets; it does better on mosaic's")
    claim("lm_sft_collapse", all(L[("sft", r)].tools < 0.5 and lv[("sft", "start", r)]["OOD"].b_better for r in ranks),
          "SFT calls almost no tools and loses OOD against the start at every rank")
    claim("lm_fgpo_ranks", lv[("fgpo", "start", 4)]["OOD"].a_better and not lv[("fgpo", "start", 16)]["OOD"].is_difference
          and lv[("fgpo", "start", 64)]["OOD"].b_better and L[("fgpo", 64)]["format failures (%)"] > 10
          and L[("fgpo", 4)].OOD > L[("fgpo", 16)].OOD > L[("fgpo", 64)].OOD
          and lv[("fgpo-rank", 4, 64)]["OOD"].is_difference,
          "FGPO gains OOD at rank 4, not at 16, loses at 64 with many format failures; OOD falls with rank")
    claim("lm_mix", all(not lv[("mix", "fgpo", r)][d].is_difference for r in (4, 16) for d in ("ID", "OOD"))
          and lv[("mix", "fgpo", 64)]["ID"].a_better and lv[("mix", "fgpo", 64)]["OOD"].a_better
          and all(lv[("mix", "sft", r)]["OOD"].a_better for r in ranks),
          "the mixed arm is level with FGPO at ranks 4 and 16, ahead at 64, and ahead of SFT OOD at every rank")
    claim("lm_mix_start", lv[("sft20-fgpo80", "start", 4)]["OOD"].a_better
          and not any(lv[("sft20-fgpo80", "start", r)]["OOD"].is_difference for r in ranks if r != 4),
          "the mixed arm gains OOD over the start only at rank 4")
    claim("lm_sft_ranks", not any(lv[("sft-rank", a, b)][d].is_difference for a, b in ((4, 16), (4, 64), (16, 64))
                                  for d in ("ID", "OOD")), "no two SFT ranks differ");

# %% [markdown]
# ## What the two selectors say
#
# Both selectors reproduce the first half of the study's second finding: RL does most of the
# work. The rest turns on what SFT learns. The language model learns to call no tools and
# loses OOD at once. The policy head mostly learns the same, but the regulator family also
# teaches it the motif scan, so its OOD accuracy climbs to the last epoch. A brief SFT stage
# before RL helps the policy head in domain (with GRPO at every split, with FGPO at 50 and 80%)
# and costs it out of domain, where
# pure RL keeps the motif scan; it helps the LM selector only at rank 64, where pure FGPO
# failed its format. Rank matters only for the LM selector's RL, where a higher rank also takes
# larger steps. The tests (the row's setting against the named one, gap in points; p: paired
# t-test over seeds for the policy head, McNemar's for the LM selector):

# %% tags=["remove-input"]
claim("summary", min(gain_ood.min(), gain_id.min()) > 10 and ood_peak == eL
      and sft_tf["last"] - sft_tf["first"] > 30 and all(v["OOD"].b_better for v in mixed_vs_pure["fgpo"])
      and all(v["ID"].a_better for v in mixed_vs_pure["grpo"]) and all(v["ID"].a_better for v in mixed_vs_pure["fgpo"][1:])
      and not mixed_vs_pure["fgpo"][0]["ID"].is_difference and all(v["OOD"].b_better for v in mixed_vs_pure["grpo"])
      and b_motif["pure"] > 2 * b_motif["mixed"] and not any(v[d].is_difference for v in wv.values() for d in ("ID", "OOD")),
      "RL does most of the work; the head's SFT climbs OOD to the last epoch through the motif scan; a warm start "
      "helps the head ID (GRPO at every split, FGPO at 50 and 80%) and costs it OOD, where pure RL keeps the motif scan; widths do not matter");

# %% tags=["remove-input"]
rows = []
for sel, comp, v in TESTS:
    row = {"selector": sel, "comparison": comp}
    for d in ("ID", "OOD"):
        if d in v:
            row[f"{d} gap"] = fmt_number(v[d].gap, 1, signed=True) + ("\u00a0*" if v[d].is_difference else "")
            row[f"{d} p"] = fmt_p(v[d].p_seeds if len(v[d].p_mcnemar) > 1 else v[d].p_mcnemar[0]).replace("< ", "<\u00a0")
    rows.append(row)
show(pd.DataFrame(rows).set_index(["selector", "comparison"]))

# %% [markdown]
# \* a difference by the book's rule.
#
# ## Re-running it
#
# ```bash
# .venv/bin/fgpo study --methods companion --keep last --checkpoints 16 --out-dir runs/cpu/companion
# make lm-companion   # the LM selector's study (resumable)
# ```
#
# The method lists are `fgpo_core.experiments.study.COMPANION`.

# %% tags=["remove-input"]
print(paper.COMPANION_CITATION)
