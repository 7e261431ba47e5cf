"""Reading the LM selector's runs: identical picks grouped, dev evaluations matched to fixed
subsets, one tool's value family by family."""

import numpy as np
import pandas as pd
import pytest

from fgpo_core.reports.lm_reading import fixed_subset_matches, identical_groups, tool_value_by_family
from fgpo_core.table import RewardTable


def _table():
    # 4 questions, 2 tools (subsets: none, T1, T2, T1+T2); families a, a, b, b
    correct = np.array([[0, 1, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 0]], dtype=bool)
    return RewardTable(correct, 2, np.array(["a", "a", "b", "b"]), question_ids=np.array(["q0", "q1", "q2", "q3"]))


def test_identical_groups_keep_order_and_need_every_suite_equal():
    same = {"core": np.array([1, 2, 3]), "dev": np.array([0, 0])}
    picks = {
        "A": same,
        "B": {"core": np.array([1, 2, 0]), "dev": np.array([0, 0])},
        "C": {k: v.copy() for k, v in same.items()},
        "D": {"core": np.array([1, 2, 3])},
    }
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


def test_group_label_names_members_and_why_they_are_one():
    from fgpo_core.reports.lm_reading import group_label

    assert group_label(["SFT"], {}, {"SFT": 0.0}) == "SFT"
    kept = {"GRPO": 0, "FGPO": 0}
    assert (
        group_label(["GRPO", "Warm-up", "FGPO"], kept, {"GRPO": 3.6})
        == "Warm-up = FGPO = GRPO (each RL run kept its starting adapter)"
    )
    assert (
        group_label(["DPO", "SFT"], {"SFT": 4, "DPO": 4}, {"DPO": 0.0})
        == "SFT = DPO (each always picks the empty subset)"
    )
    assert group_label(["FGPO", "GRPO"], {"FGPO": 3, "GRPO": 2}, {"FGPO": 2.0}) == "FGPO = GRPO (the same picks)"


def test_selector_table_orders_labels_and_heads_suites_with_their_questions():
    from fgpo_core.reports.lm_reading import selector_table

    grid = pd.DataFrame(
        {
            "method": ["A", "B", "A", "B"],
            "suite": ["core", "core", "microbe", "microbe"],
            "accuracy": [50.0, 40.0, 30.0, 20.0],
            "n": [1000, 1000, 250, 250],
            "tools": [2.0, 1.0, 2.5, 1.5],
            "format_failures": [0.0, 5.0, 0.0, 4.0],
        }
    )
    t = selector_table(
        grid, pd.Series({"A": 55.0, "B": 41.0}), ["B", "A"], {"A": "A = C (the same picks)"}, ["core", "microbe"]
    )
    assert list(t.index) == ["B", "A = C (the same picks)"]
    assert list(t.columns) == [
        "core (1,000)",
        "microbe (250)",
        "tools (core)",
        "format failures, core (%)",
        "controlled scoring, core",
    ]
    assert t.loc["B"].tolist() == [40.0, 20.0, 1.0, 5.0, 41.0]


def test_tool_value_table_stacks_tables_and_reads_the_reward_where_asked():
    from fgpo_core.reports.lm_reading import tool_value_table

    t = _table()
    v = tool_value_table({"train": t, "dev": t}, tool=1, base=1, base_label="T1", reward_on=["train"])
    assert list(v.index.names) == ["questions from", "family"]
    assert v.loc[("train", "b"), "T2 added to T1 (points)"] == 50.0
    assert v.loc[("train", "b"), "T2 alone vs no tool (points)"] == tool_value_by_family(t, 1, 0).loc["b", "points"]
    assert np.isnan(v.loc[("dev", "a"), "Eq. 1 reward of adding T2"])
    assert v.loc[("train", "a"), "Eq. 1 reward of adding T2"] == tool_value_by_family(t, 1, 1).loc["a", "reward"]
