"""The book's rule for calling a gap between two methods a difference, and the rule it replaced.

**The book's rule** (:func:`paired_bootstrap`, :func:`compare_many`): two methods are compared on
the same questions and seeds. The gap is ``a``'s accuracy minus ``b``'s (points, mean over
seeds and questions); its 95% interval comes from a two-level paired bootstrap: every resample
draws the questions again with replacement within their strata (suite x family, so each
stratum keeps its size) and the seeds again with replacement, the same draws for both methods.
The gap is **a difference** when the interval excludes zero; **level** only when the interval
lies inside a stated margin (default +-1 point), never from a failure to find a difference. The
bootstrap p-value is two-sided, read from the resampled distribution (twice the smaller tail
share at zero, each tail counted with the observed resample, ``(1 + #) / (1 + R)``); a page that
makes many comparisons reports Holm-adjusted p-values (:func:`holm`).

**The former rule** (:func:`compare`, :class:`Verdict`), kept while chapters still call it: within
one seed the exact McNemar test on the questions exactly one of them gets right
(:func:`~fgpo_core.evaluation.metrics.mcnemar`); over seeds a gap was a difference when both

* the paired t-test over seeds of the accuracy differences gives p < ``alpha``
  (:func:`~fgpo_core.evaluation.metrics.seed_paired_ttest`), and
* McNemar gives p < ``alpha`` in at least half of the seeds.

It gives no interval, has no stated error rate, and cannot say "level"; read new comparisons
with the bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .bootstrap import MARGIN, RESAMPLES, Interval, bootstrap_gaps, compare_many, holm, paired_bootstrap, strata_codes
from .metrics import mcnemar, seed_paired_ttest

__all__ = [
    "ALPHA",
    "MARGIN",
    "RESAMPLES",
    "Interval",
    "paired_bootstrap",
    "bootstrap_gaps",
    "strata_codes",
    "holm",
    "compare_many",
    "Verdict",
    "compare",
]

ALPHA = 0.05
"""The significance level of every test the book reports."""


@dataclass(frozen=True)
class Verdict:
    """A comparison of method ``a`` with method ``b`` on one set of questions under the former
    rule (module docstring); the book's rule is :func:`paired_bootstrap`."""

    gap: float
    """Mean over seeds of ``a``'s accuracy minus ``b``'s (points)."""
    p_seeds: float
    """The paired t-test over seeds (NaN with one seed)."""
    p_mcnemar: tuple[float, ...]
    """McNemar's p-value seed by seed."""
    n_questions: int
    alpha: float = ALPHA

    @property
    def seeds_significant(self) -> int:
        """Seeds whose McNemar test gives p < alpha."""
        return int(sum(p < self.alpha for p in self.p_mcnemar))

    @property
    def is_difference(self) -> bool:
        """The book's rule (module docstring)."""
        half = self.seeds_significant * 2 >= len(self.p_mcnemar)
        if len(self.p_mcnemar) == 1:
            return self.p_mcnemar[0] < self.alpha
        return bool(self.p_seeds < self.alpha and half)

    @property
    def a_better(self) -> bool:
        """``a`` ahead, beyond noise."""
        return self.is_difference and self.gap > 0

    @property
    def b_better(self) -> bool:
        """``b`` ahead, beyond noise."""
        return self.is_difference and self.gap < 0

    @property
    def p_median(self) -> float:
        """The median of McNemar's p over seeds."""
        return float(np.median(self.p_mcnemar))


def compare(a_correct: Sequence[np.ndarray], b_correct: Sequence[np.ndarray], alpha: float = ALPHA) -> Verdict:
    """The former rule (module docstring; the book's rule is :func:`paired_bootstrap`).
    Compare two methods seed by seed: ``a_correct[i]`` and ``b_correct[i]`` are boolean
    vectors over the same questions from seed ``i``. A method without seeds (a fixed subset)
    is passed as the same vector for every seed."""
    a = [np.asarray(x, dtype=bool) for x in a_correct]
    b = [np.asarray(x, dtype=bool) for x in b_correct]
    if not a or len(a) != len(b):
        raise ValueError("give one correct vector per seed for both methods, the same number of seeds")
    n = len(a[0])
    if any(len(x) != n for x in a + b):
        raise ValueError("every correct vector must cover the same questions")
    if n == 0:
        raise ValueError("a comparison needs at least one question")
    acc_a = np.array([100.0 * x.mean() for x in a])
    acc_b = np.array([100.0 * x.mean() for x in b])
    p_mc = tuple(mcnemar(x, y)["p_value"] for x, y in zip(a, b))
    p_seeds = seed_paired_ttest(acc_a, acc_b) if len(a) > 1 else float("nan")
    return Verdict(float((acc_a - acc_b).mean()), float(p_seeds), p_mc, n, alpha)
