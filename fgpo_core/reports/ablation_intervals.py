"""The appendix's ablations read by the book's rule for a difference: every gap with the 95% interval
of the two-level paired bootstrap (:func:`fgpo_core.evaluation.bootstrap.compare_many`), pooled over
the test suites and split in and out of domain by the book's rule
(:func:`fgpo_core.evaluation.domains.question_domains`), with Holm's adjustment over each table.

Any finished study reads as a :class:`~fgpo_core.reports.fair.FairTest` (:func:`study_test`): each
method's correctness per seed on every pooled test question, beside fixed subsets (one row, no
seeds) such as No-Tool. :func:`interval_table` lays comparisons out as a page shows them,
:func:`weight_grid` reads a regularizer's weights for each estimator of the fair test.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..experiments.factorial import parse_cell
from .fair import FairTest, interval_text, pooled_correct

__all__ = [
    "SPLITS",
    "BEST_FIXED",
    "study_test",
    "add_fixed",
    "add_methods",
    "mean_tools",
    "HOLM_MARK",
    "interval_table",
    "signed_interval",
    "weight_grid",
]

SPLITS = ("pooled", "in domain", "out of domain")
HOLM_MARK = "\u00a0*"
"""What follows a gap whose Holm-adjusted p-value is below 0.05 (as in
:func:`~fgpo_core.reports.fair.comparison_table`)."""
BEST_FIXED = "BestFixed*"
"""The fixed subset of highest accuracy over the pooled test questions, chosen with hindsight."""


def study_test(study, tables: Mapping, domains: Mapping, fixed: Mapping[str, int | str] | None = None) -> FairTest:
    """Every method of ``study`` (a :class:`~fgpo_core.experiments.study.Study`) on its pooled test
    questions, as a :class:`FairTest` without cells or pairs.

    ``tables``: suite -> reward table (every test suite of the study); ``domains``: suite -> question
    id -> "ID"/"OOD" (:func:`~fgpo_core.evaluation.domains.question_domains`); ``fixed``: name ->
    subset (a mask; -1 the whole library, :data:`BEST_FIXED`'s value "best" the subset of highest
    pooled accuracy), each read as a method with one row."""
    suites = [s for s in study.manifest["config"]["suites"].split(",") if s]
    methods = list(dict.fromkeys(study.picks["method"]))
    correct, suite_of, family_of, ids = pooled_correct(study.picks, tables, suites, methods)
    try:
        in_domain = np.array([domains[s][i] == "ID" for s, i in zip(suite_of, ids)])
    except KeyError as e:
        raise ValueError(f"the domain rule names no question {e}") from None
    return add_fixed(FairTest(study, None, {}, correct, suite_of, family_of, ids, in_domain, suites), tables, fixed)


def add_fixed(ft: FairTest, tables: Mapping, fixed: Mapping[str, int | str] | None) -> FairTest:
    """``ft`` with fixed subsets read as methods of one row (no seeds): ``fixed`` maps a name to a
    subset (a mask; -1 the whole library; "best" the subset of highest accuracy over the pooled
    questions, as :data:`BEST_FIXED`)."""
    rows = np.concatenate([tables[s].select(list(ft.ids[ft.suites == s])).correct for s in ft.test_suites])
    for name, subset in (fixed or {}).items():
        if subset == "best":
            subset = int(np.argmax(rows.mean(0)))
        ft.correct[name] = rows[:, int(subset) % rows.shape[1]][None, :].astype(bool)
    return ft


def add_methods(ft: FairTest, tables: Mapping, methods: Sequence[str]) -> FairTest:
    """``ft`` with the correctness of more of its study's methods (e.g. every weight of a fair-test
    cell, beyond the chosen ones); the pooled questions are the same, in the same order."""
    missing = [m for m in methods if m not in ft.correct]
    if missing:
        more, suite_of, _, ids = pooled_correct(ft.study.picks, tables, ft.test_suites, missing)
        if not (np.array_equal(ids, ft.ids) and np.array_equal(suite_of, ft.suites)):
            raise ValueError("the added methods were picked on other questions")
        ft.correct.update(more)
    return ft


def mean_tools(study, method: str, suites: Sequence[str]) -> float:
    """Tools per question of ``method``'s picks on ``suites`` (mean over questions and seeds)."""
    f = study.picks[(study.picks["method"] == method) & study.picks["suite"].isin(list(suites))]
    if f.empty:
        raise ValueError(f"the study holds no picks of {method}")
    return float(np.mean([bin(int(m)).count("1") for m in f["mask"]]))


signed_interval = interval_text
"""The book's one way to write a gap with its interval (:func:`~fgpo_core.reports.fair.interval_text`)."""


def interval_table(
    comparisons: pd.DataFrame,
    rows: Mapping[str, str],
    splits: Sequence[str] = SPLITS,
    extra: Mapping[str, Mapping[str, object]] | None = None,
    mark: str = HOLM_MARK,
) -> pd.DataFrame:
    """One row per comparison (``rows``: comparison name -> the label it reads under, in order), one
    column per split with the gap and its 95% interval (points, :func:`signed_interval`).
    ``comparisons``: :func:`~fgpo_core.reports.fair.fair_comparisons`'s frame; ``extra``: column ->
    (comparison name -> value), placed before the splits; ``mark``: after a gap whose Holm-adjusted
    p-value is below 0.05."""
    by = comparisons.set_index(["comparison", "split"])
    missing = [n for n in rows if not any((n, k) in by.index for k in splits)]
    if missing:
        raise ValueError(f"no comparison named {', '.join(map(repr, missing))}")

    def text(n, k):
        if (n, k) not in by.index:
            return None
        r = by.loc[(n, k)]
        return signed_interval(r["gap"], r["low"], r["high"]) + (mark if mark and r["p_holm"] < 0.05 else "")

    out = pd.DataFrame(index=pd.Index(list(rows.values()), name="setting"))
    for col, values in (extra or {}).items():
        out[col] = [values.get(n) for n in rows]
    for k in splits:
        out[f"{k} (points)"] = [text(n, k) for n in rows]
    return out


def weight_grid(ft: FairTest, estimators: Sequence[str], regularizer: str, weights: Sequence[float]) -> pd.DataFrame:
    """Pooled test accuracy (%) of each estimator with no regularizer (``none``) and at each weight of
    ``regularizer`` (each method name at the rate the study chose for it on dev); NaN where the study
    has no such run. Rows: estimators; columns ``none`` and the weights."""
    have = {}
    for m in ft.correct:
        try:
            est, reg, w = parse_cell(m)
        except ValueError:
            continue
        have[(est, reg, round(float(w), 6))] = m
    grid = pd.DataFrame(index=list(estimators), columns=["none"] + list(weights), dtype=float)
    for est in estimators:
        m = have.get((est, "none", 0.0))
        grid.loc[est, "none"] = ft.accuracy(m) if m else np.nan
        for w in weights:
            m = have.get((est, regularizer, round(float(w), 6)))
            grid.loc[est, w] = ft.accuracy(m) if m else np.nan
    return grid
