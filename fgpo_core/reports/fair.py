"""The fair test read back: each cell's choice on the in-domain dev, and the gaps a chapter states,
each with its two-level paired bootstrap interval (:func:`fgpo_core.evaluation.bootstrap.compare_many`).

A *cell* is one (estimator, regularizer) of :mod:`fgpo_core.experiments.factorial`. The study has
already chosen each method name's learning rate (and each run's checkpoint) on its dev suite; a
cell's weight is chosen here by the same rule on the same dev: the highest mean dev accuracy over
seeds, then the higher mean dev J, then the smaller rate and weight, then the earlier regularizer
of the factorial's list (:func:`choose_cells`). An
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

from dataclasses import dataclass
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
    "FairTest",
    "load_fair",
    "cell_grid",
    "learning_curves",
    "interval_text",
    "comparison_table",
    "signal_summary",
    "observed_dead",
    "REGULARIZER_LABELS",
    "estimator_label",
    "cell_label",
    "study_correct",
    "headline_row",
]

_ORDER = ["acc", "J", "lr", "weight", "reg_rank"]
_ASCENDING = [False, False, True, True, True]
_REG_RANK = {"none": 0, "ent": 1, "klu": 2}
_J_DIGITS = 4
"""On a tie the earlier regularizer of the factorial's list is taken. KL to uniform is the entropy
bonus (the same gradient), so their cells tie up to floating-point noise; dev J is compared to
``_J_DIGITS`` decimals, so that noise does not decide."""


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
                "acc": round(float(g["dev_accuracy"].mean()), 6),
                "J": round(float(g["dev_J"].mean()), _J_DIGITS),
                "seeds": len(g),
                "reg_rank": _REG_RANK.get(reg, len(_REG_RANK)),
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


# --- the study read back for a chapter -----------------------------------------------------------


@dataclass
class FairTest:
    """The fair test as a chapter reads it: the study, each cell's choice on the in-domain dev, the
    comparisons' method pairs, and every pooled test question's correctness per method and seed with
    its suite, family and domain (the book's rule)."""

    study: object
    cells: pd.DataFrame
    pairs: dict
    correct: dict
    suites: np.ndarray
    families: np.ndarray
    ids: np.ndarray
    in_domain: np.ndarray
    test_suites: list

    def accuracy(self, method: str, keep: np.ndarray | None = None) -> float:
        """Mean accuracy (%) of ``method`` over its seeds and the pooled questions (``keep``: a mask)."""
        c = self.correct[method]
        return 100.0 * float((c if keep is None else c[:, keep]).mean())

    def comparisons(self, pairs: Mapping[str, tuple[str, str]] | None = None, resamples: int = 4000) -> pd.DataFrame:
        """:func:`fair_comparisons` of ``pairs`` (default: every comparison of :func:`fair_pairs`)."""
        return fair_comparisons(
            self.correct, pairs or self.pairs, self.suites, self.families, self.in_domain, resamples=resamples
        )


def load_fair(study_dir, table_dir, bench_dir, cells_from=None) -> FairTest:
    """Read a fair-test study (``fgpo study --methods fair``) and its inputs into a :class:`FairTest`.

    ``cells_from``: another :class:`FairTest` whose cells (chosen on the in-domain dev) this study's
    methods re-run with more seeds, each name with its rate fixed (``<name>-lr<rate>``); the pairs of
    ``cells_from`` whose two methods were both re-run are kept, renamed to this study's names."""
    from ..evaluation.domains import question_domains
    from ..experiments.study_results import load_study
    from ..genomics.benchmarks import load_benchmark
    from ..table import load_tables

    st = load_study(study_dir)
    tests = [s for s in st.manifest["config"]["suites"].split(",") if s]
    tables = load_tables({"r": table_dir}, tests)["r"]
    _, questions = load_benchmark(bench_dir)
    domain = question_domains({s: questions[s] for s in tests}, questions["train"])
    if cells_from is None:
        cells = choose_cells(cell_scores(st.sweep, st.manifest["chosen_lr"]))
        pairs = fair_pairs(cells)
    else:
        fixed = {m.rsplit("-lr", 1)[0]: m for m in st.manifest["chosen_lr"]}
        cells = cells_from.cells.assign(method=[fixed.get(m, m) for m in cells_from.cells["method"]])
        pairs = {k: (fixed[a], fixed[b]) for k, (a, b) in cells_from.pairs.items() if a in fixed and b in fixed}
        if not pairs:
            raise ValueError(f"{study_dir} re-runs no pair of the fair test's comparisons (<name>-lr<rate>)")
    have = set(st.picks["method"].unique())
    methods = list(dict.fromkeys([m for p in pairs.values() for m in p] + [m for m in cells["method"] if m in have]))
    correct, suite_of, family_of, ids = pooled_correct(st.picks, tables, tests, methods)
    in_domain = np.array([domain[s][i] == "ID" for s, i in zip(suite_of, ids)])
    return FairTest(st, cells, pairs, correct, suite_of, family_of, ids, in_domain, tests)


def cell_grid(ft: FairTest, estimators: Sequence[str], regularizers: Sequence[str]) -> pd.DataFrame:
    """Pooled test accuracy (%) of each chosen cell, mean over seeds: one row per estimator, one column
    per regularizer (NaN: the study has no such cell)."""
    grid = pd.DataFrame(index=list(estimators), columns=list(regularizers), dtype=float)
    for est in estimators:
        for reg in regularizers:
            if (est, reg) in ft.cells.index and ft.cells.loc[(est, reg), "method"] in ft.correct:
                grid.loc[est, reg] = ft.accuracy(ft.cells.loc[(est, reg), "method"])
    return grid


def learning_curves(study, methods: Sequence[str]) -> pd.DataFrame:
    """Test accuracy (%) pooled over the study's test suites at each kept checkpoint, against question
    visits and reward reads: one row per (method, seed, step) with ``visits``, ``reward_evaluations``
    (the reasoner answers read so far) and ``accuracy``."""
    ck = study.checkpoints
    if ck is None or ck.empty:
        raise ValueError("the study kept no checkpoints (run it with --checkpoints N)")
    ck = ck[ck["method"].isin(methods)]
    pooled = (
        ck.assign(right=ck["accuracy"] * ck["n"] / 100.0)
        .groupby(["method", "seed", "step"], as_index=False)[["right", "n"]]
        .sum()
    )
    pooled["accuracy"] = 100.0 * pooled["right"] / pooled["n"]
    cost = study.curves[study.curves["method"].isin(methods)][
        ["method", "seed", "step", "visits", "reward_evaluations"]
    ]
    cost = cost.sort_values("step")
    out = pd.merge_asof(pooled.sort_values("step"), cost, on="step", by=["method", "seed"], direction="backward")
    out[["visits", "reward_evaluations"]] = out[["visits", "reward_evaluations"]].fillna(0)
    return out[["method", "seed", "step", "visits", "reward_evaluations", "accuracy"]].sort_values(
        ["method", "seed", "step"], ignore_index=True
    )


def interval_text(gap: float, low: float, high: float) -> str:
    """``+0.3 [−0.6, +1.0]``: a gap and its interval, in points, true minus signs; one decimal, or
    two where an end of the interval would read 0.0 in one, so that a reader can tell an interval
    that touches zero from one that clears it. A gap that rounds to zero reads ``+0.0``, as the
    prose writes it (:func:`~fgpo_core.book.claims.fmt_number`); a bound keeps its sign."""
    from ..book.claims import fmt_number

    d = 2 if min(abs(low), abs(high)) < 0.05 else 1
    return f"{fmt_number(gap, d, True)} [{low:+.{d}f}, {high:+.{d}f}]".replace("-", "\u2212")


def comparison_table(comparisons: pd.DataFrame, rows: Mapping[str, str], alpha: float = 0.05) -> pd.DataFrame:
    """The gaps of ``comparisons`` (:func:`fair_comparisons`) named in ``rows`` (comparison -> label,
    in that order) as a plain table: one column per split, each cell the gap with its 95% interval,
    a star when the Holm-adjusted p-value (over every comparison and split of ``comparisons``) is
    below ``alpha``."""
    out = {}
    for name, lab in rows.items():
        f = comparisons[comparisons["comparison"] == name]
        if f.empty:
            raise ValueError(f"no comparison named {name!r}")
        out[lab] = {
            r.split: interval_text(r.gap, r.low, r.high) + ("\u00a0*" if r.p_holm < alpha else "")
            for r in f.itertuples()
        }
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("comparison (points)").reset_index()


def signal_summary(signal: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """One row per cell of :func:`fgpo_core.experiments.fair_signal.fair_signal`'s frame: the policy's
    entropy (nats), the chance a GRPO group of its visit is dead (%), the median signal-to-noise ratio
    of one visit over the questions whose rewards differ, and the share of those with SNR below 1 (%),
    each over seeds and the spread of test questions."""
    rows = []
    for (est, reg), f in signal.groupby(["estimator", "regularizer"], sort=False):
        live = f[f["live"]]
        rows.append(
            {
                "policy trained by": labels.get(est, est),
                "regularizer": {"none": "none", "ent": "entropy bonus", "klu": "KL to uniform"}.get(reg, reg),
                "entropy of q (nats)": float(f["entropy"].mean()),
                "dead groups (%)": 100.0 * float(f["dead"].mean()),
                "median SNR": float(live["snr"].fillna(0.0).median()),
                "SNR below 1 (%)": 100.0 * float((live["snr"].fillna(0.0) < 1).mean()),
            }
        )
    return pd.DataFrame(rows)


def observed_dead(study, methods: Sequence[str]) -> pd.Series:
    """The share (%) of a sampled method's own groups that were dead over its training (mean over the
    logged steps and seeds of its runs at the chosen rate), per method."""
    c = study.curves
    c = c[c["method"].isin(methods)]
    if c.empty or "dead_observed" not in c:
        raise ValueError("the study logged no dead groups of these methods")
    return c.groupby("method")["dead_observed"].mean().reindex(list(methods))


REGULARIZER_LABELS = {"none": "no regularizer", "ent": "entropy bonus", "klu": "KL to uniform"}
"""How a chapter names each regularizer of the factorial."""


def estimator_label(estimator: str) -> str:
    """The display name of one of the factorial's estimators (``grpo-clip-u2``: "GRPO (clipped ratio,
    2 updates per draw)"; ``rloo-eq1``: "RLOO (Eq. 1)")."""
    from .study import label

    if estimator.endswith("-eq1") and estimator != "grpo-eq1":
        return f"{label(estimator[: -len('-eq1')])} (Eq. 1)"
    return label(estimator)


def cell_label(method: str) -> str:
    """The display name of a fair-test method name, its regularizer spelled out: ``rloo-ent0.1`` reads
    "RLOO + entropy bonus 0.1", ``fgpo-noreg`` "FGPO, no regularizer" (a fixed rate, ``-lr<r>``, is
    dropped)."""
    base = method.rsplit("-lr", 1)[0] if "-lr" in method else method
    est, reg, w = parse_cell(base)
    if reg == "none":
        return f"{estimator_label(est)}, no regularizer"
    return f"{estimator_label(est)} + {REGULARIZER_LABELS[reg]} {w:g}"


def study_correct(study, tables: Mapping, methods: Sequence[str], suites: Sequence[str]):
    """``(correct, fixed, strata)`` of any study on its pooled test questions of ``suites``:
    ``correct[method]`` ``[seeds, Q]`` bool, ``fixed`` ``[Q]`` whether the best fixed subset (chosen
    with hindsight on these questions) is right, and each question's (suite, family) stratum code."""
    from ..experiments.domains import best_fixed_subset, fixed_correct, method_correct

    ids = {s: np.asarray(study.pick_matrix(s, methods[0])[0]) for s in suites}
    correct = {m: np.stack(method_correct(study, tables, m, ids)).astype(bool) for m in methods}
    fixed = fixed_correct(tables, ids, best_fixed_subset(tables, ids))
    strata = strata_codes(
        np.concatenate([[s] * len(ids[s]) for s in suites]),
        np.concatenate([tables[s].select(ids[s]).family for s in suites]),
    )
    return correct, fixed, strata


def headline_row(a, b, fixed, strata, resamples: int = 4000) -> dict:
    """One setting of the first page's table: ``a`` (FGPO) and ``b`` (its sampled rival), ``[seeds, Q]``
    bool, and ``fixed`` ``[Q]`` (the best fixed subset) on the same questions: accuracies (%, mean over
    seeds) and the two gaps with their two-level paired bootstrap intervals (``iv_other``,
    ``iv_fixed``: :class:`~fgpo_core.evaluation.bootstrap.Interval`)."""
    from ..evaluation.bootstrap import paired_bootstrap

    a, b = np.atleast_2d(np.asarray(a, bool)), np.atleast_2d(np.asarray(b, bool))
    fixed = np.asarray(fixed, bool)[None, :]
    iv_b = paired_bootstrap(a, b, strata, resamples=resamples)
    iv_f = paired_bootstrap(a, fixed, strata, resamples=resamples)
    return {
        "questions": int(a.shape[1]),
        "seeds": int(a.shape[0]),
        "fgpo": 100.0 * float(a.mean()),
        "other": 100.0 * float(b.mean()),
        "fixed": 100.0 * float(fixed.mean()),
        "iv_other": iv_b,
        "iv_fixed": iv_f,
    }
