import numpy as np
import pytest

from fgpo_core.table.reward_table import RewardTable
from fgpo_core.table.synthetic import SyntheticTableConfig, make_synthetic_table


def tiny():
    # 3 questions, 2 tools: subsets none, T1, T2, T1+T2
    correct = np.array([[1, 0, 0, 1], [0, 0, 1, 1], [0, 0, 0, 0]], bool)
    return RewardTable(correct, 2)


def test_ceilings_by_hand():
    c = tiny().ceilings()
    assert c["no_tool"] == pytest.approx(100 / 3)
    assert c["all_tools"] == pytest.approx(200 / 3)
    assert c["oracle"] == pytest.approx(200 / 3)
    assert c["best_fixed"] == pytest.approx(200 / 3) and c["best_fixed_subset"] == "T1+T2"
    assert c["random"] == pytest.approx(100 * 4 / 12)
    # optimum is empty for q0 (right with none) and q2 (nothing right), T2 for q1
    assert c["empty_optimal"] == pytest.approx(200 / 3)
    assert c["outcome_degenerate"] == pytest.approx(100 / 3)


def test_ceiling_order_on_a_synthetic_table():
    t = make_synthetic_table(SyntheticTableConfig(n_questions=300), seed=1)
    c = t.ceilings()
    fixed = t.fixed_subset_accuracy()
    assert c["oracle"] >= c["best_fixed"] >= fixed.max() - 1e-12
    assert (fixed <= c["best_fixed"] + 1e-12).all()
    # the empty subset is optimal exactly when it is right or nothing is
    assert c["empty_optimal"] == pytest.approx(c["no_tool"] + 100 - c["oracle"])


def test_rewards_and_restriction():
    t = tiny()
    r = t.rewards("eq1")
    assert r[0, 0] == pytest.approx(1.1) and r[2, 3] == pytest.approx(-1.1)
    np.testing.assert_allclose(np.unique(t.rewards("differential")[0]), [-0.9, 0.05])
    one = t.restrict_tools([1])
    assert one.correct.tolist() == [[True, False], [False, True], [False, False]]
    deg = t.outcome_degenerate_by_library_size()
    # {T1}: q1 and q2 degenerate; {T2}: only q2
    assert deg[1] == pytest.approx(100 * np.mean([2 / 3, 1 / 3]))
    with pytest.raises(ValueError):
        t.rewards("nope")


def test_table_input_errors():
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        RewardTable(np.zeros((3, 5), bool), 2)
    with pytest.raises(ValueError):
        RewardTable(np.full((3, 4), 2), 2)
    with pytest.raises(ValueError):
        RewardTable(np.zeros((3, 4), bool), 2, family=np.zeros(2))


def test_single_tool_removal_by_hand():
    rem = tiny().single_tool_removal()
    # without T1: subsets none, T2 -> oracle keeps q0 (none) and q1 (T2): no loss; best fixed T2 = 1/3
    assert rem.loc["-T1", "delta_oracle"] == pytest.approx(0.0)
    assert rem.loc["-T1", "delta_best_fixed"] == pytest.approx(100 / 3 - 200 / 3)
    # without T2: subsets none, T1 -> q1 has no right subset any more
    assert rem.loc["-T2", "delta_oracle"] == pytest.approx(-100 / 3)
    assert (rem <= 1e-9).all().all()


def test_tool_gains_by_hand():
    # q0 and q1 in family "a", q2 in family "b"
    t = tiny()
    t.family = np.array(["a", "a", "b"])
    g = tiny_gains = t.tool_gains().set_index(["tool", "family"])
    # family a: none 50%, T1 0%, T2 50%, T1+T2 100%
    assert g.loc[("T1", "a"), "alone"] == pytest.approx(-50.0)
    assert g.loc[("T1", "a"), "best_added"] == pytest.approx(50.0) and g.loc[("T1", "a"), "added_to"] == "T2"
    assert g.loc[("T2", "a"), "alone"] == pytest.approx(0.0)
    assert g.loc[("T2", "a"), "best_added"] == pytest.approx(100.0) and g.loc[("T2", "a"), "added_to"] == "T1"
    # family b: nothing is ever right
    assert (tiny_gains.xs("b", level="family")[["alone", "best_added"]] == 0).all().all()


def test_select_keeps_every_per_question_field_in_order_and_refuses_strangers():
    import numpy as np
    import pytest

    from fgpo_core.table import RewardTable

    correct = np.random.default_rng(0).random((3, 4)) < 0.5
    t = RewardTable(
        correct,
        2,
        family=np.array(["x", "y", "z"]),
        question_ids=np.array(["a", "b", "c"]),
        tokens=np.arange(12).reshape(3, 4),
        built_rewards={"eq1": np.ones((3, 4))},
    )
    s = t.select(["c", "a"])
    assert s.family.tolist() == ["z", "x"] and s.tokens[0].tolist() == [8, 9, 10, 11]
    np.testing.assert_array_equal(s.correct, correct[[2, 0]])
    assert s.rewards("eq1").shape == (2, 4) and (s.rewards("eq1") == 1).all()
    with pytest.raises(ValueError, match="lacks 1 of the 2"):
        t.select(["a", "q"])
    with pytest.raises(ValueError, match="no question ids"):
        RewardTable(correct, 2).select(["a"])
    with pytest.raises(ValueError, match="unique"):
        RewardTable(correct, 2, question_ids=np.array(["a", "a", "b"]))


def test_load_table_names_what_is_missing(tmp_path):
    import pytest

    from fgpo_core.table import load_table

    with pytest.raises(FileNotFoundError, match="fgpo table build"):
        load_table(tmp_path)
