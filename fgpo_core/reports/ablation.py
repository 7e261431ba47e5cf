"""The appendix's ablations read from a finished study (:data:`~fgpo_core.experiments.study.ABLATIONS`):
one table per ablation, each row a method over seeds, scored on every question of the suites.

Every function takes a :class:`~fgpo_core.experiments.study.Study` and the scores of
:func:`~fgpo_core.reports.study.study_scores` (and, where it needs them, reward
tables); nothing here trains.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..algorithms.head import parse_method
from ..core.estimators import coverage_hit_probability
from ..evaluation.difference import compare
from ..experiments.study import Study
from ..table import RewardTable
from .study import label, paired_tests

__all__ = [
    "verdicts",
    "ablation_rows",
    "coverage_table",
    "group_size_table",
    "tool_invocation",
    "removal_table",
    "imitation_table",
    "best_seen",
]


def _present(methods: Sequence[str], scores: pd.DataFrame) -> list[str]:
    have = set(scores.method)
    return [m for m in methods if m in have]


def verdicts(scores: pd.DataFrame, ref: str, methods: Sequence[str], suite: str = "core") -> pd.DataFrame:
    """Each of ``methods`` against ``ref`` on ``suite`` by the book's one rule
    (:func:`fgpo_core.evaluation.difference.compare`), question-paired within each seed the two
    share: the gap (points, the method minus ``ref``), the paired t-test over seeds, the seeds
    whose McNemar test gives p < 0.05, and whether the gap is a difference. ``scores``: the
    output of :func:`~fgpo_core.reports.study.study_scores` (a ``correct_vector`` per
    method, seed and suite)."""
    s = scores[scores.suite == suite].set_index(["method", "seed"])
    rows = {}
    for m in _present(methods, scores[scores.suite == suite]):
        if m == ref:
            continue
        seeds = sorted(set(s.loc[m].index) & set(s.loc[ref].index))
        if not seeds:
            continue
        v = compare(
            [s.loc[(m, x), "correct_vector"] for x in seeds], [s.loc[(ref, x), "correct_vector"] for x in seeds]
        )
        rows[m] = {
            "gap (points)": v.gap,
            "p over seeds": v.p_seeds,
            "seeds with McNemar p < 0.05": f"{v.seeds_significant} of {len(seeds)}",
            "difference": v.is_difference,
        }
    out = pd.DataFrame.from_dict(
        rows, orient="index", columns=["gap (points)", "p over seeds", "seeds with McNemar p < 0.05", "difference"]
    )
    return out.astype({"gap (points)": float, "p over seeds": float, "difference": bool})


def ablation_rows(
    scores: pd.DataFrame, methods: Sequence[str], suites: Sequence[str] = ("core",), ref: str | None = None
) -> pd.DataFrame:
    """Per method (in order): accuracy mean and sd over seeds on each suite, tools per question on
    the first suite, and, against ``ref`` on the first suite, the mean paired difference with the
    seeds whose McNemar p < 0.05."""
    methods = _present(methods, scores)
    s0 = suites[0]
    g = scores[scores.method.isin(methods)].groupby(["method", "suite"])
    mean, sd, tools = g.accuracy.mean(), g.accuracy.std(ddof=1).fillna(0.0), g.tools.mean()
    rows = {}
    tests = paired_tests(scores[scores.method.isin(methods)], ref, s0) if ref in methods else None
    for m in methods:
        row = {}
        for s in suites:
            if (m, s) in mean.index:
                row[f"{s} accuracy"] = mean[(m, s)]
                row[f"{s} sd"] = sd[(m, s)]
        row[f"tools ({s0})"] = tools.get((m, s0), np.nan)
        row["seeds"] = int(scores[(scores.method == m) & (scores.suite == s0)].seed.nunique())
        if tests is not None and m != ref and m in tests.index:
            row[f"vs {label(ref)} (points)"] = -float(tests.loc[m, "difference (points)"])
            row["seeds with p < 0.05"] = tests.loc[m, "seeds with p < 0.05"]
        rows[m] = row
    out = pd.DataFrame(rows).T.rename(index=label)
    for c in out:
        if c != "seeds with p < 0.05":
            out[c] = pd.to_numeric(out[c])
    out["seeds"] = out["seeds"].astype(int)
    return out


def best_seen(study: Study, methods: Sequence[str]) -> pd.Series:
    """Per method, the share (%) of training visits whose evaluated subsets included one of the
    question's Eq. 1-optimal subsets (mean over steps and seeds)."""
    c = study.curves
    if "best_seen" not in c:
        return pd.Series(dtype=float)
    return c[c.method.isin(methods)].groupby("method").best_seen.mean().reindex(methods)


def coverage_table(
    study: Study, scores: pd.DataFrame, train: RewardTable, suite: str = "core", lam: float = 0.10
) -> pd.DataFrame:
    """The coverage dial against k: accuracy on ``suite`` (mean, sd), the measured share of visits
    that saw a best subset, and its closed form (:func:`coverage_hit_probability`) averaged over
    the training questions."""
    r = train.rewards("eq1", lam=lam)
    best = r == r.max(1, keepdims=True)
    seen = best_seen(study, list(study.curves.method.unique()))
    rows = {}
    for m in sorted(set(scores.method)):
        spec = parse_method(m)
        if spec.base != "fgpo" or spec.overrides or spec.n_train or spec.drop_tool:
            continue
        k = spec.k or train.n_actions
        f = scores[(scores.method == m) & (scores.suite == suite)]
        rows[k] = {
            "accuracy (%)": f.accuracy.mean(),
            "sd over seeds": f.accuracy.std(ddof=1),
            "visits that saw a best subset (%)": seen.get(m, np.nan),
            "closed form (%)": 100.0 * float(coverage_hit_probability(best, k).mean()),
            "reward evaluations per visit": k,
        }
    return pd.DataFrame.from_dict(rows, orient="index").sort_index().rename_axis("k")


def group_size_table(study: Study, scores: pd.DataFrame, no_tool: float, suite: str = "core") -> pd.DataFrame:
    """GRPO against its group size G: accuracy (mean, sd), the observed dead fraction of its own
    groups over the last epoch, the closed-form dead probability of its kept dev policy, the
    share of visits that saw a best subset, the reward evaluations of a run and the evaluations
    per point of accuracy above No-Tool; and the dev accuracy at each learning rate tried."""
    rows = {}
    epochs = study.manifest["config"]["epochs"]
    chosen = study.manifest["chosen_lr"]
    for m in sorted(set(scores.method)):
        spec = parse_method(m)
        if spec.base != "grpo" or set(spec.overrides) - {"G"} or spec.n_train or spec.drop_tool:
            continue
        G = spec.overrides.get("G", study.manifest["config"]["G"])
        f = scores[(scores.method == m) & (scores.suite == suite)]
        c = study.curves[study.curves.method == m]
        last = c[c.step > c.step.max() * (epochs - 1) / epochs]
        sw = study.sweep[study.sweep.method == m]
        evals = float(sw[sw.lr == chosen[m]].reward_evaluations.mean())
        acc = f.accuracy.mean()
        row = {
            "G": G,
            "accuracy (%)": acc,
            "sd over seeds": f.accuracy.std(ddof=1),
            "dead groups, last epoch (%)": last.dead_observed.mean(),
            "visits that saw a best subset (%)": c.best_seen.mean() if "best_seen" in c else np.nan,
            "reward evaluations": evals,
            "evaluations per point above No-Tool": evals / (acc - no_tool) if acc > no_tool else np.nan,
        }
        for lr, v in sw.groupby("lr").dev_accuracy.mean().items():
            row[f"dev at lr {lr:g}"] = v
        rows[m] = row
    return pd.DataFrame(rows).T.sort_values("G").rename(index=label)


def tool_invocation(study: Study, table: RewardTable, methods: Sequence[str], suite: str = "core") -> pd.DataFrame:
    """Per method, the share (%) of ``suite``'s questions on which each tool is called (mean over
    seeds), columns ``T1 ..`` with the tools' names in ``table``."""
    rows = {}
    for m in methods:
        ids, P = study.pick_matrix(suite, m)
        rows[label(m)] = {f"T{i + 1} {n}": 100.0 * float(((P >> i) & 1).mean()) for i, n in enumerate(table.names())}
    return pd.DataFrame(rows).T


def removal_table(table: RewardTable, scores: pd.DataFrame, suite: str = "core", ref: str = "fgpo") -> pd.DataFrame:
    """Removing each tool: the oracle and best-fixed deltas from the table alone (the paper's
    Table 12) beside FGPO retrained without the tool (``fgpo-noT<i>``), in points against
    ``ref`` (mean over seeds, paired difference and seeds with McNemar p < 0.05)."""
    rows = table.single_tool_removal()
    rows.index = [f"-T{i + 1} {n}" for i, n in enumerate(table.names())]
    methods = [f"{ref}-noT{i + 1}" for i in range(table.n_tools)]
    have = [m for m in methods if m in set(scores.method)]
    tests = paired_tests(scores[scores.method.isin(have + [ref])], ref, suite) if have else pd.DataFrame()
    delta, sig = [], []
    for m in methods:
        if m in tests.index:
            delta.append(-float(tests.loc[m, "difference (points)"]))
            sig.append(tests.loc[m, "seeds with p < 0.05"])
        else:
            delta.append(np.nan)
            sig.append("")
    rows["delta FGPO retrained"] = delta
    rows["seeds with p < 0.05"] = sig
    return rows


def imitation_table(
    study: Study, scores: pd.DataFrame, table: RewardTable, methods: Sequence[str], suite: str = "core"
) -> pd.DataFrame:
    """SFT and DPO on ``suite``: accuracy (mean, sd), the share of argmax picks that are the empty
    subset, the mean q mass on it, and tools per question; the share of questions whose Eq. 1
    optimum is empty is the table's (:meth:`RewardTable.oracle_actions`)."""
    rows = {}
    for m in _present(methods, scores):
        f = scores[(scores.method == m) & (scores.suite == suite)]
        ids, P = study.pick_matrix(suite, m)
        qs = [study.q_matrix(m, s) for s in sorted(study.q[study.q.method == m].seed.unique())]
        rows[label(m)] = {
            "accuracy (%)": f.accuracy.mean(),
            "sd over seeds": f.accuracy.std(ddof=1),
            "argmax is empty (%)": 100.0 * float((P == 0).mean()),
            "q on the empty subset (%)": 100.0 * float(np.mean([q[:, 0].mean() for q in qs])),
            "tools": f.tools.mean(),
        }
    out = pd.DataFrame(rows).T
    sel = table.select(ids)
    optimum = sel.oracle_actions()
    out.attrs["empty_optimal"] = 100.0 * float((optimum == 0).mean())
    out.attrs["empty_is_most_common_optimum"] = bool(np.bincount(optimum, minlength=sel.n_actions).argmax() == 0)
    return out
