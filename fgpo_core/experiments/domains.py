"""A study's test questions split in domain and out of domain, and compared by the book's rule.

A test question is *in domain* when its family appears among the training questions and its
suite is not the cross-organism one, *out of domain* otherwise: the book's one rule,
:func:`fgpo_core.evaluation.domains.domain_of`. Every comparison here is
question-paired over the test suites pooled and over each split, seed by seed, and decided
by :func:`fgpo_core.evaluation.difference.compare`.

The fixed-subset reference ``BestFixed*`` is the one subset whose accuracy over all the
pooled test questions is highest, chosen with hindsight on those questions (the star), and
then read on each split.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.difference import Verdict, compare
from ..evaluation.domains import domain_of
from ..evaluation.picks import correct_of, summarise_picks
from ..table import RewardTable
from .study import Study

__all__ = ["SPLITS", "study_training_table", "split_masks", "method_correct", "fixed_correct", "best_fixed_subset", "domain_accuracy",
           "domain_verdicts", "split_scores"]

SPLITS = ("pooled", "in domain", "out of domain")


def study_training_table(study: Study, train_table: RewardTable) -> RewardTable:
    """The rows of the training table that ``study`` trained on: its first ``n`` training
    questions (a pool grown later keeps them), or with ``--train-spread`` the ``n`` spread evenly
    over the pool it was given (then the table must be that pool)."""
    from .study_inputs import spread_indices

    n = int(study.manifest["n_questions"]["train"])
    ids = np.asarray(train_table.question_ids)
    if len(ids) < n:
        raise ValueError(f"the study trained on {n} questions; the training table holds {len(ids)}")
    if study.manifest["config"].get("train_spread") and study.manifest["config"].get("n_train"):
        return train_table.select(ids[spread_indices(len(ids), n)])
    return train_table.select(ids[:n])


def _questions(study: Study, tables: Mapping[str, RewardTable], suites: Sequence[str]):
    """Per suite, the question ids the study picked for and the table holds, in study order."""
    out = {}
    for s in suites:
        ids, _ = study.pick_matrix(s, study.picks.method.iloc[0])
        ids = np.asarray(ids)
        out[s] = ids[tables[s].contains(ids)]
    return out


def split_masks(tables: Mapping[str, RewardTable], ids: Mapping[str, np.ndarray],
                train_families: set[str]) -> dict[str, np.ndarray]:
    """Boolean masks over the pooled questions (suites concatenated in ``ids`` order)."""
    seen = np.array([domain_of(s, f, train_families) == "ID" for s in ids
                     for f in tables[s].select(ids[s]).family])
    return {"pooled": np.ones(len(seen), bool), "in domain": seen, "out of domain": ~seen}


def method_correct(study: Study, tables: Mapping[str, RewardTable], method: str,
                   ids: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Seed by seed, whether ``method``'s pick is right on each pooled question."""
    per_suite = []
    for s, keep in ids.items():
        all_ids, picks = study.pick_matrix(s, method)
        pos = pd.Index(all_ids).get_indexer(keep)
        c = tables[s].select(keep).correct
        per_suite.append(np.stack([c[np.arange(len(keep)), p[pos]] for p in picks]))
    return list(np.concatenate(per_suite, axis=1))


def fixed_correct(tables: Mapping[str, RewardTable], ids: Mapping[str, np.ndarray], subset: int) -> np.ndarray:
    """Whether one fixed subset is right on each pooled question."""
    return np.concatenate([tables[s].select(ids[s]).correct[:, subset] for s in ids]).astype(bool)


def best_fixed_subset(tables: Mapping[str, RewardTable], ids: Mapping[str, np.ndarray]) -> int:
    """The subset of highest accuracy over the pooled questions (lowest mask on ties)."""
    c = np.concatenate([tables[s].select(ids[s]).correct for s in ids])
    return int(np.argmax(c.mean(0)))


def _pooled(study, tables, suites, train_families):
    ids = _questions(study, tables, suites)
    return ids, split_masks(tables, ids, train_families)


def domain_accuracy(study: Study, tables: Mapping[str, RewardTable], methods: Sequence[str],
                    suites: Sequence[str], train_families: set[str]) -> pd.DataFrame:
    """Accuracy (%, mean over seeds) of each method and of BestFixed* on each split, with the
    number of questions per split in the row ``questions``."""
    ids, masks = _pooled(study, tables, suites, train_families)
    rows = {}
    for m in methods:
        c = method_correct(study, tables, m, ids)
        rows[m] = {k: float(np.mean([100.0 * x[mask].mean() for x in c])) for k, mask in masks.items()}
    best = fixed_correct(tables, ids, best_fixed_subset(tables, ids))
    rows["BestFixed*"] = {k: 100.0 * float(best[mask].mean()) for k, mask in masks.items()}
    rows["questions"] = {k: float(mask.sum()) for k, mask in masks.items()}
    return pd.DataFrame(rows).T[list(SPLITS)]


def domain_verdicts(study: Study, tables: Mapping[str, RewardTable], ref: str, others: Sequence[str],
                    suites: Sequence[str], train_families: set[str]) -> dict[tuple[str, str], Verdict]:
    """``{(other, split): Verdict}`` of ``ref`` against each other method and BestFixed*."""
    ids, masks = _pooled(study, tables, suites, train_families)
    a = method_correct(study, tables, ref, ids)
    out = {}
    for m in list(others) + ["BestFixed*"]:
        if m == "BestFixed*":
            b = [fixed_correct(tables, ids, best_fixed_subset(tables, ids))] * len(a)
        else:
            b = method_correct(study, tables, m, ids)
        for k, mask in masks.items():
            out[(m, k)] = compare([x[mask] for x in a], [y[mask] for y in b])
    return out


def split_scores(study: Study, tables: Mapping[str, RewardTable], suites: Sequence[str],
                 train_families: set[str]) -> pd.DataFrame:
    """The rows of :func:`~fgpo_core.experiments.study_report.study_scores` for the three
    :data:`SPLITS` instead of suites: per (method, seed), the questions of ``suites`` pooled and
    split in domain and out of domain, with ``suite`` naming the split. Every report that takes
    scores and a suite (``verdicts``, ``ablation_rows``...) then reads a split as it reads a suite;
    the per-question ``correct_vector`` of one split lines up across methods and seeds."""
    ids, masks = _pooled(study, tables, suites, train_families)
    sel = {s: tables[s].select(ids[s]) for s in ids}
    correct = np.concatenate([sel[s].correct for s in ids])
    tokens = np.concatenate([sel[s].tokens for s in ids]) if all(sel[s].tokens is not None for s in ids) else None
    n_tools = next(iter(sel.values())).n_tools
    rows = []
    for (method, seed), f in study.picks[study.picks.suite.isin(list(ids))].groupby(["method", "seed"], sort=False):
        by_suite = {s: g.set_index("question_id")["mask"] for s, g in f.groupby("suite")}
        if set(by_suite) != set(ids):
            continue
        picks = np.concatenate([by_suite[s].loc[ids[s]].to_numpy() for s in ids])
        for split, mask in masks.items():
            rows.append({"method": method, "seed": seed, "suite": split, "n": int(mask.sum()),
                         **summarise_picks(picks[mask], correct[mask], n_tools,
                                           None if tokens is None else tokens[mask]),
                         "correct_vector": correct_of(picks[mask], correct[mask])})
    return pd.DataFrame(rows)
