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
# # Exact versus sampled policy gradients
#
# With 16 subsets per question, the expectation a policy-gradient method tries to
# estimate can simply be computed. This chapter writes down the exact objective and
# its gradient, implements it next to GRPO's sampled estimator, and races them on a
# tabular bandit where nothing but the estimator differs (paper, Sections 2.3-3.1,
# Eq. 2-8, and the coverage-dial ablation).

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the synthetic table; run r of an arm uses seed + r
n_questions = 1000  # questions in the synthetic reward table
epochs = 20  # passes over the questions, identical for every arm
n_seeds = 3  # independent runs per arm (bands show their spread)
study_questions = 200  # questions in the gradient-estimator study
study_draws = 200  # visits simulated per question and estimator
extra_arms = "rloo,grpo-clip-u2"  # more arms: any registered method name, comma-separated ("": none)

# %% tags=["hide-input"]
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import torch
from fgpo_core.algorithms.bandit import BanditConfig, gradient_estimator_study, run_race
from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, show_source
from fgpo_core.book.claims import claim, glue_number
from fgpo_core.book.plots import plot_estimator_study, plot_race, set_style
from fgpo_core.core import estimators as obj
from fgpo_core.core.dead_groups import dead_group_grid
from fgpo_core.reports.tables import settings_table, show
from fgpo_core.table.synthetic import SyntheticTableConfig, make_synthetic_table

set_style()
torch.manual_seed(seed)
glue_number("n_questions", n_questions, 0)
glue_number("epochs", epochs, 0)
_ = glue_number("n_seeds", n_seeds, 0)

# %% [markdown]
# ## Background: the objective, exactly
#
# The selector scores every subset $a$ of the $n$ tools for a question $s$. For a
# language-model selector the score is the per-token mean log-probability of the
# subset's answer string, $\ell(a \mid s)$ (Eq. 4); here, in a tabular policy, it is
# simply a free logit per question and subset. Either way the policy over subsets
# is $q = \operatorname{softmax}(\ell)$ and the objective is (Eq. 2, with the entropy
# bonus of Eq. 5)
#
# $$
# J_\beta(\theta) = \mathbb{E}_s \Big[ \sum_{a} q_\theta(a \mid s)\, r(s,a)
#     + \beta\, \mathcal{H}\big(q_\theta(\cdot \mid s)\big) \Big], \qquad \beta = 0.03 .
# $$
#
# Only the questions are minibatched; the sum over actions is computed in full. Its
# gradient with respect to the logits of one question is (Eq. 8)
#
# $$
# \frac{\partial J_s}{\partial \ell_a} = q(a \mid s)\,\big(r(s,a) - J_s\big),
# \qquad J_s = \sum_b q(b \mid s)\, r(s,b),
# $$
#
# plus $-\beta\, q_a(\log q_a + \mathcal{H})$ from the entropy bonus. Every subset whose
# reward differs from the question's current expected reward is pushed up or down,
# in proportion to its probability, on every visit.
#
# GRPO estimates a gradient of the same kind from $G$ sampled subsets, weighting
# each sample's log-probability by its group-normalised advantage (Eq. 3). When all
# $G$ rewards agree the estimate is exactly zero: a dead group
# (see {doc}`dead_groups`).

# %% [markdown]
# ## The code
#
# The exact objective, as the library implements it. A boolean `mask` restricts the
# sum to the subsets actually evaluated, which gives the budgeted *k-subset*
# variant used later in this chapter.

# %% tags=["remove-input"]
show_source(obj.fgpo_objective)

# %% tags=["remove-input"]
show_source(obj.fgpo_loss)

# %% [markdown]
# GRPO's advantages, with the paper's population standard deviation by default and
# TRL's Bessel-corrected variant as an option, and its one-step surrogate loss:

# %% tags=["remove-input"]
show_source(obj.grpo_advantages)

# %% tags=["remove-input"]
show_source(obj.grpo_loss)

# %% [markdown]
# ## Eq. 8 against automatic differentiation
#
# The closed-form gradient `fgpo_logit_gradient` and PyTorch's autograd through
# `fgpo_objective` must agree, with and without the entropy bonus.

# %%
g = torch.Generator().manual_seed(seed)
logits = torch.randn(64, 16, generator=g, dtype=torch.float64, requires_grad=True)
rewards = torch.randint(0, 2, (64, 16), generator=g).double() * 2 - 1
rows = []
for beta in (0.0, 0.03, 0.5):
    objective = obj.fgpo_objective(logits, rewards, beta).sum()
    (auto,) = torch.autograd.grad(objective, logits)
    closed = obj.fgpo_logit_gradient(logits.detach(), rewards, beta)
    rows.append({"beta": beta,
                 "max |autograd - Eq. 8|": float((auto - closed).abs().max()),
                 "max |gradient|": float(auto.abs().max())})
show(pd.DataFrame(rows), **{"beta": "{:.2f}", "max |autograd - Eq. 8|": "{:.1e}",
                            "max |gradient|": "{:.3f}"})

# %% [markdown]
# ## The paper's and TRL's advantages
#
# The two standard deviations differ by the factor $\sqrt{G/(G-1)}$, so the
# advantages differ by a constant factor per group (and TRL's larger $\varepsilon$).
# They agree on which groups are dead.

# %%
grp = torch.tensor([[1.1, 0.9, -0.9, 1.1, -1.1, 0.9],
                    [0.9] * 6,
                    [1.0, -1.0, 1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
a_paper = obj.grpo_advantages(grp, "paper")[:, 0].numpy()
a_trl = obj.grpo_advantages(grp, "trl")[:, 0].numpy()
dead = obj.dead_group_mask(grp).numpy()
ratio = np.divide(a_paper, a_trl, out=np.full(3, np.nan), where=~dead)
show(pd.DataFrame({"group": ["live", "dead", "one wrong"],
                   "paper A_1": a_paper, "TRL A_1": a_trl,
                   "ratio": ratio,
                   "sqrt(G/(G-1))": np.sqrt(6 / 5),
                   "dead": dead}), 4)

# %% [markdown]
# ## A race with nothing but the estimator changed
#
# We reuse the synthetic reward table of {doc}`dead_groups`, here with
# {glue:text}`n_questions` questions. Each question has its own 16 logits, all starting
# at zero (the uniform policy), and every arm visits the same questions, in the same
# order, in minibatches of 16, for the same number of epochs ({glue:text}`epochs`). Parameters move by plain SGD, so a question's logits change only when it is
# visited. The arms:
#
# - **FGPO**: the exact objective over all 16 subsets (16 reward look-ups per visit);
# - **k-subset** ($k = 2, 4, 8$): the exact objective over $k$ uniformly drawn subsets,
#   $q$ renormalised on them, the paper's *coverage dial* ($k$ look-ups per visit);
# - **GRPO (Eq. 1)**: $G = 6$ samples from the policy, the same Eq. 1 reward;
# - **GRPO (differential)**: as the paper's GRPO arm, with
#   $0.95\, r_\text{diff} + 0.05\, r_\text{fmt}$ (every tabular completion parses);
# - and any other method of the estimator registry named in the parameter `extra_arms`
#   (by default RLOO and GRPO with PPO's clipped ratio, two updates per draw): the race
#   reads its label, colour and loss from the registry, so a newly registered estimator
#   joins it without another edit.
#
# A run's settings are one dataclass, `BanditConfig`; its fields and their defaults:

# %% tags=["remove-input"]
show(settings_table(BanditConfig), verbatim=["setting"])

# %% tags=["hide-input"]
table = make_synthetic_table(SyntheticTableConfig(n_questions=n_questions), seed=seed)
arms = [BanditConfig(method="fgpo", epochs=epochs)]
arms += [BanditConfig(method="fgpo-k", k=k, epochs=epochs) for k in (2, 4, 8)]
arms += [BanditConfig(method="grpo", reward=rw, epochs=epochs) for rw in ("eq1", "differential")]
arms += [BanditConfig(method=m.strip(), epochs=epochs) for m in extra_arms.split(",") if m.strip()]
race = run_race(table, arms, n_seeds=n_seeds, seed=seed)
ceil = table.ceilings()

# %% tags=["hide-input"]
plot_race(race)
plt.show()

# %% [markdown]
# The closed-form curves (solid) score each arm's *current* policy with Eq. 7 under
# Eq. 1 reward classes, whatever that arm trains on; the dotted lines are what GRPO
# actually observed in its own groups, under its own reward (TRL's
# `frac_reward_zero_std`), smoothed over half an epoch.

# %% tags=["remove-cell"]
glue_number("oracle", ceil["oracle"])
_ = glue_number("no_tool", ceil["no_tool"])

# %% [markdown]
# The table gives each arm's mean over its runs, one per seed ({glue:text}`n_seeds` in
# all); for scale, the oracle scores {glue:text}`oracle`% on this table and No-Tool
# {glue:text}`no_tool`%.

# %% tags=["hide-input"]
summary = race.summary()
look = summary["reward look-ups"]
if (look == look.round()).all():  # a count: every run of an arm pays the same look-ups
    summary["reward look-ups"] = look.round().astype(int)
show(summary.rename_axis("method"), 3)

# %% [markdown]
# ## The coverage dial
#
# The paper's budgeted variant evaluates only $k$ of the 16 subsets per visit and
# found peak accuracy strictly increasing in $k$, with even $k = 2$ above GRPO. In
# the tabular race the dial shows up most clearly early in training, before every arm
# has had enough visits to find each question's best subset.

# %% tags=["hide-input"]
k_of = {cfg.name: (cfg.k or table.n_actions) for cfg in arms if cfg.estimator_family in ("fgpo", "fgpo-k")}
dial = summary.loc[list(k_of), ["accuracy after 1 epoch (%)", "final accuracy (%)"]]
dial.index = pd.Index([k_of[n] for n in dial.index], name="k")
dial = dial.sort_index()
dial["paper: peak GenomeQA accuracy (%)"] = pd.Series(paper.COVERAGE_DIAL)
show(dial, 2)

# %% tags=["remove-cell"]
first_epoch = dial["accuracy after 1 epoch (%)"]
glue_number("dial_k2", first_epoch.loc[2])
_ = glue_number("dial_k16", first_epoch.loc[16])

# %% [markdown]
# After one epoch, accuracy rises with $k$ on the synthetic table, from
# {glue:text}`dial_k2`% at $k = 2$ to {glue:text}`dial_k16`% with all 16 subsets. The
# paper's numbers come from a shared language-model policy evaluated on held-out
# questions; ours from per-question logits evaluated on the questions they were trained
# on, so only the ordering, not the level, is comparable.

# %% tags=["remove-input"]
claim("dial-monotone", bool(np.all(np.diff(first_epoch.to_numpy()) >= 0)),
      "after one epoch, accuracy does not fall as k grows")

# %% [markdown]
# ## How good is one visit's gradient?
#
# Here we stop training and look at single estimates. For a set of questions and a
# fixed policy, each estimator produces a logit gradient from one visit; we compare
# it with the exact gradient of Eq. 8 ($\beta = 0$) by cosine similarity, which
# ignores GRPO's normalisation, and count how often the estimate is exactly zero.
# $k = 16$ is the exact gradient itself, a check on the machinery. We do this at the
# uniform starting policy and at the final policy of the first GRPO (Eq. 1) run, a
# concentrated policy of the kind GRPO produces.

# %% tags=["hide-input"]
estimators = {"GRPO G=2": ("grpo", 2), "GRPO G=6": ("grpo", 6), "GRPO G=16": ("grpo", 16),
              "k=2": ("fgpo-k", 2), "k=4": ("fgpo-k", 4), "k=8": ("fgpo-k", 8),
              f"k={table.n_actions} (exact)": ("fgpo-k", table.n_actions)}
rng = np.random.default_rng(seed)
qs = rng.choice(table.n_questions, size=min(study_questions, table.n_questions), replace=False)
r_eq1 = table.rewards("eq1")[qs]
grpo_name = next(n for n in race.order if n.startswith("GRPO (Eq. 1"))
at = {"uniform policy": np.full((len(qs), table.n_actions), 1 / table.n_actions),
      "trained GRPO policy": race.final_policy(grpo_name)[qs]}
study = pd.concat([gradient_estimator_study(p, r_eq1, estimators, n_draws=study_draws, seed=seed).assign(policy=name)
                   for name, p in at.items()], ignore_index=True)
plot_estimator_study(study, list(estimators))
plt.show()
quality = study.groupby(["policy", "estimator"], sort=False).agg(
    mean_cosine=("cosine", "mean"), zero_estimates_pct=("zero", lambda z: 100 * z.mean()),
    rel_error_after_rescaling=("rel_error", "median")).unstack(0)
show(quality, 3)

# %% tags=["remove-cell"]
cos_u = quality[("mean_cosine", "uniform policy")]
zero_u = quality[("zero_estimates_pct", "uniform policy")]
glue_number("cos_exact", cos_u.iloc[-1], 3)
glue_number("cos_g2", cos_u["GRPO G=2"], 2)
glue_number("cos_g16", cos_u["GRPO G=16"], 2)
glue_number("zero_g2", zero_u["GRPO G=2"])
_ = glue_number("zero_g6", zero_u["GRPO G=6"])

# %% [markdown]
# With all 16 subsets the estimate is Eq. 8 itself (cosine {glue:text}`cos_exact` at
# both policies), which checks the machinery. Every sampled estimate points further from
# it the fewer subsets it sees: at the uniform policy GRPO's mean cosine climbs from
# {glue:text}`cos_g2` with $G = 2$ to {glue:text}`cos_g16` with $G = 16$, and its estimate
# is exactly zero, a dead group, on {glue:text}`zero_g2`% of visits at $G = 2$ and
# {glue:text}`zero_g6`% at $G = 6$.

# %% tags=["remove-input"]
grpo_rows = ["GRPO G=2", "GRPO G=6", "GRPO G=16"]
claim("estimator-quality",
      bool((quality["mean_cosine"].iloc[-1] > 0.999).all()
           and all(np.all(np.diff(quality[("mean_cosine", p)][grpo_rows].to_numpy()) > 0) for p in at)
           and zero_u["GRPO G=2"] > zero_u["GRPO G=6"] >= zero_u["GRPO G=16"]),
      "the exact estimator matches Eq. 8; GRPO's cosine rises with G and its zero estimates fall")

# %% [markdown]
# ## Dead groups of trained policies (the shape of Table 15)
#
# Now we can fill the paper's Table 15 with policies that were actually trained:
# the final policies of the first run of each arm, scored by Eq. 7 under Eq. 1
# reward classes.

# %% [markdown]
# **This book** (synthetic table, tabular policies, % dead):

# %% tags=["hide-input"]
trained = {"Uniform": np.full((table.n_questions, table.n_actions), 1 / table.n_actions)}
trained.update({name: race.final_policy(name) for name in race.order if not name.startswith("k-subset")})
t15 = dead_group_grid(trained, table.rewards("eq1"))
show(t15.rename_axis("policy"))

# %% [markdown]
# **Paper** (GenomeQA, Table 15, % dead):

# %% tags=["remove-input"]
show(paper.TABLE15.rename_axis("policy"))

# %% [markdown]
# One difference is structural. The paper's FGPO row is its *generation* distribution
# $p_\text{gen}$ after training, which it never samples from, and which ended up almost
# deterministic (its row in the paper's table above). In the tabular bandit there is only one
# distribution, $q$, and FGPO's entropy bonus keeps it spread over the subsets that
# tie on correctness. GRPO, whose samples are its only signal, concentrates further, and
# its row lies above FGPO's.

# %% tags=["remove-input"]
claim("grpo-row-above-fgpo", bool((t15.loc[grpo_name, ["G=2", "G=4", "G=6"]] > t15.loc["FGPO", ["G=2", "G=4", "G=6"]]).all()),
      "the trained GRPO (Eq. 1) policy leaves more groups dead than FGPO's at G = 2, 4 and 6")

# %% [markdown]
# ## Paper versus this book

# %% tags=["hide-input"]
fg, gr = summary.loc["FGPO"], summary.loc[grpo_name]
gr_diff = summary.loc[next(n for n in race.order if "differential" in n)]
steps = race.steps
last_epoch = steps[(steps.arm == gr_diff.name) & (steps.epoch > steps.epoch.max() - 1)]
uniform_dead = dead_group_grid({"u": trained["Uniform"]}, table.rewards("eq1")).iloc[0]["G=6"]
show(paper_vs_book({
    "FGPO accuracy (%)": (paper.MAIN_GENOMEQA["FGPO"], fg["final accuracy (%)"]),
    "GRPO accuracy (%)": (paper.MAIN_GENOMEQA["GRPO"], gr_diff["final accuracy (%)"]),
    "Oracle (%)": (paper.MAIN_GENOMEQA["Oracle"], ceil["oracle"]),
    "Uniform policy, dead at G=6 (%)": (paper.DEAD_GROUPS["uniform_G6"], uniform_dead),
    "GRPO, dead at G=6, Eq. 1 classes (%)": (paper.DEAD_GROUPS["grpo_converged_G6"], gr["dead at G=6 (%)"]),
    "GRPO (differential), observed dead groups, last epoch (%)": (paper.DEAD_GROUPS["live_dead_end"],
                                                                   last_epoch["dead_observed"].mean()),
    "share of dead mass on wrong answers, GRPO (%)": (paper.DEAD_GROUPS["dead_mass_on_wrong_answers"],
                                                       gr["dead mass on wrong answers (%)"]),
    "FGPO top-action mass": (paper.DEAD_GROUPS["fgpo_top_action_mass"], fg["top-action mass"]),
}, paper_label="paper (GenomeQA)", book_label="this book (tabular bandit)", digits=2), 2)

# %% [markdown]
# The paper's GRPO accuracy is that of its differential-reward arm, so the table sets
# it beside ours. Accuracies are not comparable in level: the paper's are on held-out
# questions with a language-model policy, ours on the training questions of a
# tabular policy, where enough visits let any unbiased method find each question's
# best subset. What carries over is the mechanism.

# %% tags=["remove-cell"]
fg_first = glue_number("fg_first", summary.loc["FGPO", "accuracy after 1 epoch (%)"])
gr_first = glue_number("gr_first", summary.loc[grpo_name, "accuracy after 1 epoch (%)"])
glue_number("fg_final", fg["final accuracy (%)"])
glue_number("gr_final", gr["final accuracy (%)"])
glue_number("gr_diff_final", gr_diff["final accuracy (%)"])
glue_number("fg_lookups", fg["reward look-ups"], 0)
glue_number("gr_lookups", gr["reward look-ups"], 0)
glue_number("fg_entropy", fg["entropy (nats)"], 2)
glue_number("gr_entropy", gr["entropy (nats)"], 2)
glue_number("fg_dead6", fg["dead at G=6 (%)"])
glue_number("gr_dead6", gr["dead at G=6 (%)"])
_ = glue_number("gr_dead_wrong", gr["dead mass on wrong answers (%)"])

# %% [markdown]
# - After one visit per question, FGPO's greedy accuracy is {glue:text}`fg_first`% and
#   GRPO's (Eq. 1) {glue:text}`gr_first`%: the exact gradient already orders each
#   question's subsets by reward, because at the uniform start Eq. 8 is proportional to
#   $r(s,a) - \bar r(s)$.
# - At the end, FGPO reaches the oracle's {glue:text}`fg_final`%; GRPO (Eq. 1) ends at
#   {glue:text}`gr_final`% and GRPO (differential) at {glue:text}`gr_diff_final`%.
# - FGPO read {glue:text}`fg_lookups` rewards, GRPO {glue:text}`gr_lookups`: per look-up,
#   compare the upper-right panel.
# - GRPO's policy is the more concentrated (entropy {glue:text}`gr_entropy` nats against
#   FGPO's {glue:text}`fg_entropy`), and its closed-form dead-group rate at $G = 6$ is
#   {glue:text}`gr_dead6`% against FGPO's {glue:text}`fg_dead6`%; of GRPO's dead mass,
#   {glue:text}`gr_dead_wrong`% sits on wrong answers, questions GRPO can no longer learn
#   from.

# %% tags=["remove-input"]
claim("fgpo-first-visit-ahead", fg_first > gr_first, "after one visit per question FGPO is ahead of GRPO (Eq. 1)")
claim("fgpo-reaches-oracle", abs(fg["final accuracy (%)"] - ceil["oracle"]) < 0.05, "FGPO ends at the oracle")
claim("grpo-concentrates", gr["entropy (nats)"] < fg["entropy (nats)"] and gr["dead at G=6 (%)"] > fg["dead at G=6 (%)"],
      "GRPO's final policy has lower entropy and more dead groups at G = 6 than FGPO's")

# %% [markdown]
# ## References
#
# - Paper, Sections 2.3-3.1 (Eq. 2-6, Algorithm 1), Eq. 8 (Appendix), the coverage-dial
#   ablation and Table 15.
# - Shao et al. (2024), DeepSeekMath (GRPO); TRL's `GRPOTrainer` (advantages with Bessel
#   standard deviation and $\varepsilon = 10^{-4}$).
# - Williams (1992), REINFORCE.
