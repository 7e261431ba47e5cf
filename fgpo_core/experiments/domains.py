"""A study's test questions split in domain and out of domain, and compared by the book's rule.

The book's rule for a domain is by family and organism
(:func:`fgpo_core.evaluation.domains.question_domain`); a split function given ``domains``
(:func:`fgpo_core.evaluation.domains.question_domains`: suite -> question id -> "ID"/"OOD") reads
it, and without it the former rule (family only, every microbe question OOD,
:func:`~fgpo_core.evaluation.domains.domain_of`). :func:`domain_counts` tabulates both;
:func:`twin_measure` measures how near TF-motif (the reworded twin of the training family
``regulator``) and taxonomy (no twin) sit to the training questions in the selector's features.
Every comparison here is question-paired over the test suites pooled and over each split,
seed by seed, and decided by :func:`fgpo_core.evaluation.difference.compare` (the former rule;
the book's rule is :func:`fgpo_core.evaluation.difference.paired_bootstrap`).

The fixed-subset reference ``BestFixed*`` is the one subset whose accuracy over all the
pooled test questions is highest, chosen with hindsight on those questions (the star), and
then read on each split.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.bootstrap import Interval
from ..evaluation.difference import Verdict, compare
from ..evaluation.domains import TWINS, domain_class, domain_of, question_domain, training_seen
from ..evaluation.picks import correct_of, summarise_picks
from ..table import RewardTable
from .study import Study

__all__ = [
    "SPLITS",
    "study_training_table",
    "split_masks",
    "method_correct",
    "fixed_correct",
    "best_fixed_subset",
    "domain_accuracy",
    "domain_verdicts",
    "domain_intervals",
    "split_scores",
    "domain_counts",
    "class_accuracy",
    "nearest_training",
    "twin_measure",
]

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


def split_masks(
    tables: Mapping[str, RewardTable],
    ids: Mapping[str, np.ndarray],
    train_families: set[str],
    domains: Mapping | None = None,
) -> dict[str, np.ndarray]:
    """Boolean masks over the pooled questions (suites concatenated in ``ids`` order); with
    ``domains`` (suite -> question id -> "ID"/"OOD") the book's rule, else the former one."""
    if domains is not None:
        seen = np.array([domains[s][q] == "ID" for s in ids for q in np.asarray(ids[s]).tolist()], dtype=bool)
    else:
        seen = np.array(
            [domain_of(s, f, train_families) == "ID" for s in ids for f in tables[s].select(ids[s]).family], dtype=bool
        )
    return {"pooled": np.ones(len(seen), bool), "in domain": seen, "out of domain": ~seen}


def method_correct(
    study: Study, tables: Mapping[str, RewardTable], method: str, ids: Mapping[str, np.ndarray]
) -> list[np.ndarray]:
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


def _pooled(study, tables, suites, train_families, domains=None):
    ids = _questions(study, tables, suites)
    return ids, split_masks(tables, ids, train_families, domains)


def domain_accuracy(
    study: Study,
    tables: Mapping[str, RewardTable],
    methods: Sequence[str],
    suites: Sequence[str],
    train_families: set[str],
    domains: Mapping | None = None,
) -> pd.DataFrame:
    """Accuracy (%, mean over seeds) of each method and of BestFixed* on each split, with the
    number of questions per split in the row ``questions``."""
    ids, masks = _pooled(study, tables, suites, train_families, domains)
    rows = {}
    for m in methods:
        c = method_correct(study, tables, m, ids)
        rows[m] = {k: float(np.mean([100.0 * x[mask].mean() for x in c])) for k, mask in masks.items()}
    best = fixed_correct(tables, ids, best_fixed_subset(tables, ids))
    rows["BestFixed*"] = {k: 100.0 * float(best[mask].mean()) for k, mask in masks.items()}
    rows["questions"] = {k: float(mask.sum()) for k, mask in masks.items()}
    return pd.DataFrame(rows).T[list(SPLITS)]


def domain_verdicts(
    study: Study,
    tables: Mapping[str, RewardTable],
    ref: str,
    others: Sequence[str],
    suites: Sequence[str],
    train_families: set[str],
    domains: Mapping | None = None,
) -> dict[tuple[str, str], Verdict]:
    """``{(other, split): Verdict}`` of ``ref`` against each other method and BestFixed*."""
    ids, masks = _pooled(study, tables, suites, train_families, domains)
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


def domain_intervals(
    study: Study,
    tables: Mapping[str, RewardTable],
    ref: str,
    others: Sequence[str],
    suites: Sequence[str],
    domains: Mapping,
    resamples: int = 4000,
) -> dict[tuple[str, str], Interval]:
    """``{(other, split): Interval}``: ``ref`` minus each other method and BestFixed* by the book's
    rule, the two-level paired bootstrap (:func:`fgpo_core.evaluation.bootstrap.paired_bootstrap`:
    questions resampled within suite and family, seeds resampled), on the pooled questions and each
    split of the book's domain rule (``domains``: suite -> question id -> "ID"/"OOD")."""
    from ..evaluation.bootstrap import paired_bootstrap, strata_codes

    ids, masks = _pooled(study, tables, suites, set(), domains)
    strata = strata_codes(
        np.concatenate([[s] * len(ids[s]) for s in ids]), np.concatenate([tables[s].select(ids[s]).family for s in ids])
    )
    a = np.stack(method_correct(study, tables, ref, ids))
    out = {}
    for m in list(others) + ["BestFixed*"]:
        if m == "BestFixed*":
            b = fixed_correct(tables, ids, best_fixed_subset(tables, ids))[None, :]
        else:
            b = np.stack(method_correct(study, tables, m, ids))
        for k, mask in masks.items():
            out[(m, k)] = paired_bootstrap(a[:, mask], b[:, mask], strata[mask], resamples=resamples)
    return out


def split_scores(
    study: Study,
    tables: Mapping[str, RewardTable],
    suites: Sequence[str],
    train_families: set[str],
    domains: Mapping | None = None,
) -> pd.DataFrame:
    """The rows of :func:`~fgpo_core.reports.study.study_scores` for the three
    :data:`SPLITS` instead of suites: per (method, seed), the questions of ``suites`` pooled and
    split in domain and out of domain, with ``suite`` naming the split. Every report that takes
    scores and a suite (``verdicts``, ``ablation_rows``...) then reads a split as it reads a suite;
    the per-question ``correct_vector`` of one split lines up across methods and seeds."""
    ids, masks = _pooled(study, tables, suites, train_families, domains)
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
            rows.append(
                {
                    "method": method,
                    "seed": seed,
                    "suite": split,
                    "n": int(mask.sum()),
                    **summarise_picks(picks[mask], correct[mask], n_tools, None if tokens is None else tokens[mask]),
                    "correct_vector": correct_of(picks[mask], correct[mask]),
                }
            )
    return pd.DataFrame(rows)


def domain_counts(suites: Mapping[str, list], train_questions) -> pd.DataFrame:
    """Questions per (suite, family, class) with the book's rule's verdict and the former rule's:
    columns ``suite``, ``family``, ``class`` (:func:`~fgpo_core.evaluation.domains.domain_class`),
    ``domain`` (book's rule), ``former`` (:func:`~fgpo_core.evaluation.domains.domain_of`), ``n``."""
    seen = training_seen(train_questions)
    rows = [
        {
            "suite": s,
            "family": q.family,
            "class": domain_class(q, seen),
            "domain": question_domain(q, seen),
            "former": domain_of(s, q.family, seen["families"]),
        }
        for s, qs in suites.items()
        for q in qs
    ]
    cols = ["suite", "family", "class", "domain", "former"]
    return pd.DataFrame(rows, columns=cols).groupby(cols, sort=True).size().rename("n").reset_index()


def nearest_training(train_x: np.ndarray, test_x: np.ndarray, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """For each test row, the index of its nearest training row by cosine similarity and the cosine
    distance ``1 - cos`` to it (ties: the lower index)."""

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        n = np.linalg.norm(x, axis=1, keepdims=True)
        if x.ndim != 2 or not np.all(n > 0):
            raise ValueError("features must be a [rows, dims] array without all-zero rows")
        return x / n

    tr, te = unit(train_x), unit(test_x)
    if tr.shape[1] != te.shape[1]:
        raise ValueError(f"training features have {tr.shape[1]} dimensions, test features {te.shape[1]}")
    idx, dist = [], []
    for i in range(0, len(te), chunk):
        sim = te[i : i + chunk] @ tr.T
        j = sim.argmax(1)
        idx.append(j)
        dist.append(1.0 - sim[np.arange(len(j)), j])
    return (np.concatenate(idx) if idx else np.zeros(0, int)), (np.concatenate(dist) if dist else np.zeros(0))


def twin_measure(
    features, suites: Mapping[str, list], train_questions, families: Sequence[str] | None = None
) -> pd.DataFrame:
    """How near each test family sits to the training questions in the selector's features.

    ``features``: a :class:`~fgpo_core.selectors.features.FeatureSet` holding ``train`` and every
    suite of ``suites`` (name -> questions); ``train_questions``: the training questions the
    selector read (their features are the neighbours). One row per (family, shape), and per family
    over both shapes (``shape`` "all"), over the questions of every suite: ``n``, ``twin`` (the
    training family it rewords, :data:`~fgpo_core.evaluation.domains.TWINS`, or ""), ``nn_twin``
    (% whose nearest training neighbour is of the twin family; NaN without a twin), ``nn_same`` (%
    whose nearest neighbour is of its own family), ``nn_top`` (the commonest neighbour family) and
    its share ``nn_top_share`` (%), and the cosine distance to the nearest neighbour (``dist_q10``,
    ``dist_median``, ``dist_q90``)."""
    train = list(train_questions)
    tr_x = features.rows("train", [q.id for q in train])
    tr_fam = np.array([q.family for q in train])
    qs = [(s, q) for s, sq in suites.items() for q in sq if families is None or q.family in families]
    if not qs:
        raise ValueError("no test question of the named families")
    te_x = np.concatenate(
        [
            features.rows(s, [q.id for q in sq if families is None or q.family in families])
            for s, sq in suites.items()
            if any(families is None or q.family in families for q in sq)
        ]
    )
    nn, dist = nearest_training(tr_x, te_x)
    frame = pd.DataFrame(
        {"family": [q.family for _, q in qs], "shape": [q.shape for _, q in qs], "nn_family": tr_fam[nn], "dist": dist}
    )
    rows = []
    for fam, g0 in frame.groupby("family", sort=True):
        twin = TWINS.get(fam, "")
        for shape, g in [("all", g0)] + list(g0.groupby("shape", sort=True)):
            top = g.nn_family.value_counts()
            rows.append(
                {
                    "family": fam,
                    "shape": shape,
                    "n": len(g),
                    "twin": twin,
                    "nn_twin": 100.0 * float((g.nn_family == twin).mean()) if twin else float("nan"),
                    "nn_same": 100.0 * float((g.nn_family == fam).mean()),
                    "nn_top": top.index[0],
                    "nn_top_share": 100.0 * float(top.iloc[0] / len(g)),
                    "dist_q10": float(g.dist.quantile(0.1)),
                    "dist_median": float(g.dist.median()),
                    "dist_q90": float(g.dist.quantile(0.9)),
                }
            )
    return pd.DataFrame(rows)


def class_accuracy(
    study: Study, tables: Mapping[str, RewardTable], methods: Sequence[str], suites: Mapping[str, list], train_questions
) -> pd.DataFrame:
    """Accuracy (%, mean over seeds) of each method and of BestFixed* (chosen on the pooled
    questions) on each domain class (:func:`~fgpo_core.evaluation.domains.domain_class`) of the
    questions of ``suites`` (name -> questions): transfer to TF-motif (``"twin family"``) read beside
    transfer to the taxonomy of organisms never seen (``"new family"``); the row ``questions``
    counts them."""
    seen = training_seen(train_questions)
    ids = _questions(study, tables, list(suites))
    cls_of = {(s, x.id): domain_class(x, seen) for s, qs in suites.items() for x in qs}
    cls = np.array([cls_of[(s, i)] for s in ids for i in np.asarray(ids[s]).tolist()])
    masks = {c: cls == c for c in sorted(set(cls.tolist()))}
    rows = {}
    for m in methods:
        c = method_correct(study, tables, m, ids)
        rows[m] = {k: float(np.mean([100.0 * x[mask].mean() for x in c])) for k, mask in masks.items()}
    best = fixed_correct(tables, ids, best_fixed_subset(tables, ids))
    rows["BestFixed*"] = {k: 100.0 * float(best[mask].mean()) for k, mask in masks.items()}
    rows["questions"] = {k: float(mask.sum()) for k, mask in masks.items()}
    return pd.DataFrame(rows).T
