"""The two-level paired bootstrap of a gap in accuracy, the book's rule for "a difference".

Method ``a`` and method ``b`` are read on the same ``Q`` questions, ``a`` over ``S_a`` seeds and
``b`` over ``S_b`` (a method without seeds, such as a fixed subset, is one row). The gap is

    g = 100 * (mean_{s,q} a[s, q] - mean_{s,q} b[s, q])

in points. One resample draws the questions again with replacement *within each stratum* (each
stratum, e.g. one family of one suite, keeps its size, so the pooled mix of families is the
one the reader sees) and the seeds again with replacement; the gap of the resample is the
same mean over the drawn questions and seeds, counted with multiplicity. *Paired*: both
methods get the same drawn questions and, when they have the same number of seeds (seed ``i``
of ``a`` beside seed ``i`` of ``b``), the same drawn seeds; with different numbers of seeds each
method's seeds are drawn on their own. The interval is the percentile interval of the resampled
gaps (Efron and Tibshirani 1993, ch. 13; the two levels, units and repeated runs, as in
Davison and Hinkley 1997, sec. 3.8). The two-sided p-value is twice the smaller share of
resampled gaps on either side of zero, each share counted as ``(1 + #) / (1 + R)`` so that it
is never zero; a page with many comparisons adjusts them with Holm's step-down rule (Holm 1979).

Questions and seeds are crossed, not nested, and no bootstrap of a crossed design is exact
(McCullagh 2000): drawing both again counts the question-by-seed noise more than once, so the
interval errs wide (Owen 2007, "The pigeonhole bootstrap"). Its coverage is 95% or a little
more; ``tests/test_bootstrap.py`` measures it on a population like the reward tables'.

Everything is vectorised: resample ``r``'s gap is ``c_s[r] @ D @ c_q[r] / (S Q)`` with ``c_s``
and ``c_q`` the draw counts of seeds and questions and ``D = a - b`` (paired seeds), so thousands
of resamples over 2,000 questions and 10 seeds take about a second. A seed gives the same
draws every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "LEVEL",
    "MARGIN",
    "RESAMPLES",
    "Interval",
    "strata_codes",
    "bootstrap_gaps",
    "paired_bootstrap",
    "holm",
    "compare_many",
]

LEVEL = 0.95
"""The interval's coverage."""
MARGIN = 1.0
"""Points: a gap is *level* only when its whole interval lies strictly inside +-MARGIN."""
RESAMPLES = 4000
"""Resamples per comparison."""
_CHUNK = 500


@dataclass(frozen=True)
class Interval:
    """A gap (``a`` minus ``b``, points) with its bootstrap interval and p-value."""

    gap: float
    low: float
    high: float
    p_value: float
    """Two-sided bootstrap p-value (not adjusted for multiplicity)."""
    n_questions: int
    n_seeds: tuple
    """Seeds of ``a`` and of ``b``."""
    resamples: int
    level: float = LEVEL
    margin: float = MARGIN

    @property
    def is_difference(self) -> bool:
        """The interval excludes zero."""
        return bool(self.low > 0 or self.high < 0)

    @property
    def is_level(self) -> bool:
        """The interval lies strictly inside ``(-margin, +margin)``."""
        return bool(-self.margin < self.low and self.high < self.margin)

    @property
    def a_better(self) -> bool:
        return bool(self.low > 0)

    @property
    def b_better(self) -> bool:
        return bool(self.high < 0)

    @property
    def verdict(self) -> str:
        """``"a difference"``, ``"level"`` (inside the margin) or ``"undecided"`` (neither)."""
        return "a difference" if self.is_difference else "level" if self.is_level else "undecided"

    def text(self, digits: int = 1) -> str:
        """``+1.6 [+0.4, +3.0]``."""
        f = f"{{:+.{digits}f}}"
        return f"{f.format(self.gap)} [{f.format(self.low)}, {f.format(self.high)}]"


def strata_codes(*labels) -> np.ndarray:
    """One integer code per question for the combination of its labels (e.g. suite and family):
    ``strata_codes(suites, families)``. Codes follow the sorted order of the combinations."""
    if not labels:
        raise ValueError("give at least one label per question")
    cols = [np.asarray(x).astype(str) for x in labels]
    if any(c.ndim != 1 or len(c) != len(cols[0]) for c in cols):
        raise ValueError("every label array must be one-dimensional and of the same length")
    keys = np.array(["\x1f".join(t) for t in zip(*cols)]) if len(cols) > 1 else cols[0]
    return np.unique(keys, return_inverse=True)[1].astype(np.int64)


def _matrix(x, name: str) -> np.ndarray:
    try:
        m = np.asarray(x, dtype=float)
    except ValueError:
        raise ValueError(f"{name}: give one vector per seed, every vector over the same questions") from None
    if m.ndim == 1:
        m = m[None]
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"{name}: give a vector (one seed) or a [seeds, questions] array, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name}: holds a value that is not finite")
    return m


def _check(a, b, strata, resamples: int):
    A, B = _matrix(a, "a"), _matrix(b, "b")
    Q = A.shape[1]
    if B.shape[1] != Q:
        raise ValueError(f"a covers {Q} questions and b {B.shape[1]}; a paired comparison needs the same questions")
    if Q == 0:
        raise ValueError("a comparison needs at least one question")
    codes = np.zeros(Q, np.int64) if strata is None else np.asarray(strata)
    if codes.shape != (Q,):
        raise ValueError(f"strata must give one label per question ({Q}), got shape {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer):
        codes = strata_codes(codes)
    if int(resamples) < 100:
        raise ValueError(f"resamples must be at least 100, got {resamples}")
    return A, B, codes


def _question_counts(codes: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """``[r, Q]`` draw counts: each stratum's questions drawn again, as many as it holds."""
    Q = len(codes)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.searchsorted(sorted_codes, sorted_codes, side="left")
    sizes = np.searchsorted(sorted_codes, sorted_codes, side="right") - starts
    pos = starts + np.floor(rng.random((r, Q)) * sizes).astype(np.int64)
    drawn = order[np.minimum(pos, starts + sizes - 1)]
    flat = (drawn + Q * np.arange(r)[:, None]).ravel()
    return np.bincount(flat, minlength=r * Q).reshape(r, Q).astype(float)


def _seed_counts(S: int, r: int, rng: np.random.Generator) -> np.ndarray:
    if S == 1:
        return np.ones((r, 1))
    flat = (rng.integers(0, S, size=(r, S)) + S * np.arange(r)[:, None]).ravel()
    return np.bincount(flat, minlength=r * S).reshape(r, S).astype(float)


def bootstrap_gaps(a, b, strata=None, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """The ``resamples`` resampled gaps (points) of ``a`` minus ``b`` (module docstring).
    ``a``, ``b``: ``[seeds, questions]`` (or one vector) of 0/1 correctness or any score;
    ``strata``: one label (or integer code) per question, None for one stratum."""
    A, B, codes = _check(a, b, strata, resamples)
    rng = np.random.default_rng(seed)
    (Sa, Q), Sb = A.shape, B.shape[0]
    paired = Sa == Sb
    out = []
    for start in range(0, int(resamples), _CHUNK):
        r = min(_CHUNK, int(resamples) - start)
        cq = _question_counts(codes, r, rng)
        if paired:
            cs = _seed_counts(Sa, r, rng)
            g = ((cs @ (A - B)) * cq).sum(1) / (Sa * Q)
        else:
            ca, cb = _seed_counts(Sa, r, rng), _seed_counts(Sb, r, rng)
            g = ((ca @ A) * cq).sum(1) / (Sa * Q) - ((cb @ B) * cq).sum(1) / (Sb * Q)
        out.append(100.0 * g)
    return np.concatenate(out)


def paired_bootstrap(
    a, b, strata=None, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL, margin: float = MARGIN
) -> Interval:
    """The book's rule: ``a`` minus ``b`` with its two-level paired bootstrap interval and p-value
    (module docstring). ``Interval.is_difference``, ``.is_level`` and ``.verdict`` read it."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie between 0 and 1, got {level}")
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    A, B, _ = _check(a, b, strata, resamples)
    gaps = bootstrap_gaps(A, B, strata, resamples, seed)
    low, high = np.quantile(gaps, [(1 - level) / 2, (1 + level) / 2])
    R = len(gaps)
    tail = min((1 + np.count_nonzero(gaps <= 0)) / (1 + R), (1 + np.count_nonzero(gaps >= 0)) / (1 + R))
    return Interval(
        float(100.0 * (A.mean() - B.mean())),
        float(low),
        float(high),
        float(min(1.0, 2 * tail)),
        int(A.shape[1]),
        (int(A.shape[0]), int(B.shape[0])),
        R,
        float(level),
        float(margin),
    )


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: the i-th smallest of m
    is ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a hypothesis is rejected at ``alpha`` exactly
    when its adjusted p-value is at most ``alpha``."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError("p-values must be a vector of numbers in [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def compare_many(
    pairs: Mapping[str, tuple],
    strata=None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    margin: float = MARGIN,
) -> pd.DataFrame:
    """Every comparison of a page: ``pairs`` maps a name to ``(a, b)`` (as in :func:`paired_bootstrap`,
    all over the same questions and ``strata``); one row per name with ``gap``, ``low``, ``high``,
    ``p``, ``p_holm`` (Holm over the page), ``verdict``, ``difference`` and ``level``. Every comparison
    uses the same seed, so the same question draws."""
    rows = {}
    for name, (a, b) in pairs.items():
        iv = paired_bootstrap(a, b, strata, resamples, seed, level, margin)
        rows[name] = {
            "gap": iv.gap,
            "low": iv.low,
            "high": iv.high,
            "p": iv.p_value,
            "verdict": iv.verdict,
            "difference": iv.is_difference,
            "level": iv.is_level,
            "n_questions": iv.n_questions,
            "n_seeds": iv.n_seeds,
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    if len(out):
        out.insert(4, "p_holm", holm(out["p"].to_numpy()))
    return out
