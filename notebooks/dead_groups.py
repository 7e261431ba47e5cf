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
# # Dead groups in closed form
#
# GRPO learns from *differences* between rollouts of the same question. When all
# of a question's rollouts earn the same reward there is nothing to learn from: the
# group is **dead**. This chapter derives how often that happens, checks the formula
# by simulation, and shows why it gets worse exactly when training starts to work
# (paper, Sections 2.2 and 3.4, Appendix F.1-F.2).

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the synthetic reward table and every simulation
n_questions = 1000  # questions in the synthetic reward table
mc_groups = 20000  # Monte Carlo groups per policy when checking Eq. 7

# %% tags=["remove-input"]
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from fgpo_core.algorithms.bandit import temperature_policies
from fgpo_core.book import paper
from fgpo_core.book.chapter import paper_vs_book, show_source
from fgpo_core.book.claims import claim, glue_number
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_page import set_alt
from fgpo_core.core import dead_groups as dg
from fgpo_core.core.estimators import grpo_advantages
from fgpo_core.reports.tables import show
from fgpo_core.table.synthetic import SyntheticTableConfig, make_synthetic_table

set_style()
glue_number("n_questions", n_questions, 0)
_ = glue_number("mc_groups", mc_groups, 0)

# %% [markdown]
# ## Background: GRPO's group and its advantages
#
# For a question $s$, GRPO draws $G$ subsets $a_1, \dots, a_G$ from the policy's
# generation distribution $p$, looks up their rewards $r_1, \dots, r_G$ and scores
# each against its own group (Eq. 3):
#
# $$
# A_i = \frac{r_i - \mu}{\sigma + \varepsilon}, \qquad
# \mu = \frac{1}{G}\sum_{j} r_j, \quad
# \sigma = \sqrt{\frac{1}{G}\sum_{j} (r_j - \mu)^2 }.
# $$
#
# If $r_1 = \dots = r_G$ then $r_i - \mu = 0$ for every $i$ and the group
# contributes nothing to the update (TRL logs the share of such groups as
# `frac_reward_zero_std`). GRPO's advantages of a live and a dead group of six:

# %% tags=["hide-input"]
groups = np.array([[1.1, 0.9, -0.9, 1.1, -1.1, 0.9],    # a live group: rewards differ
                   [0.9, 0.9, 0.9, 0.9, 0.9, 0.9]])     # a dead group: all equal
import torch
adv = grpo_advantages(torch.tensor(groups))
pd.DataFrame(np.vstack([groups, adv.numpy()]).round(3),
             index=["rewards (live)", "rewards (dead)",
                    "advantages (live)", "advantages (dead)"],
             columns=[f"a{i + 1}" for i in range(groups.shape[1])])

# %% [markdown]
# ## Key equation: the dead-group probability
#
# Group the actions of a question into **reward classes**, one per distinct reward
# value, and let $w_v = \sum_{a:\, r(s,a) = v} p(a \mid s)$ be the mass the policy
# puts on class $v$. The $G$ draws are independent, and the group is dead exactly
# when all of them fall into one class, so (Eq. 7)
#
# $$
# P_{\text{dead}}(p, G) = \sum_{v} w_v^{\,G}.
# $$
#
# Under a uniform policy over 16 subsets and a reward of several values every $w_v$ is
# small and $w_v^G$ vanishes fast. As the policy concentrates, one $w_v$ approaches 1 and
# so does $P_{\text{dead}}$: **the better GRPO's policy gets, the fewer of its groups
# carry a gradient.** The library's Eq. 7, for arrays of any leading shape (its reward
# classes start wherever two sorted rewards differ by more than a small tolerance; the
# folded cell below has that code):

# %% tags=["remove-input", "hide-output"]
show_source(dg.reward_classes)

# %% tags=["remove-input"]
show_source(dg.dead_group_probability)

# %% [markdown]
# ## Checking Eq. 7 against simulation
#
# For four policies over 16 actions, the closed form (%) beside the share of dead groups
# among {glue:text}`mc_groups` simulated ones (in brackets), and the largest gap between the
# two in Monte Carlo standard errors, $\sqrt{P(1-P)/n}$:

# %% tags=["hide-input"]
rng = np.random.default_rng(seed)
A = 16
rewards_row = rng.choice([-1.1, -1.0, -0.9, 0.9, 1.0, 1.1], size=A)
policies = {
    "uniform": np.full(A, 1 / A),
    "mild (Dirichlet 1)": rng.dirichlet(np.ones(A)),
    "peaked (Dirichlet 0.1)": rng.dirichlet(np.full(A, 0.1)),
    "98% on one subset": np.r_[0.98, np.full(A - 1, 0.02 / (A - 1))],
}
rows = []
for name, p in policies.items():
    for G in (2, 6, 16):
        exact = float(dg.dead_group_probability(p, rewards_row, G))
        mc = float(dg.dead_group_probability_mc(p, rewards_row, G, n_groups=mc_groups, seed=seed))
        se = np.sqrt(max(exact * (1 - exact), 1e-12) / mc_groups)
        rows.append({"policy": name, "G": G, "cell": f"{100 * exact:.2f} ({100 * mc:.2f})",
                     "|difference| / s.e.": abs(exact - mc) / se})
check = pd.DataFrame(rows)
shown = check.pivot(index="policy", columns="G", values="cell").loc[list(policies)]
shown.columns = [f"G = {G}" for G in shown.columns]
shown["largest gap (s.e.)"] = check.groupby("policy")["|difference| / s.e."].max()
show(shown, 2)

# %% tags=["remove-cell"]
worst = glue_number("mc_worst", check["|difference| / s.e."].max(), 2)
glue_number("mc_cases", len(check), 0)

# %% [markdown]
# The largest gap over the {glue:text}`mc_cases` cases is {glue:text}`mc_worst` standard
# errors: closed form and simulation agree as closely as sampling noise allows.

# %% tags=["remove-input"]
claim("closed-form-matches-mc", worst < 4, "the closed form agrees with Monte Carlo within sampling noise (4 standard errors)")

# %% [markdown]
# ## A reward table to work on
#
# The chapters of this first part need no language model. They use a *synthetic* reward
# table of {glue:text}`n_questions` questions: for each question and each of the 16 subsets
# of a four-tool library, whether a frozen reasoner would answer correctly. It is drawn from
# a small latent model (each family has a decisive tool, extra evidence crowds the prompt,
# answers are noisy; its settings are folded below) tuned so that its reference points
# resemble the paper's GenomeQA table: a stand-in for the real tables of
# {doc}`reward_table`, not data.

# %% tags=["remove-input", "hide-output"]
synthetic = SyntheticTableConfig(n_questions=n_questions)
setting_labels = {  # every field of SyntheticTableConfig, in words
    "n_questions": "questions",
    "n_tools": "tools in the library",
    "n_families": "question families, each with one decisive tool",
    "base_mean": "mean base logit of a question (sets No-Tool accuracy)",
    "base_std": "spread of the base logit (sets how many questions no tool can change)",
    "decisive_effect": "logit added by the family's decisive tool",
    "side_effect": "logit added by each other tool",
    "utility_std": "question-specific spread of every tool's effect",
    "noise_std": "noise per question and subset (the reasoner's fickleness)",
    "crowding": "logit lost for each tool beyond the first (crowded evidence)",
}
missing = set(vars(synthetic)) - set(setting_labels)
if missing:
    raise KeyError(f"label the new settings {sorted(missing)}")
show(pd.DataFrame({"setting": list(setting_labels.values()),
                   "value": [f"{v:,}" if isinstance(v, int) else f"{v:g}".replace("-", "\u2212")
                             for v in (getattr(synthetic, k) for k in setting_labels)]}))

# %% tags=["remove-input"]
table = make_synthetic_table(synthetic, seed=seed)
ceil = table.ceilings()
glue_number("lam", table.lam, 2)
labels = {"no_tool": "No-Tool accuracy", "random": "Random subset", "all_tools": "All-Tools",
          "best_fixed": "Best fixed subset", "oracle": "Oracle (some subset is right)",
          "empty_optimal": "Questions whose best subset is empty",
          "outcome_degenerate": "Outcome-degenerate questions"}
show(paper_vs_book({labels[k]: (paper.GENOMEQA_CEILINGS[k], ceil[k]) for k in labels},
                   paper_label="paper (GenomeQA, %)", book_label="synthetic table (%)"))

# %% [markdown]
# The reward the paper's FGPO trains on, its Eq. 1, pays for a right answer and charges a
# little for each tool: with $y$ the answer the reasoner gives with subset $a$ of the $n$
# tools, $y^*$ the right one and $\lambda =$ {glue:text}`lam`,
#
# $$
# r(s,a) = \big(2 \cdot 1[y = y^*] - 1\big) + \lambda \Big(1 - \frac{2|a|}{n}\Big).
# $$
#
# Correctness always dominates; among subsets alike in correctness, fewer tools score higher.
# Eq. 1 ties two of the numbers above together. The empty subset is reward-optimal when it is
# already right, or when no subset is right (then only the parsimony bonus counts, largest
# for the empty subset). So the empty-optimal share is No-Tool accuracy plus the share no
# subset can rescue, $1 - \text{oracle}$.

# %% tags=["remove-cell"]
def identity(c):
    return c["no_tool"] + (100 - c["oracle"])


glue_number("paper_identity", identity(paper.GENOMEQA_CEILINGS), 2)
glue_number("paper_empty_optimal", paper.GENOMEQA_CEILINGS["empty_optimal"])
glue_number("our_identity", identity(ceil))
glue_number("our_empty_optimal", ceil["empty_optimal"])

# %% [markdown]
# On the paper's GenomeQA table No-Tool + (100 − oracle) is {glue:text}`paper_identity`%
# against {glue:text}`paper_empty_optimal`% empty-optimal questions; on the synthetic table
# {glue:text}`our_identity`% and {glue:text}`our_empty_optimal`%, equal as they must be.

# %% tags=["remove-input"]
claim("empty-optimal-identity", abs(identity(ceil) - ceil["empty_optimal"]) < 0.05,
      "on the synthetic table the empty-optimal share equals No-Tool + (100 - oracle)")

# %% [markdown]
# ## Concentration kills groups
#
# On the whole table we walk policies from uniform to concentrated:
# $p_T(a \mid s) \propto \exp(r(s,a)/T)$ piles mass on each question's reward-optimal
# subsets as the temperature $T$ falls, roughly what successful training does.

# %% tags=["hide-input"]
temps = [np.inf, 2.0, 1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01]
family = temperature_policies(table, temps)
r_eq1 = table.rewards("eq1")
curve = []
for T, p in family.items():
    ent = float(-(np.where(p > 0, p * np.log(p), 0)).sum(1).mean())
    for G in (2, 4, 6, 8, 16):
        curve.append({"T": T, "entropy (nats)": ent, "G": G,
                      "dead-group probability (%)": 100 * dg.dead_group_probability(p, r_eq1, G).mean()})
curve = pd.DataFrame(curve)
fig, ax = plt.subplots()
sns.lineplot(data=curve, x="entropy (nats)", y="dead-group probability (%)", hue="G", marker="o",
             palette="viridis", ax=ax)
ax.invert_xaxis()
ax.set_title("As the policy concentrates, groups die (Eq. 1 reward classes)")
ax.set_xlabel("mean policy entropy (nats)  ->  more concentrated")
set_alt(fig, "Lines of the dead-group probability (%) against the mean policy entropy (nats, falling to the right as "
        "the policy concentrates), one per group size G = 2, 4, 6, 8 and 16, over temperature policies of the "
        "synthetic table.")
plt.show()

# %% tags=["remove-cell"]
ladder = curve[curve.G == 6]["dead-group probability (%)"].to_numpy()  # in the order of temps
glue_number("ladder_uniform", ladder[0], 2)
glue_number("ladder_coldest", ladder[-1])
glue_number("coldest_T", temps[-1], 2)

# %% [markdown]
# At $G = 6$ the dead share rises at every step down the ladder, from
# {glue:text}`ladder_uniform`% at the uniform policy to {glue:text}`ladder_coldest`% at
# $T =$ {glue:text}`coldest_T`; the questions and the reward stay the same.

# %% tags=["remove-input"]
claim("concentration-kills", bool(np.all(np.diff(ladder) > 0)) and ladder[-1] > 50,
      "at G = 6 the dead share rises at every step down the temperature ladder, past half at the coldest")

# %% [markdown]
# ## Coarser rewards, more dead groups
#
# The reward's *granularity* matters as much as the policy. Eq. 1 separates subsets by
# correctness and size, up to $2(n+1)$ classes; without the parsimony term ($\lambda = 0$)
# two remain, right and wrong. The differential reward of the paper's GRPO arm,
# $r_\text{diff} = 1[\text{correct with } a] - 1[\text{correct with no tools}]$, also has
# at most two classes, and one on a question no subset changes: every group there is dead.
# $P_\text{dead}$ at $G = 6$ (%), beside the paper's converged GRPO:

# %% tags=["hide-input"]
gran = []
for kind, label in [("eq1", "Eq. 1 (λ = 0.10)"), ("binary", "Eq. 1, λ = 0"),
                    ("differential", "differential (GRPO arm)")]:
    r = table.rewards(kind)
    n_classes = (np.diff(np.sort(r, 1), axis=1) > 1e-9).sum(1) + 1
    for T in (np.inf, 0.3, 0.1):
        p = family[T]
        gran.append({"reward": label, "policy": "uniform" if T == np.inf else f"T = {T}",
                     "mean classes": n_classes.mean(),
                     "P_dead at G=6 (%)": 100 * dg.dead_group_probability(p, r, 6).mean()})
gran = pd.DataFrame(gran)
by_reward = gran.pivot(index="reward", columns="policy", values="P_dead at G=6 (%)")
shown = by_reward[["uniform", "T = 0.3", "T = 0.1"]].copy()
shown["paper: converged GRPO"] = pd.Series({"Eq. 1 (λ = 0.10)": paper.DEAD_GROUPS["grpo_converged_G6"],
                                             "differential (GRPO arm)": paper.DEAD_GROUPS["grpo_differential_G6"]})
show(shown)

# %% [markdown]
# The policies $p_T$ come from the Eq. 1 reward, so each column holds the *same* policies
# under three rewards: the coarser the reward, the deadlier the groups. The two two-class
# rewards split every question's subsets alike (the differential one is the binary one
# less a constant per question), so their rows agree. The paper saw the same with
# trained policies.

# %% tags=["remove-input"]
_eq1, _bin, _diff = (by_reward.loc[r] for r in ("Eq. 1 (λ = 0.10)", "Eq. 1, λ = 0",
                                                "differential (GRPO arm)"))
claim("coarser-deadlier", bool((_bin > _eq1).all() and np.allclose(_bin, _diff)),
      "under each policy the two-class rewards leave more groups dead than Eq. 1, and agree with each other")

# %% [markdown]
# ## Proposition 1, numerically
#
# The paper proves three properties of $P_\text{dead} = \sum_v w_v^G$ for $G \ge 2$:
#
# 1. **Merging** two classes (a coarser reward) never lowers it: $(w_i + w_j)^G \ge w_i^G + w_j^G$.
# 2. **Moving mass toward a larger class** strictly raises it: if $w_i \ge w_j > 0$, shifting
#    $\delta \in (0, w_j]$ from $j$ to $i$ increases $P_\text{dead}$.
# 3. It is **Schur-convex** in the class masses: among $k$ classes it is smallest when all
#    masses are equal ($k^{1-G}$) and equals 1 when one class holds everything.

# %% tags=["remove-cell"]
n_trials = 20000
violations = dg.proposition_violations(n_trials, np.random.default_rng(seed))
glue_number("n_trials", n_trials, 0)
glue_number("merge_failures", violations["merge"], 0)
glue_number("minimum_failures", violations["uniform minimum"], 0)
glue_number("transfer_failures", violations["transfer"], 0)

# %% [markdown]
# We test each on {glue:text}`n_trials` random draws of class masses. Merging and the
# minimum fail in {glue:text}`merge_failures` and {glue:text}`minimum_failures` of them, the
# transfer test in {glue:text}`transfer_failures`, by the arithmetic, not the proposition: a Dirichlet draw can give a class a mass near $10^{-20}$, and moving part of
# it onto a class of mass $10^{-2}$ leaves that mass unchanged in double precision
# (one such trial, code folded):

# %% tags=["hide-input"]
w_big, w_small, delta = 2.28e-2, 1.72e-19, 8.2e-20
print("w_big + delta == w_big:", w_big + delta == w_big)
before = np.array([w_big, w_small])
after = np.array([w_big + delta, w_small - delta])
print("P_dead(G = 6) before and after the move:",
      dg.dead_group_probability_from_masses(before, 6),
      dg.dead_group_probability_from_masses(after, 6))

# %% tags=["remove-input"]
claim("proposition-holds", violations["merge"] == 0 and violations["uniform minimum"] == 0
      and violations["transfer"] <= n_trials // 1000,
      "merging and the minimum never fail, and the transfer test fails only in a handful of trials")

# %% tags=["hide-input"]
fig, axes = plt.subplots(2, 1, figsize=(6.9, 6.2), layout="constrained")
w1 = np.linspace(0, 1, 201)
for G in (2, 4, 6, 16):
    axes[0].plot(w1, w1 ** G + (1 - w1) ** G, label=f"G = {G}")
axes[0].set(xlabel="mass of class 1 (two classes)", ylabel="P_dead", title="Two classes: minimum at equal masses")
axes[0].legend()
ks = np.arange(1, 17)
for G in (2, 4, 6):
    axes[1].plot(ks, 100 * ks ** (1.0 - G), marker="o", label=f"G = {G}")
axes[1].set(xlabel="number of equal-mass classes k", ylabel="P_dead (%)", yscale="log",
            title="Uniform over k classes: k^(1-G)")
axes[1].legend()
set_alt(fig, "Two line charts, one above the other. Top: the dead-group probability of two reward classes against "
        "the mass of class 1, for G = 2, 4, 6 and 16, lowest at equal masses. Bottom: the dead-group probability "
        "(%, log scale) of a policy uniform over k equal-mass classes, k^(1-G), against k from 1 to 16, for G = 2, 4 and 6.")
plt.show()

# %% [markdown]
# ## The shape of Table 15
#
# The paper's Table 15 gives $P_\text{dead}$ (%) of trained policies over group sizes
# ($G = 1$ is always 100%: a group of one has nothing to compare with). Here the uniform
# policy and the temperature family stand in for increasingly concentrated training, under
# Eq. 1's classes; {doc}`exact_vs_sampled` fills the grid with trained policies and sets the
# paper's table beside it.

# %% tags=["hide-input"]
ours = dg.dead_group_grid({("uniform" if T == np.inf else f"p_T, T = {T}"): family[T]
                           for T in (np.inf, 1.0, 0.3, 0.1, 0.01)}, r_eq1, group_sizes=(2, 4, 6, 16))
ours.columns = [c.replace("=", " = ") for c in ours.columns]
show(ours.rename_axis("policy"))

# %% tags=["remove-cell"]
u6, cold6 = ours.loc["uniform", "G = 6"], ours.iloc[-1]["G = 6"]
glue_number("paper_uniform_G6", paper.DEAD_GROUPS["uniform_G6"])

# %% [markdown]
# At $G = 6$ the first and last rows are the two ends of the ladder above (the paper's
# uniform policy: {glue:text}`paper_uniform_G6`% on GenomeQA). That gap is the chapter's
# point: nothing about the questions changed between the rows, only how concentrated the
# sampling distribution is.

# %% tags=["remove-input"]
claim("uniform-alive-concentrated-dead", u6 < 1 and cold6 > 50 and np.allclose([u6, cold6], ladder[[0, -1]]),
      "at G = 6 the grid's first and last rows are the ladder's ends: under 1% dead, and over half")

# %% [markdown]
# ## References
#
# - Paper, Section 2.2 (GRPO and dead groups), Section 3.4 (dead-group analysis),
#   Appendix F.1-F.2 (Eq. 7, Proposition 1 and its proof), Table 15.
# - Shao et al. (2024), DeepSeekMath (GRPO); TRL's `GRPOTrainer` (`frac_reward_zero_std`).
# - Marshall, Olkin and Arnold, *Inequalities* (Schur-convexity).
