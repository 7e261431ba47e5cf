"""Comparing selectors: Table 15 (dead groups of each policy), Table 16 (the empty subset),
rescues, question-paired McNemar tests and the live pipeline's agreement with the table."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.dead_groups import TABLE15_GROUP_SIZES, dead_group_grid
from ..core.rewards import LAMBDA, differential_reward, eq1_reward
from ..core.subsets import ActionSpace
from ..genomics.benchmarks.schema import LETTERS, Question
from .picks import Picks

__all__ = [
    "REWARD_CLASSES",
    "policy_rewards",
    "dead_group_table",
    "empty_subset_table",
    "rescues",
    "mcnemar",
    "seed_paired_ttest",
    "live_agreement",
    "family_routing",
]

REWARD_CLASSES = ("eq1", "differential")
"""The rewards whose classes a dead-group grid can use: Eq. 1 (the paper's Table 15) or the GRPO
arm's differential reward (under which the paper reports its converged 79.6%)."""


def policy_rewards(
    correct: np.ndarray, reward: str = "eq1", lam: float = LAMBDA, with_failure: bool = False
) -> np.ndarray:
    """The reward of every subset ``[N, 2**n]`` (and, with ``with_failure``, a last column for a
    format failure) under ``reward``. Under Eq. 1 a format failure is wrong with no tools,
    ``-1 + lambda``; under the differential reward it gets ``r_fmt = 0`` and counts as wrong."""
    correct = np.asarray(correct, dtype=bool)
    N, A = correct.shape
    if reward == "eq1":
        sizes = ActionSpace(int(np.log2(A))).sizes
        r, r_fail = eq1_reward(correct, sizes[None], int(np.log2(A)), lam), np.full((N, 1), -1.0 + lam)
    elif reward == "differential":
        r = differential_reward(correct, np.repeat(correct[:, :1], A, 1), np.ones_like(correct))
        r_fail = differential_reward(np.zeros((N, 1), bool), correct[:, :1], np.zeros((N, 1), bool))
    else:
        raise ValueError(f"reward must be one of {', '.join(REWARD_CLASSES)}, got {reward!r}")
    return np.concatenate([r, r_fail], -1) if with_failure else r


def dead_group_table(
    policies: Mapping[str, np.ndarray],
    correct: np.ndarray,
    reward: str = "eq1",
    group_sizes: Sequence[int] = TABLE15_GROUP_SIZES,
    lam: float = LAMBDA,
) -> pd.DataFrame:
    """Table 15: the closed-form dead-group rate (%) of each policy, per group size, with the
    reward classes of ``reward`` (``"eq1"``, the paper's Table 15, or ``"differential"``). Each
    policy is ``[N, 2**n]`` (a distribution over subsets, e.g. uniform) or ``[N, 2**n + 1]`` (with
    a format-failure column, as :func:`~fgpo_core.evaluation.picks.p_gen_with_failures` gives)."""
    A = np.asarray(correct).shape[1]
    grids = []
    for name, p in policies.items():
        p = np.asarray(p, dtype=float)
        if p.shape[-1] not in (A, A + 1):
            raise ValueError(f"policy {name!r} has {p.shape[-1]} actions; expected {A} or {A + 1}")
        r = policy_rewards(correct, reward, lam, with_failure=p.shape[-1] == A + 1)
        grids.append(dead_group_grid({name: p / p.sum(-1, keepdims=True)}, r, group_sizes))
    return pd.concat(grids)


def empty_subset_table(p_gen: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Table 16: each policy's mean p_gen mass on the empty subset and how often the empty
    subset is the argmax of p_gen (%)."""
    rows = {}
    for name, m in p_gen.items():
        m = np.asarray(m, dtype=float)
        rows[name] = {
            "mass on empty (%)": 100.0 * m[:, 0].mean(),
            "argmax is empty (%)": 100.0 * (m.argmax(-1) == 0).mean(),
        }
    return pd.DataFrame(rows).T


def rescues(a_correct, b_correct) -> dict:
    """Questions ``a`` gets right and ``b`` wrong, and the reverse."""
    a, b = np.asarray(a_correct, bool), np.asarray(b_correct, bool)
    if a.shape != b.shape:
        raise ValueError("rescues compare the same questions: give vectors of one length")
    return {"a_only": int((a & ~b).sum()), "b_only": int((~a & b).sum())}


def mcnemar(a_correct, b_correct) -> dict:
    """Question-paired exact McNemar test (two-sided binomial test on the discordant pairs)."""
    from scipy.stats import binomtest

    r = rescues(a_correct, b_correct)
    n = r["a_only"] + r["b_only"]
    p = binomtest(r["a_only"], n, 0.5).pvalue if n else 1.0
    return {**r, "discordant": n, "p_value": float(p)}


def seed_paired_ttest(a, b) -> float:
    """Two-sided paired t-test of two settings' accuracies over the same seeds (``a[i]`` and
    ``b[i]`` from seed i): the p-value of a mean difference under the seed-to-seed spread of the
    differences. Differences all equal give 1.0 when zero and 0.0 otherwise (the seeds agree
    exactly); fewer than two seeds give NaN."""
    from scipy.stats import t as student_t

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("a and b must be 1-D and of one length (one value per seed)")
    d = a - b
    if len(d) < 2:
        return float("nan")
    sd = d.std(ddof=1)
    if sd <= 1e-12 * max(1.0, float(np.abs(d).max())):
        return 1.0 if np.allclose(d, 0.0) else 0.0
    t = d.mean() / (sd / np.sqrt(len(d)))
    return float(2 * student_t.sf(abs(t), len(d) - 1))


def live_agreement(
    picks: Picks, questions: Sequence[Question], table, library, reasoner, limit: int | None = None
) -> dict:
    """Re-run the chosen subsets live (tools and reasoner) and compare the answers with the
    reward table's predictions for the same (question, subset); a format failure is re-run as
    the empty subset. Returns ``n``, ``agreement`` (%) and, when the table holds the letters'
    log-probabilities, ``max_logprob_diff`` (the largest gap between live and stored)."""
    rows = table.select([q.id for q in questions[:limit]])
    agree, gap = [], []
    for i, (q, m) in enumerate(list(zip(questions, picks))[:limit]):
        m = 0 if m < 0 else int(m)
        out = reasoner.answer([(q, library.render(library.run(q.tool_input()), m))])[0]
        agree.append(out.letter == rows.predictions[i, m])
        if rows.letter_logprobs is not None:
            gap.append(max(abs(out.logprobs[L] - rows.letter_logprobs[i, m, j]) for j, L in enumerate(LETTERS)))
    res = {"n": len(agree), "agreement": 100.0 * float(np.mean(agree)) if agree else float("nan")}
    if gap:
        res["max_logprob_diff"] = float(max(gap))
    return res


def family_routing(
    train_rewards: np.ndarray, train_families: Sequence[str], test_families: Sequence[str]
) -> tuple[np.ndarray, dict[str, int]]:
    """The best a selector can do that reads nothing but a question's family: for each family of the
    training questions, the subset with the highest mean reward over that family's training
    questions; a family never seen in training gets the subset best over all of them. Returns the
    picks for ``test_families`` and the family -> subset map (``"*"``: the fallback). Chosen on
    training questions only, so it is a fair reference, unlike BestFixed* or the oracle."""
    r = np.asarray(train_rewards, dtype=float)
    fams = np.asarray(train_families)
    if len(fams) != len(r):
        raise ValueError(f"{len(fams)} families for {len(r)} reward rows")
    route = {f: int(r[fams == f].mean(0).argmax()) for f in sorted(set(fams.tolist()))}
    route["*"] = int(r.mean(0).argmax())
    return np.array([route.get(f, route["*"]) for f in test_families], dtype=int), route
