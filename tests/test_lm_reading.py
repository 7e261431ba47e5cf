"""Reading the LM selector's runs: identical picks grouped, dev evaluations matched to fixed
subsets, one tool's value family by family."""

import numpy as np
import pytest

from fgpo_core.experiments.lm_reading import fixed_subset_matches, identical_groups, tool_value_by_family
from fgpo_core.table import RewardTable


def _table():
    # 4 questions, 2 tools (subsets: none, T1, T2, T1+T2); families a, a, b, b
    correct = np.array([[0, 1, 0, 1],
                        [0, 1, 0, 1],
                        [0, 0, 1, 1],
                        [1, 0, 0, 0]], dtype=bool)
    return RewardTable(correct, 2, np.array(["a", "a", "b", "b"]), question_ids=np.array(["q0", "q1", "q2", "q3"]))


def test_identical_groups_keep_order_and_need_every_suite_equal():
    same = {"core": np.array([1, 2, 3]), "dev": np.array([0, 0])}
    picks = {"A": same, "B": {"core": np.array([1, 2, 0]), "dev": np.array([0, 0])},
             "C": {k: v.copy() for k, v in same.items()}, "D": {"core": np.array([1, 2, 3])}}
    assert identical_groups(picks) == [["A", "C"], ["B"], ["D"]]
    assert identical_groups({}) == []


def test_fixed_subset_matches_need_size_and_accuracy():
    t = _table()
    # accuracies: none 25, T1 50, T2 25, T1+T2 75
    assert fixed_subset_matches(t, 50.0, 1.0) == [1]
    assert fixed_subset_matches(t, 25.0, 1.0) == [2]
    assert fixed_subset_matches(t, 25.0, 0.0) == [0]
    assert fixed_subset_matches(t, 75.0, 1.0) == []
    assert fixed_subset_matches(t, 50.0, 1.5) == []


def test_tool_value_by_family():
    t = _table()
    v = tool_value_by_family(t, tool=1, base=1)  # adding T2 to T1
    assert list(v.index) == ["a", "b"]
    assert v.loc["a", "without"] == 100.0 and v.loc["a", "with"] == 100.0 and v.loc["a", "points"] == 0.0
    assert v.loc["b", "points"] == 50.0 and v.loc["b", "questions"] == 2
    r = t.rewards("eq1")
    assert v.loc["a", "reward"] == pytest.approx((r[:2, 3] - r[:2, 1]).mean())
    assert v.loc["a", "reward"] < 0  # the same answers for one more tool: Eq. 1 charges for it
    with pytest.raises(ValueError):
        tool_value_by_family(t, tool=0, base=1)
