"""The post-training study read back, on the policy head and on the LM selector: each arm's
accuracy in and out of domain, and the gaps between arms by the book's rule.

Domains follow the book's rule by family and organism
(:func:`fgpo_core.evaluation.domains.question_domain`; :func:`test_domains` reads it from the
benchmark for the questions a selector trained on). Out of domain, :data:`PARTS` also reads two
classes apart: TF-motif, the training family ``regulator``'s reworded twin
(:data:`~fgpo_core.evaluation.domains.TWINS`), and the taxonomy of organisms never seen in training
(no twin). Every gap is the two-level paired bootstrap's (:func:`fgpo_core.evaluation.bootstrap.compare_many`:
questions resampled within suite and family, seeds resampled), with Holm's adjustment over every
comparison of the page (:func:`with_holm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.bootstrap import MARGIN
from ..evaluation.picks import correct_of
from ..table import RewardTable
from .companion_lm import (
    START_ARM,
    domain_correct,
    domain_mcnemar,
    lm_companion_costs,
    lm_companion_tests,
    load_lm_companion,
    parse_lm_companion_method,
    with_start,
)

__all__ = [
    "PARTS",
    "test_domains",
    "DomainReads",
    "read_picks",
    "accuracy_table",
    "setting_frame",
    "domain_gaps",
    "with_holm",
    "gap_table",
    "Gap",
    "gap_of",
    "lm_arm_table",
    "load_lm_reads",
    "lm_gap",
    "domain_correct",
    "parse_lm_companion_method",
    "START_ARM",
    "with_start",
    "load_lm_companion",
    "lm_companion_costs",
    "domain_mcnemar",
    "lm_companion_tests",
]

PARTS = {
    "in domain": ("ID",),
    "out of domain": ("OOD",),
    "TF-motif, the twin": ("twin family",),
    "taxonomy, unseen organisms": ("new family",),
}
"""The parts of the test questions a chapter reads: each a column name -> the domains ("ID",
"OOD") or domain classes (:func:`~fgpo_core.evaluation.domains.domain_class`) it pools."""


def test_domains(bench_dir, suites: Sequence[str], train_ids: Sequence[str] | None = None) -> tuple[dict, dict]:
    """``(domains, classes)``: suite -> question id -> "ID"/"OOD" by the book's rule, and -> its domain
    class, for every question of ``suites``, against the training questions ``train_ids`` (default:
    the benchmark's whole training pool)."""
    from ..evaluation.domains import domain_class, question_domain, training_seen
    from ..genomics.benchmarks import load_benchmark

    _, qs = load_benchmark(bench_dir)
    train = qs["train"]
    if train_ids is not None:
        by_id = {q.id: q for q in train}
        missing = [i for i in train_ids if i not in by_id]
        if missing:
            raise ValueError(
                f"the benchmark's training pool lacks {len(missing)} of the questions, e.g. {missing[0]!r}"
            )
        train = [by_id[i] for i in train_ids]
    seen = training_seen(train)
    domains = {s: {q.id: question_domain(q, seen) for q in qs[s]} for s in suites}
    classes = {s: {q.id: domain_class(q, seen) for q in qs[s]} for s in suites}
    return domains, classes


@dataclass
class DomainReads:
    """Every pooled test question (suites concatenated) read for each method: ``masks`` (method ->
    ``[seeds, Q]`` subsets picked, -1 a format failure), ``correct`` (the same, right or wrong), each
    question's ``suites``, ``families``, ``ids``, ``domain`` ("ID"/"OOD"), ``klass`` (its domain
    class), and ``table`` (``[Q, 2**n]``: every subset right or wrong) with the tools' ``names``."""

    masks: dict
    correct: dict
    suites: np.ndarray
    families: np.ndarray
    ids: np.ndarray
    domain: np.ndarray
    klass: np.ndarray
    table: np.ndarray
    names: list

    def part(self, name: str) -> np.ndarray:
        """Boolean ``[Q]``: the questions of a part (:data:`PARTS`' column, or "pooled")."""
        if name == "pooled":
            return np.ones(len(self.ids), bool)
        if name not in PARTS:
            raise ValueError(f"unknown part {name!r}: use 'pooled' or one of {', '.join(PARTS)}")
        return np.isin(self.domain, PARTS[name]) | np.isin(self.klass, PARTS[name])

    def accuracy(self, method: str, part: str = "pooled") -> float:
        """Accuracy (%) over the part's questions and every seed."""
        return 100.0 * float(self.correct[method][:, self.part(part)].mean())

    def per_seed(self, method: str, part: str = "pooled") -> np.ndarray:
        """Accuracy (%) of each seed on the part's questions."""
        return 100.0 * self.correct[method][:, self.part(part)].mean(1)

    def share(self, method: str, what: str, tool: str | None = None) -> float:
        """Share (%) of a method's picks, over questions and seeds: ``what`` "empty" (no tool), "tool"
        (calls ``tool``) or "top" (the commonest subset)."""
        m = self.masks[method]
        if what == "empty":
            return 100.0 * float((m == 0).mean())
        if what == "tool":
            bit = 1 << self.names.index(tool)
            return 100.0 * float(((m >= 0) & ((np.maximum(m, 0) & bit) > 0)).mean())
        if what == "top":
            return 100.0 * float(pd.Series(m.ravel()).value_counts(normalize=True).iloc[0])
        raise ValueError(f"unknown share {what!r}: use 'empty', 'tool' or 'top'")

    def top_subset(self, method: str) -> int:
        """The subset a method picks most often."""
        return int(pd.Series(self.masks[method].ravel()).value_counts().index[0])

    def tools(self, method: str) -> float:
        """Tools per well-formed pick."""
        m = self.masks[method]
        return float(np.mean([bin(int(x)).count("1") for x in m[m >= 0]])) if (m >= 0).any() else np.nan


def read_picks(
    picks: pd.DataFrame,
    tables: Mapping[str, RewardTable],
    domains: Mapping,
    classes: Mapping,
    fixed: Mapping[str, int] | None = None,
) -> DomainReads:
    """:class:`DomainReads` of ``picks`` (``method, seed, suite, question_id, mask``; a study's or the
    LM study's) on the questions of the first method's first seed, suite by suite in the picks'
    order. ``fixed``: name -> subset, read as a method with one row (e.g. ``{"No-Tool": 0}``).
    Raises ``ValueError`` when a method lacks one of those questions or the rule names no question."""
    first = picks[(picks.method == picks.method.iloc[0]) & (picks.seed == picks.seed.iloc[0])]
    suites = [s for s in dict.fromkeys(first.suite) if s in tables]
    ids = {s: list(first.question_id[first.suite == s]) for s in suites}
    masks: dict = {}
    for m, f in picks.groupby("method", sort=False):
        parts = []
        for s in suites:
            g = f[f.suite == s].pivot(index="seed", columns="question_id", values="mask")
            lack = [i for i in ids[s] if i not in g.columns]
            if lack or g.isna().any().any():
                raise ValueError(f"{m} has no pick on {len(lack) or 'some'} of {s}'s questions")
            parts.append(g[ids[s]].to_numpy(np.int64))
        masks[m] = np.concatenate(parts, axis=1)
    sel = {s: tables[s].select(ids[s]) for s in suites}
    table = np.concatenate([sel[s].correct for s in suites]).astype(bool)
    try:
        dom = np.array([domains[s][i] for s in suites for i in ids[s]])
        cls = np.array([classes[s][i] for s in suites for i in ids[s]])
    except KeyError as e:
        raise ValueError(f"the domain rule names no question {e}") from None
    for name, subset in (fixed or {}).items():
        masks[name] = np.full((1, len(table)), int(subset), np.int64)
    correct = {m: np.stack([correct_of(row, table) for row in x]) for m, x in masks.items()}
    return DomainReads(
        masks,
        correct,
        np.concatenate([[s] * len(ids[s]) for s in suites]),
        np.concatenate([np.asarray(sel[s].family) for s in suites]),
        np.concatenate([ids[s] for s in suites]),
        dom,
        cls,
        table,
        list(sel[suites[0]].names()),
    )


def accuracy_table(reads: DomainReads, rows: Mapping[str, str], parts: Sequence[str] = tuple(PARTS)) -> pd.DataFrame:
    """Accuracy (%, mean over seeds) of each method of ``rows`` (label -> method, in order) on each
    part, each column headed by its part and its number of questions (``in domain (1,207)``)."""
    head = {p: f"{p} ({int(reads.part(p).sum()):,d})" for p in parts}
    return pd.DataFrame({head[p]: [reads.accuracy(m, p) for m in rows.values()] for p in parts}, index=list(rows))


def setting_frame(reads: DomainReads, methods: Mapping) -> pd.DataFrame:
    """For a figure: per setting (``methods``: setting -> method, those read), in-domain and
    out-of-domain accuracy (%, mean over seeds) and their sd over seeds (NaN with one seed)."""
    rows = {}
    for x, m in methods.items():
        if m not in reads.correct:
            continue
        row = {}
        for col, part in (("ID", "in domain"), ("OOD", "out of domain")):
            v = reads.per_seed(m, part)
            row[col], row[f"{col} sd"] = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else np.nan
        rows[x] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def domain_gaps(
    reads: DomainReads,
    pairs: Mapping[str, tuple[str, str]],
    parts: Sequence[str] = ("in domain", "out of domain"),
    resamples: int = 4000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each comparison of ``pairs`` (name -> (a, b), methods of ``reads``) on each part, a minus b in
    points, by the two-level paired bootstrap (strata: suite and family): one row per (comparison,
    part) with ``comparison``, ``split`` (the part), ``a``, ``b``, ``gap``, ``low``, ``high``, ``p``,
    ``verdict``, ``difference``, ``level``, and ``p_holm`` over this frame (:func:`with_holm` for a
    page)."""
    from ..evaluation.bootstrap import compare_many, strata_codes

    strata = strata_codes(reads.suites, reads.families)
    frames = []
    for part in parts:
        keep = reads.part(part)
        sub = {n: (reads.correct[a][:, keep], reads.correct[b][:, keep]) for n, (a, b) in pairs.items()}
        f = compare_many(sub, strata[keep], resamples=resamples, seed=seed).rename_axis("comparison").reset_index()
        frames.append(
            f.assign(split=part, a=[pairs[n][0] for n in f.comparison], b=[pairs[n][1] for n in f.comparison])
        )
    return with_holm(pd.concat(frames, ignore_index=True))[0]


def with_holm(*frames: pd.DataFrame) -> list[pd.DataFrame]:
    """The frames (each with a ``p`` column) with ``p_holm`` adjusted over all of their rows at once."""
    from ..evaluation.bootstrap import holm

    adj = holm(np.concatenate([f["p"].to_numpy(float) for f in frames]))
    out, i = [], 0
    for f in frames:
        out.append(f.assign(p_holm=adj[i : i + len(f)]))
        i += len(f)
    return out


def gap_table(gaps: pd.DataFrame, rows: Mapping[str, str], alpha: float = 0.05) -> pd.DataFrame:
    """The comparisons of ``rows`` (name -> label, in order) as a page shows them: one column per part,
    each cell the gap with its 95% interval as the prose writes it (a gap that rounds to zero reads
    ``+0.0``, :func:`~fgpo_core.reports.ablation_intervals.signed_interval`), a star where the
    Holm-adjusted p-value is below ``alpha``."""
    from .ablation_intervals import HOLM_MARK, signed_interval

    out = {}
    for name, lab in rows.items():
        f = gaps[gaps["comparison"] == name]
        if f.empty:
            raise ValueError(f"no comparison named {name!r}")
        out[lab] = {
            r.split: signed_interval(r.gap, r.low, r.high) + (HOLM_MARK if r.p_holm < alpha else "")
            for r in f.itertuples()
        }
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("comparison (points)").reset_index()


@dataclass(frozen=True)
class Gap:
    """One row of :func:`domain_gaps`: the gap (points), its interval and Holm-adjusted p-value."""

    gap: float
    low: float
    high: float
    p_holm: float

    a_better = property(lambda self: bool(self.low > 0))
    b_better = property(lambda self: bool(self.high < 0))
    is_difference = property(lambda self: bool(self.low > 0 or self.high < 0))
    is_level = property(lambda self: bool(-MARGIN < self.low and self.high < MARGIN))
    """The whole interval strictly inside the book's margin (:data:`~fgpo_core.evaluation.bootstrap.MARGIN`)."""
    starred = property(lambda self: bool(self.is_difference and self.p_holm < 0.05))
    """A difference that survives Holm's adjustment."""

    def negated(self) -> "Gap":
        """The same comparison the other way round."""
        return Gap(-self.gap, -self.high, -self.low, self.p_holm)


def gap_of(gaps: pd.DataFrame, comparison: str, part: str) -> Gap:
    """The :class:`Gap` of one comparison on one part of :func:`domain_gaps`' frame."""
    f = gaps[(gaps.comparison == comparison) & (gaps.split == part)]
    if len(f) != 1:
        raise ValueError(f"no comparison {comparison!r} on {part!r}")
    r = f.iloc[0]
    return Gap(float(r.gap), float(r.low), float(r.high), float(r.p_holm))


def lm_arm_table(reads: DomainReads, labels: Mapping[str, str], start: str = "start") -> pd.DataFrame:
    """The LM study's arms (methods ``ARM-rRANK``), the start once (its picks are the same at every
    rank) then rank by rank: ``arm`` (``labels``' name), ``LoRA rank``, in-domain and out-of-domain
    accuracy (%), format failures (%) and tools per well-formed pick."""
    rows = []
    methods = sorted(
        reads.masks, key=lambda m: (parse_lm_companion_method(m)[0] != start, parse_lm_companion_method(m)[1])
    )
    for m in methods:
        arm, rank = parse_lm_companion_method(m)
        if arm == start and any(r["arm"] == labels.get(start, start) for r in rows):
            continue
        rows.append(
            {
                "arm": labels.get(arm, arm),
                "LoRA rank": "–" if arm == start else str(rank),
                "in domain": reads.accuracy(m, "in domain"),
                "out of domain": reads.accuracy(m, "out of domain"),
                "format failures (%)": 100.0 * float((reads.masks[m] < 0).mean()),
                "tools": reads.tools(m),
            }
        )
    return pd.DataFrame(rows)


def load_lm_reads(lm_dir, tables: Mapping[str, RewardTable], bench_dir, suites: Sequence[str] = ("core", "microbe")):
    """``(reads, config)``: a finished ``fgpo lm-companion`` folder's picks with its start's
    (:func:`load_lm_companion`) as :class:`DomainReads` by the book's rule against the questions the
    LM selector trained on (the first ``budget`` of ``tables["train"]``), and the study's config."""
    import json
    from pathlib import Path

    cfg = json.loads((Path(lm_dir) / "manifest.json").read_text())["config"]
    train_ids = list(tables["train"].question_ids[: int(cfg["budget"])])
    domains, classes = test_domains(bench_dir, suites, train_ids)
    return read_picks(load_lm_companion(lm_dir), tables, domains, classes), cfg


def lm_gap(lm_dir, tables: Mapping[str, RewardTable], bench_dir, a: str, b: str, part: str = "out of domain") -> Gap:
    """One gap of the LM study as the post-training chapter states it (e.g. ``a="fgpo-r4"``,
    ``b="start-r4"``): the same interval (the bootstrap's draws depend only on the data and its seed),
    Holm-adjusted over this one comparison only."""
    reads, _ = load_lm_reads(lm_dir, tables, bench_dir)
    return gap_of(domain_gaps(reads, {"gap": (a, b)}, parts=(part,)), "gap", part)
