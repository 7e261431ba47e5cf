"""The headline of one setting: accuracies over seeds and FGPO's two verdicts by the book's rule."""

import numpy as np
import pytest

from fgpo_core.evaluation.difference import compare
from fgpo_core.reports.study import headline


def test_accuracies_are_means_over_seeds_and_gaps_are_fgpo_minus_the_other():
    rng = np.random.default_rng(0)
    fgpo = [rng.random(400) < 0.7 for _ in range(3)]
    grpo = [rng.random(400) < 0.5 for _ in range(3)]
    fixed = rng.random(400) < 0.6
    h = headline(fgpo, grpo, fixed)
    assert h["questions"] == 400 and h["seeds"] == 3
    assert h["FGPO"] == pytest.approx(np.mean([100 * x.mean() for x in fgpo]))
    assert h["GRPO"] == pytest.approx(np.mean([100 * x.mean() for x in grpo]))
    assert h["best fixed"] == pytest.approx(100 * fixed.mean())
    assert h["vs GRPO"].gap == pytest.approx(h["FGPO"] - h["GRPO"])
    assert h["vs best fixed"].gap == pytest.approx(h["FGPO"] - h["best fixed"])
    assert h["vs GRPO"].a_better  # 20 points on 400 questions
    assert h["vs best fixed"].p_mcnemar == compare(fgpo, [fixed] * 3).p_mcnemar


def test_one_seed_and_identical_picks_is_no_difference():
    right = np.array([True, False] * 50)
    h = headline([right], [right.copy()], ~right)
    assert h["vs GRPO"].gap == 0 and not h["vs GRPO"].is_difference
    assert h["vs best fixed"].gap == 0 and h["seeds"] == 1


def test_seeds_must_match():
    with pytest.raises(ValueError):
        headline([np.ones(4, bool)] * 2, [np.ones(4, bool)], np.ones(4, bool))
