"""Past enumeration read back: what a larger library does to the reader, what each method pays
in reasoner calls, and what it buys.

Every method of a larger-library study (``fgpo study --methods larger``) is charged the distinct
(question, subset) pairs whose reward it read (``reward_calls``: what a reasoner that reads the
whole prompt bills, each pair once, with a shared cache). :func:`budget_table` puts those calls
beside test accuracy over seeds; :func:`library_rows` shows the tables themselves as the library
grows (the reference points and the exhaustive table's cost); :func:`seen_by_epoch` how often a
method's evaluated subsets held one of a question's best subsets, epoch by epoch;
:func:`tool_effects` what each tool does to the reader; :func:`budget_tests` each method
against a rival of the same budget, question-paired; :func:`dead_by_epoch` GRPO's dead groups;
:func:`tool_rates` how often a method calls a tool, per family; :func:`uniform_dead` the dead
groups of the uniform policy (Eq. 7).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..experiments.study import Study
from ..table import RewardTable
from .study import label, paired_tests

__all__ = [
    "library_rows",
    "budget_table",
    "seen_by_epoch",
    "method_family",
    "tool_effects",
    "nearest_budget",
    "budget_tests",
    "dead_by_epoch",
    "family_name",
    "tool_rates",
    "uniform_dead",
]


def family_name(family: str) -> str:
    """A family as it reads on a page: :func:`fgpo_core.reports.benchmark_page.family_label`."""
    from .benchmark_page import family_label

    return family_label(family)


def method_family(method: str) -> str:
    """The curve a method belongs to: ``fgpo`` (exact), ``dial``, ``shortlist-top``,
    ``shortlist-grow`` or ``grpo`` (every epoch count)."""
    from ..algorithms.head import parse_method

    spec = parse_method(method)
    if spec.base == "fgpo":
        return "fgpo" if spec.k is None else "dial"
    return spec.base


def library_rows(tables: Mapping[int, RewardTable], n_train: int) -> pd.DataFrame:
    """One row per library size ``n`` (``tables``: n -> the test suite's table): No-Tool,
    All-Tools, the best fixed subset, the oracle (all %), the subsets per question and the
    reasoner calls of the exhaustive training table (``2**n`` per training question)."""
    rows = []
    for n, t in sorted(tables.items()):
        c = t.ceilings()
        rows.append(
            {
                "tools": n,
                "subsets": t.n_actions,
                "no_tool": c["no_tool"],
                "all_tools": c["all_tools"],
                "best_fixed": c["best_fixed"],
                "oracle": c["oracle"],
                "table_calls": t.n_actions * n_train,
            }
        )
    return pd.DataFrame(rows).set_index("tools")


def budget_table(study: Study, scores: pd.DataFrame, suite: str = "core") -> pd.DataFrame:
    """Per method of ``study`` (at its chosen learning rate): the reasoner calls its training
    read (mean over seeds; per training question), and its accuracy and tools on ``suite``
    (mean and standard deviation over seeds; ``scores`` from
    :func:`~fgpo_core.reports.study.study_scores`)."""
    chosen = study.manifest["chosen_lr"]
    n_train = study.manifest["n_questions"]["train"]
    sw = study.sweep
    rows = []
    for m in chosen:
        g = sw[(sw.method == m) & (sw.lr == chosen[m])]
        s = scores[(scores.method == m) & (scores.suite == suite)]
        if g.empty or s.empty:
            continue
        calls = float(g.reward_calls.mean()) if "reward_calls" in g else float("nan")
        rows.append(
            {
                "method": m,
                "label": label(m),
                "family": method_family(m),
                "reward_calls": calls,
                "calls_per_question": calls / n_train,
                "accuracy": s.accuracy.mean(),
                "accuracy_sd": s.accuracy.std(ddof=1) if len(s) > 1 else 0.0,
                "tools": s.tools.mean(),
                "seeds": len(s),
            }
        )
    return pd.DataFrame(rows).set_index("method")


def seen_by_epoch(study: Study) -> pd.DataFrame:
    """Per method and epoch, the share (%) of training visits whose evaluated subsets held one of
    the question's Eq. 1-optimal subsets (mean over the epoch's steps and the seeds): 100 for
    exact FGPO, what the shortlist sees for the shortlists."""
    c = study.curves
    if "best_seen" not in c or "visits" not in c:
        return pd.DataFrame()
    n_train = study.manifest["n_questions"]["train"]
    c = c.assign(epoch=np.ceil(c.visits / n_train).astype(int))
    return c.groupby(["method", "epoch"]).best_seen.mean().unstack("method")


def tool_effects(table: RewardTable) -> pd.DataFrame:
    """What each tool does to the reader, from the table alone (all in % of its questions):
    ``alone`` (the single-tool subset's accuracy), ``marginal`` (the mean change in accuracy
    from adding the tool to a subset without it, over all ``2**(n-1)`` such subsets: negative
    for a distractor), ``helps`` and ``hurts`` (the share of (question, subset) pairs where
    adding it turns a wrong answer right, or a right one wrong), and ``all_but`` (All-Tools
    without it). Rows in slot order, indexed by tool name."""
    c = table.correct.astype(np.int8)
    A = table.n_actions
    masks = np.arange(A)
    rows = {}
    for t, name in enumerate(table.names()):
        bit = 1 << t
        without = masks[(masks & bit) == 0]
        d = c[:, without | bit] - c[:, without]
        rows[name] = {
            "alone": 100.0 * c[:, bit].mean(),
            "marginal": 100.0 * d.mean(),
            "helps": 100.0 * (d > 0).mean(),
            "hurts": 100.0 * (d < 0).mean(),
            "all_but": 100.0 * c[:, (A - 1) ^ bit].mean(),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def nearest_budget(budget: pd.DataFrame, method: str, family: str = "grpo") -> str | None:
    """The method of ``family`` in ``budget`` (:func:`budget_table`) whose reasoner calls lie
    nearest to ``method``'s on a log scale (None if the family is absent or is the method's own)."""
    rivals = budget[(budget.family == family) & (budget.index != method)]
    if rivals.empty or budget.loc[method, "family"] == family:
        return None
    gap = np.abs(np.log(rivals.reward_calls.astype(float)) - np.log(float(budget.loc[method, "reward_calls"])))
    return str(gap.idxmin())


def budget_tests(
    scores: pd.DataFrame,
    budget: pd.DataFrame,
    family: str = "grpo",
    rival: str | None = None,
    suite: str = "core",
    methods: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each method of ``methods`` (default: every method of ``budget``) against a rival,
    question-paired per seed on ``suite`` (exact McNemar, :func:`~fgpo_core.reports.study.paired_tests`).
    The rival is one method of ``budget`` when ``rival`` names it (exact FGPO: ``"fgpo"``),
    else the member of ``family`` nearest in reasoner calls (:func:`nearest_budget`), and then
    the family's own members are not tested.
    Columns: the rival, both methods' calls per training question, the mean difference
    (method minus rival, points), the median p over seeds and the seeds with p < 0.05."""
    methods = list(budget.index if methods is None else methods)
    rows = {}
    for m in methods:
        if rival is not None and rival not in budget.index:
            raise ValueError(f"no method {rival!r} in the budget table; it has {', '.join(budget.index)}")
        r = rival if rival is not None else nearest_budget(budget, m, family)
        if r is None or r == m:
            continue
        t = paired_tests(scores[scores.method.isin([m, r])], ref=m, suite=suite)
        if r not in t.index:
            continue
        rows[m] = {
            "rival": r,
            "calls per question": budget.loc[m, "calls_per_question"],
            "rival's calls per question": budget.loc[r, "calls_per_question"],
            "difference (points)": float(t.loc[r, "difference (points)"]),
            "median p": float(t.loc[r, "median p"]),
            "seeds with p < 0.05": t.loc[r, "seeds with p < 0.05"],
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def dead_by_epoch(study: Study) -> pd.DataFrame:
    """Per sampled method and epoch, the observed share (%) of its groups that were dead (all
    rewards equal; mean over the epoch's steps and the seeds)."""
    c = study.curves
    if "dead_observed" not in c or "visits" not in c:
        return pd.DataFrame()
    c = c[c.dead_observed.notna()]
    n_train = study.manifest["n_questions"]["train"]
    c = c.assign(epoch=np.ceil(c.visits / n_train).astype(int))
    return c.groupby(["method", "epoch"]).dead_observed.mean().unstack("method")


def tool_rates(picks: pd.DataFrame, family_of: pd.Series, slot: int, methods: Sequence[str]) -> pd.DataFrame:
    """How often (%) each of ``methods`` picked a subset holding the tool in ``slot``, per family
    of the question (mean over seeds and questions). ``picks``: one row per method, seed and
    question with its ``mask``; ``family_of``: question id -> family. Rows in ``methods``' order,
    columns the families as they read (:func:`family_name`)."""
    p = picks[picks.method.isin(methods)]
    calls = 100.0 * ((p["mask"].to_numpy().astype(np.int64) >> slot) & 1)
    p = p.assign(family=family_of.loc[p.question_id].to_numpy(), calls=calls)
    out = p.groupby(["method", "family"]).calls.mean().unstack().reindex(list(methods))
    return out.rename(columns=family_name)


def uniform_dead(table: RewardTable, kind: str = "eq1", group: int = 6) -> float:
    """The share (%) of GRPO groups of ``group`` draws that are dead (all rewards equal) under the
    uniform policy over ``table``'s subsets, by the closed form of Eq. 7, averaged over its
    questions; ``kind`` names the reward (:meth:`RewardTable.rewards`)."""
    from ..core.dead_groups import dead_group_probability

    q = np.full(table.correct.shape, 1.0 / table.n_actions)
    return 100.0 * float(dead_group_probability(q, table.rewards(kind), group).mean())
