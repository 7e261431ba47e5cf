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
# With 16 subsets per question, the expectation a policy-gradient method estimates can
# simply be computed. This chapter writes down the exact objective and its gradient,
# implements it beside GRPO's sampled estimator, and races them on a tabular bandit where
# nothing but the estimator differs (paper, Sections 2.3-3.1, Eq. 2-8, the coverage dial).

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the synthetic table; run r of an arm uses seed + r
n_questions = 1000  # questions in the synthetic reward table
epochs = 20  # passes over the questions, identical for every arm
n_seeds = 3  # independent runs per arm (bands show their spread)
study_questions = 200  # questions in the gradient-estimator study
study_draws = 200  # visits simulated per question and estimator
extra_arms = "rloo,grpo-clip-u2"  # more arms: any registered method name, comma-separated ("": none)

# %% tags=["remove-input"]
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
from fgpo_core.core.registry import resolve_regularizer
from fgpo_core.reports.tables import show
from fgpo_core.table.synthetic import SyntheticTableConfig, make_synthetic_table

set_style()
torch.manual_seed(seed)
glue_number("n_questions", n_questions, 0)
glue_number("epochs", epochs, 0)
_ = glue_number("n_seeds", n_seeds, 0)

# %% [markdown]
# ## Background: the objective, exactly
#
# The selector scores every subset $a$ of the $n$ tools for a question $s$: a
# language-model selector by the per-token mean log-probability of the subset's answer
# string, $\ell(a \mid s)$ (Eq. 4), a tabular policy by a free logit per question and
# subset. The policy is $q = \operatorname{softmax}(\ell)$ and the objective (Eq. 2, with
# the entropy bonus of Eq. 5)
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
# plus $-\beta\, q_a(\log q_a + \mathcal{H})$ from the entropy bonus: on every visit, every
# subset whose reward differs from the question's expected reward is pushed up or down in
# proportion to its probability. GRPO estimates a gradient of the same kind from $G$
# sampled subsets, weighting each sample's log-probability by its group-normalised
# advantage (Eq. 3); when all $G$ rewards agree the estimate is zero, a dead group
# ({doc}`dead_groups`).

# %% [markdown]
# ## The code
#
# The exact objective and its loss, as the library implements them; a boolean `mask`
# restricts the sum to the subsets evaluated, the budgeted *k-subset* variant.

# %% tags=["remove-input"]
show_source(obj.fgpo_objective)

# %% tags=["remove-input"]
show_source(obj.fgpo_loss)

# %% [markdown]
# GRPO's advantages (the paper's population standard deviation, or TRL's Bessel-corrected
# one) and its one-step surrogate loss:

# %% tags=["remove-input"]
show_source(obj.grpo_advantages)

# %% tags=["remove-input"]
show_source(obj.grpo_loss)

# %% [markdown]
# ## Eq. 8 against automatic differentiation
#
# The closed-form gradient `fgpo_logit_gradient` and PyTorch's autograd through
# `fgpo_objective` agree, with and without the entropy bonus (64 random questions):

# %% tags=["hide-input"]
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
# The two standard deviations differ by the factor $\sqrt{G/(G-1)}$
# ({glue:text}`bessel_6` at $G = 6$), so the advantages differ by that factor per group
# (and TRL's larger $\varepsilon$); they agree on which groups are dead. The first
# advantage of three groups of six:

# %% tags=["hide-input"]
grp = torch.tensor([[1.1, 0.9, -0.9, 1.1, -1.1, 0.9],
                    [0.9] * 6,
                    [1.0, -1.0, 1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
a_paper = obj.grpo_advantages(grp, "paper")[:, 0].numpy()
a_trl = obj.grpo_advantages(grp, "trl")[:, 0].numpy()
dead = obj.dead_group_mask(grp).numpy()
ratio = np.divide(a_paper, a_trl, out=np.full(3, np.nan), where=~dead)
glue_number("bessel_6", np.sqrt(6 / 5), 4)
show(pd.DataFrame({"group": ["live", "dead", "one wrong"], "paper A_1": a_paper, "TRL A_1": a_trl,
                   "paper / TRL": ratio, "dead": dead}), 4)

# %% [markdown]
# ## A race with nothing but the estimator changed
#
# On the synthetic reward table of {doc}`dead_groups` ({glue:text}`n_questions`
# questions), each question has its own 16 logits, starting at zero (uniform); every arm
# visits the same questions in the same order, in minibatches of 16, for
# {glue:text}`epochs` epochs, by plain SGD. The arms:
#
# - **FGPO**: the exact objective over all 16 subsets (16 look-ups per visit);
# - **k-subset** ($k = 2, 4, 8$): the exact objective over $k$ uniformly drawn subsets, $q$
#   renormalised on them, the paper's *coverage dial* ($k$ look-ups per visit);
# - **GRPO (Eq. 1)**: $G = 6$ samples from the policy, the Eq. 1 reward;
# - **GRPO (differential)**: the paper's GRPO arm, $0.95\, r_\text{diff} + 0.05\,
#   r_\text{fmt}$ (every tabular completion parses);
# - **RLOO** and **GRPO with PPO's clipped ratio**, on the differential reward.
#
# The settings every arm shares, and the few that differ (folded):

# %% tags=["hide-input"]
table = make_synthetic_table(SyntheticTableConfig(n_questions=n_questions), seed=seed)
arms = [BanditConfig(method="fgpo", epochs=epochs)]
arms += [BanditConfig(method="fgpo-k", k=k, epochs=epochs) for k in (2, 4, 8)]
arms += [BanditConfig(method="grpo", reward=rw, epochs=epochs) for rw in ("eq1", "differential")]
arms += [BanditConfig(method=m.strip(), epochs=epochs) for m in extra_arms.split(",") if m.strip()]
race = run_race(table, arms, n_seeds=n_seeds, seed=seed)
ceil = table.ceilings()

# %% tags=["remove-input", "hide-output"]
first, resolved = arms[0], {cfg.name: cfg.resolved() for cfg in arms}
sampled = {n: s for n, (est, s, _) in resolved.items() if est.kind == "sampled"}
clipped = [s for n, s in sampled.items() if "clipped" in n]
variant = {"paper": "population (the paper's)", "trl": "Bessel-corrected (TRL's)"}
shared = {
    "passes over the questions (epochs)": f"{first.epochs}",
    "questions per minibatch": f"{first.batch_size}",
    "step size (plain SGD, per question visit)": f"{first.lr:g}",
    "entropy bonus β (FGPO and k-subset)": f"{resolve_regularizer(*resolved['FGPO'][:2])[1]:g}",
    "group size G (sampled arms)": ", ".join(sorted({f"{s.G}" for s in sampled.values()})),
    "GRPO's standard deviation (Eq. 3)": ", ".join(sorted({variant[s.grpo_variant] for s in sampled.values()})),
    "regularizer of the sampled arms": "none (as in the paper)",
    "clipped arm: updates per draw, clip ε": ", ".join(f"{s.updates}, {s.clip:g}" for s in clipped) or "–",
    "runs per arm (seeds)": f"{n_seeds}",
}
show(pd.Series(shared, name="value").rename_axis("setting").reset_index())

# %% tags=["remove-input"]
claim("extra-arms-as-said", any(n.startswith("RLOO (differential") for n in race.order)
      and any(n.startswith("GRPO (clipped ratio; differential") for n in race.order)
      and all(resolve_regularizer(*resolved[n][:2])[1] == 0 or resolve_regularizer(*resolved[n][:2])[0].name == "none"
              for n in sampled),
      "the race includes RLOO and clipped GRPO on the differential reward, and no sampled arm is regularized");

# %% tags=["hide-input"]
plot_race(race)
plt.show()

# %% [markdown]
# The closed-form dead-group panel scores each arm's *current* policy with Eq. 7 under
# Eq. 1's classes, whatever it trains on; the panel below it is what each sampled arm observed
# in its own groups under its own reward (TRL's `frac_reward_zero_std`), first run, smoothed
# over half an epoch. There the two GRPO arms on the differential reward, with and without the
# clipped ratio, differ by {glue:text}`clip_gap` points a step on average.

# %% tags=["remove-input"]
_obs = race.steps.dropna(subset=["dead_observed"])
_obs = _obs[_obs.run == 0].assign(e=lambda d: d.epoch.astype(int)).groupby(["arm", "e"]).dead_observed.mean().unstack(0)
_pair = [n for n in race.order if n.startswith("GRPO (differential") or n.startswith("GRPO (clipped ratio; differential")]
claim("clipped-pair", len(_pair) == 2, "both GRPO arms on the differential reward are in the race")
glue_number("clip_gap", float((_obs[_pair[0]] - _obs[_pair[1]]).abs().mean()));

# %% tags=["remove-cell"]
glue_number("oracle", ceil["oracle"])
_ = glue_number("no_tool", ceil["no_tool"])

# %% [markdown]
# Each arm's mean over {glue:text}`n_seeds` seeds (the k-subset arms in the next table);
# for scale, the oracle scores {glue:text}`oracle`% on this table and No-Tool
# {glue:text}`no_tool`%.

# %% tags=["remove-input"]
summary = race.summary()
look = summary["reward look-ups"]
if (look == look.round()).all():  # a count: every run of an arm pays the same look-ups
    summary["reward look-ups"] = look.round().astype(int)
SHOWN = ["accuracy after 1 epoch (%)", "final accuracy (%)", "entropy (nats)", "dead at G=6 (%)", "reward look-ups"]
not_k = [n for n in summary.index if not n.startswith("k-subset")]
show(summary.loc[not_k, SHOWN].rename(columns={"dead at G=6 (%)": "dead at G = 6 (%)"}).rename_axis("method"),
     **{"entropy (nats)": "{:.2f}"})

# %% [markdown]
# ## The coverage dial
#
# The paper's budgeted variant evaluates $k$ of the 16 subsets per visit; its peak accuracy
# rose strictly with $k$, even $k = 2$ above GRPO. In the race the dial shows most clearly
# early, before every arm has had the visits to find each question's best subset.

# %% tags=["remove-input"]
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
# After one epoch accuracy rises with $k$, from {glue:text}`dial_k2`% at $k = 2$ to
# {glue:text}`dial_k16`% with all 16 subsets. The paper's numbers are a shared
# language-model policy on held-out questions, ours per-question logits on the questions
# they trained on: only the ordering is comparable.

# %% tags=["remove-input"]
claim("dial-monotone", bool(np.all(np.diff(first_epoch.to_numpy()) >= 0)),
      "after one epoch, accuracy does not fall as k grows")

# %% [markdown]
# ## How good is one visit's gradient?
#
# Now single estimates: for a fixed policy, each estimator's logit gradient from one visit,
# compared with Eq. 8 ($\beta = 0$) by cosine similarity (blind to GRPO's normalisation),
# and how often it is exactly zero; at the uniform start and at the final policy of the
# first GRPO (Eq. 1) run, a concentrated one.

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
    mean_cosine=("cosine", "mean"), zero_estimates_pct=("zero", lambda z: 100 * z.mean())).unstack(0)
shown = pd.DataFrame({f"{'cosine' if m == 'mean_cosine' else 'zero (%)'}, {p.split()[0]} policy": quality[(m, p)]
                      for m in ("mean_cosine", "zero_estimates_pct") for p in at})
show(shown.rename_axis("estimator"), 3, **{c: "{:.1f}" for c in shown.columns if "zero" in c})

# %% tags=["remove-cell"]
cos_u = quality[("mean_cosine", "uniform policy")]
zero_u = quality[("zero_estimates_pct", "uniform policy")]
glue_number("cos_exact", cos_u.iloc[-1], 3)
glue_number("cos_g2", cos_u["GRPO G=2"], 2)
glue_number("cos_g16", cos_u["GRPO G=16"], 2)
glue_number("zero_g2", zero_u["GRPO G=2"])
_ = glue_number("zero_g6", zero_u["GRPO G=6"])

# %% [markdown]
# With all 16 subsets the estimate is Eq. 8 itself (cosine {glue:text}`cos_exact`), a check
# on the machinery. A sampled estimate points further from it the fewer subsets it sees: at
# the uniform policy GRPO's mean cosine climbs from {glue:text}`cos_g2` at $G = 2$ to
# {glue:text}`cos_g16` at $G = 16$, and its estimate is zero, a dead group, on
# {glue:text}`zero_g2`% of visits at $G = 2$ and {glue:text}`zero_g6`% at $G = 6$.

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
# Table 15 with trained policies (each arm's final policy, Eq. 7 under Eq. 1's classes, %
# dead, mean over the {glue:text}`n_seeds` seeds), with the paper's trained rows below:

# %% tags=["remove-input"]
trained = {"uniform": np.full((table.n_questions, table.n_actions), 1 / table.n_actions)}
t15 = dead_group_grid(trained, table.rewards("eq1"))
for name in (n for n in race.order if not n.startswith("k-subset")):
    grids = [dead_group_grid({name: race.final_policy(name, i)}, table.rewards("eq1")) for i in range(n_seeds)]
    t15 = pd.concat([t15, sum(grids) / n_seeds])
GRID = ["G=2", "G=4", "G=6", "G=16"]
both = pd.concat([t15[GRID], paper.TABLE15.loc[["GRPO", "FGPO"], GRID].rename(index=lambda n: f"paper: {n}")])
both.columns = [c.replace("=", " = ") for c in both.columns]
show(both.rename_axis("policy"))

# %% [markdown]
# One difference is structural: the paper's FGPO row is its *generation* distribution
# $p_\text{gen}$, which it never samples from and which ended almost deterministic. The
# bandit has one distribution, $q$, which FGPO's entropy bonus keeps spread over subsets
# that tie on correctness; GRPO (Eq. 1), whose samples are its only signal, concentrates further,
# and its row lies above FGPO's.

# %% tags=["remove-input"]
claim("grpo-row-above-fgpo", bool((t15.loc[grpo_name, ["G=2", "G=4", "G=6"]] > t15.loc["FGPO", ["G=2", "G=4", "G=6"]]).all()),
      "the trained GRPO (Eq. 1) policy leaves more groups dead than FGPO's at G = 2, 4 and 6")

# %% tags=["remove-input"]
claim("t15-is-summary", bool(np.allclose(t15.loc[[n for n in not_k if n in t15.index], "G=6"],
                                         summary.loc[[n for n in not_k if n in t15.index], "dead at G=6 (%)"])),
      "the Table 15 grid's G = 6 column is the race summary's dead rate (both means over seeds)")

# %% [markdown]
# ## Paper versus this book

# %% tags=["remove-input"]
fg, gr = summary.loc["FGPO"], summary.loc[grpo_name]
gr_diff = summary.loc[next(n for n in race.order if "differential" in n)]
steps = race.steps
last_epoch = steps[(steps.arm == gr_diff.name) & (steps.epoch > steps.epoch.max() - 1)]
uniform_dead = dead_group_grid({"u": trained["uniform"]}, table.rewards("eq1")).iloc[0]["G=6"]
show(paper_vs_book({
    "FGPO accuracy (%)": (paper.MAIN_GENOMEQA["FGPO"], fg["final accuracy (%)"]),
    "GRPO (differential) accuracy (%)": (paper.MAIN_GENOMEQA["GRPO"], gr_diff["final accuracy (%)"]),
    "Oracle (%)": (paper.MAIN_GENOMEQA["Oracle"], ceil["oracle"]),
    "Uniform policy, dead at G = 6 (%)": (paper.DEAD_GROUPS["uniform_G6"], uniform_dead),
    "GRPO (Eq. 1), closed-form dead at G = 6 (%)": (paper.DEAD_GROUPS["grpo_converged_G6"], gr["dead at G=6 (%)"]),
    "GRPO (differential), observed dead groups, last epoch (%)": (paper.DEAD_GROUPS["live_dead_end"],
                                                                   last_epoch["dead_observed"].mean()),
    "GRPO (Eq. 1), share of dead mass on wrong answers (%)": (paper.DEAD_GROUPS["dead_mass_on_wrong_answers"],
                                                       gr["dead mass on wrong answers (%)"]),
    "FGPO top-action mass": (paper.DEAD_GROUPS["fgpo_top_action_mass"], fg["top-action mass"]),
}, paper_label="paper (GenomeQA)", book_label="this book (tabular bandit)", digits=2), 2)

# %% [markdown]
# Each GRPO row names its arm: accuracy and the observed dead groups are the differential arm,
# the paper's GRPO; the closed-form dead rate and the dead mass on wrong answers are the Eq. 1
# arm (the differential arm's closed-form rate is in the Table 15 grid above). The paper's
# column is its one GRPO run throughout. Accuracies are not comparable in level
# (held-out questions and a language-model policy there, training questions of a tabular
# policy here, where enough visits let any unbiased method find each question's best
# subset); what carries over is the mechanism.

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
# - After one visit per question FGPO's greedy accuracy is {glue:text}`fg_first`%, GRPO's
#   (Eq. 1) {glue:text}`gr_first`%: at the uniform start Eq. 8 is proportional to
#   $r(s,a) - \bar r(s)$, so one exact step already orders each question's subsets.
# - At the end, FGPO reaches the oracle's {glue:text}`fg_final`%; GRPO (Eq. 1) ends at
#   {glue:text}`gr_final`% and GRPO (differential) at {glue:text}`gr_diff_final`%.
# - FGPO read {glue:text}`fg_lookups` rewards, each GRPO arm {glue:text}`gr_lookups` (per
#   look-up: the upper-right panel).
# - GRPO (Eq. 1)'s policy is the more concentrated (entropy {glue:text}`gr_entropy` nats
#   against FGPO's {glue:text}`fg_entropy`), and its closed-form dead-group rate at $G = 6$
#   (mean over seeds) is {glue:text}`gr_dead6`% against FGPO's {glue:text}`fg_dead6`%; of
#   its dead mass, {glue:text}`gr_dead_wrong`% sits on wrong answers, questions it can no
#   longer learn from.

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
