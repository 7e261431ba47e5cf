"""The fair test read back: each cell's choice on the in-domain dev, and the gaps a chapter states,
each with its two-level paired bootstrap interval (:func:`fgpo_core.evaluation.bootstrap.compare_many`).

A *cell* is one (estimator, regularizer) of :mod:`fgpo_core.experiments.factorial`. The study has
already chosen each method name's learning rate (and each run's checkpoint) on its dev suite; a
cell's weight is chosen here by the same rule on the same dev: the highest mean dev accuracy over
seeds, then the higher mean dev J, then the smaller rate and weight (:func:`choose_cells`). An
estimator's *own best* regularizer is chosen by that rule among its cells, and the *best sampled*
estimator at a regularizer among the sampled estimators' cells. No test question is read until the
choices are made.

The comparisons (:func:`fair_comparisons`), each pooled over the study's test suites and split in
and out of domain (:func:`fgpo_core.evaluation.domains.question_domain`), resampling questions
within (suite, family) and seeds:

* exactness at matched regularization: exact FGPO against the best sampled estimator, at each
  regularizer, and each at its own best regularizer;
* regularization at matched estimator: each estimator at its best regularized cell against itself
  with no regularizer;
* the coverage dial at matched regularization: FGPO on k subsets per visit against exact FGPO.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.bootstrap import compare_many, holm, strata_codes
from ..experiments.factorial import EXACT, SAMPLED, SAMPLED_EQ1, parse_cell

__all__ = [
    "cell_scores",
    "choose_cells",
    "own_best",
    "best_sampled",
    "fair_pairs",
    "pooled_correct",
    "fair_comparisons",
]

_ORDER = ["acc", "J", "lr", "weight"]
_ASCENDING = [False, False, True, True]


def cell_scores(sweep: pd.DataFrame, chosen_lr: Mapping[str, float]) -> pd.DataFrame:
    """One row per method name of the fair test: its cell, its weight, its chosen rate, and its mean
    dev accuracy and J over seeds at that rate (the study's dev suite)."""
    rows = []
    for m, lr in chosen_lr.items():
        try:
            est, reg, w = parse_cell(m)
        except ValueError:
            continue  # not a name of the factorial
        g = sweep[(sweep["method"] == m) & np.isclose(sweep["lr"], lr)]
        rows.append(
            {
                "method": m,
                "estimator": est,
                "regularizer": reg,
                "weight": w,
                "lr": float(lr),
                "acc": float(g["dev_accuracy"].mean()),
                "J": float(g["dev_J"].mean()),
                "seeds": len(g),
            }
        )
    if not rows:
        raise ValueError("the study holds no method of the fair test (<estimator>-noreg or <estimator>-<reg><w>)")
    return pd.DataFrame(rows)


def choose_cells(scores: pd.DataFrame) -> pd.DataFrame:
    """Each cell's chosen candidate (weight and rate), indexed by (estimator, regularizer)."""
    ranked = scores.sort_values(_ORDER, ascending=_ASCENDING, kind="stable")
    return ranked.groupby(["estimator", "regularizer"], sort=False).head(1).set_index(["estimator", "regularizer"])


def own_best(cells: pd.DataFrame, estimator: str, regularized: bool = False) -> pd.Series:
    """An estimator's cell chosen on dev among its regularizers (``regularized``: among those with a
    regularizer only)."""
    rows = cells.xs(estimator, level="estimator", drop_level=False)
    if regularized:
        rows = rows[rows.index.get_level_values("regularizer") != "none"]
    if rows.empty:
        raise ValueError(f"the study has no {'regularized ' if regularized else ''}cell of {estimator}")
    return rows.sort_values(_ORDER, ascending=_ASCENDING, kind="stable").iloc[0]


def best_sampled(
    cells: pd.DataFrame, regularizer: str | None = None, sampled: Sequence[str] = SAMPLED + SAMPLED_EQ1
) -> pd.Series:
    """The sampled estimators' best cell on dev, at ``regularizer`` (None: each at its own best)."""
    rows = cells[cells.index.get_level_values("estimator").isin(sampled)]
    if regularizer is not None:
        rows = rows[rows.index.get_level_values("regularizer") == regularizer]
    if rows.empty:
        raise ValueError(f"the study has no sampled cell{f' at {regularizer}' if regularizer else ''}")
    return rows.sort_values(_ORDER, ascending=_ASCENDING, kind="stable").iloc[0]


def fair_pairs(cells: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Every comparison of the fair test as ``name -> (method a, method b)`` (a minus b), from the
    cells the study holds."""
    pairs = {}
    regs = list(dict.fromkeys(cells.index.get_level_values("regularizer")))
    have = set(cells.index.get_level_values("estimator"))
    if "fgpo" in have:
        for r in regs:
            if ("fgpo", r) in cells.index:
                try:
                    pairs[f"FGPO vs best sampled, {r}"] = (
                        cells.loc[("fgpo", r), "method"],
                        best_sampled(cells, r)["method"],
                    )
                except ValueError:
                    pass
        pairs["FGPO vs best sampled, each at its best"] = (
            own_best(cells, "fgpo")["method"],
            best_sampled(cells)["method"],
        )
    for est in [e for e in cells.index.get_level_values("estimator").unique()]:
        if (est, "none") in cells.index and len(cells.xs(est, level="estimator")) > 1:
            pairs[f"{est}: best regularizer vs none"] = (
                own_best(cells, est, regularized=True)["method"],
                cells.loc[(est, "none"), "method"],
            )
    for est in [e for e in EXACT if e != "fgpo" and e in have]:
        for r in regs:
            if (est, r) in cells.index and ("fgpo", r) in cells.index:
                pairs[f"{est} vs fgpo, {r}"] = (cells.loc[(est, r), "method"], cells.loc[("fgpo", r), "method"])
    return pairs


def pooled_correct(picks: pd.DataFrame, tables: Mapping, suites: Sequence[str], methods: Sequence[str]):
    """``(correct, suite, family, ids)`` over the pooled questions of ``suites`` (in the study's order):
    ``correct[method]`` is ``[seeds, Q]`` bool, whether each seed's pick is right."""
    correct, suite_of, family_of, ids_of = {m: [] for m in methods}, [], [], []
    for s in suites:
        f = picks[picks["suite"] == s]
        ids = f[(f["method"] == methods[0]) & (f["seed"] == f["seed"].min())]["question_id"].tolist()
        tab = tables[s].select(ids)
        suite_of += [s] * len(ids)
        family_of += list(tab.family)
        ids_of += ids
        for m in methods:
            g = f[f["method"] == m].pivot(index="seed", columns="question_id", values="mask")[ids].to_numpy()
            if not len(g):
                raise ValueError(f"the study holds no picks of {m} on {s}")
            correct[m].append(tab.correct[np.arange(len(ids))[None, :], g])
    return (
        {m: np.concatenate(v, axis=1) for m, v in correct.items()},
        np.array(suite_of),
        np.array(family_of),
        np.array(ids_of),
    )


def fair_comparisons(
    correct: Mapping[str, np.ndarray],
    pairs: Mapping[str, tuple[str, str]],
    suites: Sequence[str],
    families: Sequence[str],
    in_domain: np.ndarray,
    resamples: int = 4000,
    seed: int = 0,
) -> pd.DataFrame:
    """The gaps of ``pairs`` pooled, in domain and out of domain, with Holm over the whole page.

    ``correct``: method -> ``[seeds, Q]`` bool over the pooled test questions (suites concatenated);
    ``suites``, ``families``: each pooled question's suite and family (the bootstrap's strata);
    ``in_domain``: each question's domain under the book's rule."""
    in_domain = np.asarray(in_domain, dtype=bool)
    strata = strata_codes(np.asarray(suites), np.asarray(families))
    frames = []
    for split, keep in (
        ("pooled", np.ones(len(in_domain), bool)),
        ("in domain", in_domain),
        ("out of domain", ~in_domain),
    ):
        if not keep.any():
            continue
        sub = {
            name: (np.asarray(correct[a])[:, keep], np.asarray(correct[b])[:, keep]) for name, (a, b) in pairs.items()
        }
        f = compare_many(sub, strata[keep], resamples=resamples, seed=seed)
        frames.append(f.assign(split=split, a=[pairs[n][0] for n in f.index], b=[pairs[n][1] for n in f.index]))
    out = pd.concat(frames).rename_axis("comparison").reset_index()
    out["p_holm"] = holm(out["p"].to_numpy())  # the page's every comparison, every split
    return out
