"""Selector evaluation: look-up accuracy, tool rates, p_gen dead groups (Table 15), McNemar."""

import numpy as np
import pytest

from fgpo_core.core.dead_groups import dead_group_probability_mc
from fgpo_core.core.rewards import differential_reward, eq1_reward
from fgpo_core.core.subsets import ActionSpace
from fgpo_core.evaluation.metrics import dead_group_table, empty_subset_table, mcnemar, rescues
from fgpo_core.evaluation.picks import p_gen_with_failures, summarise_picks, tool_rates_by_family


def test_summary_counts_failures_as_wrong_and_toolless():
    correct = np.array([[0, 1, 0, 0], [1, 0, 0, 1], [1, 1, 1, 1]], dtype=bool)  # n = 2 tools, 4 subsets
    tokens = np.array([[10, 20, 30, 40]] * 3)
    s = summarise_picks(np.array([1, 3, -1]), correct, 2, tokens)
    assert s["accuracy"] == pytest.approx(200 / 3)
    assert s["format_failures"] == pytest.approx(100 / 3)
    assert s["tools"] == pytest.approx((1 + 2 + 0) / 3)
    assert s["input_tokens"] == pytest.approx((20 + 40 + 10) / 3)


def test_tool_rates_by_family():
    rates = tool_rates_by_family(np.array([0b01, 0b11, -1, 0b10]), ["x", "x", "y", "y"], ["t0", "t1"])
    assert rates.loc["x", "t0"] == 100 and rates.loc["x", "t1"] == 50
    assert rates.loc["y", "t0"] == 0 and rates.loc["y", "t1"] == 50


@pytest.mark.parametrize("reward", ["eq1", "differential"])
def test_dead_group_table_matches_monte_carlo_with_a_failure_column(reward):
    rng = np.random.default_rng(0)
    correct = rng.random((30, 16)) < 0.4
    mass = rng.dirichlet(np.full(16, 0.3), size=30) * 0.8  # 20% of the mass fails to parse
    p = p_gen_with_failures(mass)
    assert np.allclose(p.sum(-1), 1.0)
    grid = dead_group_table({"policy": p, "uniform": np.full((30, 16), 1 / 16)}, correct, reward, (1, 2, 6))
    assert list(grid.columns) == ["G=1", "G=2", "G=6"]
    if reward == "differential":
        r_sub = differential_reward(correct, np.repeat(correct[:, :1], 16, 1), np.ones_like(correct))
        r = np.concatenate([r_sub, np.where(correct[:, :1], -0.95, 0.0)], 1)
    else:  # a format failure is wrong with no tools: -1 + lambda
        r_sub = eq1_reward(correct, ActionSpace(4).sizes[None], 4)
        r = np.concatenate([r_sub, np.full((30, 1), -0.9)], 1)
    mc = 100 * dead_group_probability_mc(p, r, 6, n_groups=40_000, seed=1).mean()
    assert abs(grid.loc["policy", "G=6"] - mc) < 1.0
    assert grid.loc["uniform", "G=1"] == pytest.approx(100.0)


def test_eq1_classes_are_finer_than_the_differential_rewards():
    """Eq. 1 separates subsets by size as well as correctness, so a uniform policy's groups die far
    less often under its classes than under the differential reward's three (Proposition 1)."""
    correct = np.random.default_rng(1).random((50, 16)) < 0.4
    uniform = {"uniform": np.full((50, 16), 1 / 16)}
    eq1 = dead_group_table(uniform, correct, "eq1", (6,)).loc["uniform", "G=6"]
    diff = dead_group_table(uniform, correct, "differential", (6,)).loc["uniform", "G=6"]
    assert eq1 < diff / 10
    with pytest.raises(ValueError, match="reward must be one of"):
        dead_group_table(uniform, correct, "binary")


def test_empty_subset_table():
    m = np.array([[0.6, 0.2, 0.1, 0.1], [0.1, 0.5, 0.2, 0.2]])
    t = empty_subset_table({"p": m})
    assert t.loc["p", "mass on empty (%)"] == pytest.approx(35.0)
    assert t.loc["p", "argmax is empty (%)"] == pytest.approx(50.0)


def test_mcnemar_and_rescues():
    a = np.array([1, 1, 1, 1, 1, 0, 0, 1], bool)
    b = np.array([0, 0, 0, 0, 1, 1, 0, 1], bool)
    assert rescues(a, b) == {"a_only": 4, "b_only": 1}
    t = mcnemar(a, b)
    # exact two-sided binomial on 5 discordant pairs, 4 vs 1: 2 * P(X <= 1) = 2 * 6/32
    assert t["p_value"] == pytest.approx(12 / 32)
    assert mcnemar(a, a)["p_value"] == 1.0


def test_seed_paired_ttest_matches_scipy_and_handles_agreeing_seeds():
    from scipy.stats import ttest_rel

    from fgpo_core.evaluation.metrics import seed_paired_ttest

    a, b = np.array([52.1, 51.7, 53.0, 52.4, 51.9]), np.array([51.0, 51.9, 51.8, 51.5, 51.2])
    assert seed_paired_ttest(a, b) == pytest.approx(ttest_rel(a, b).pvalue)
    assert seed_paired_ttest(a, a) == 1.0 and seed_paired_ttest(a + 0.5, a) == 0.0  # the seeds agree exactly
    assert np.isnan(seed_paired_ttest([1.0], [2.0]))
    with pytest.raises(ValueError, match="one value per seed"):
        seed_paired_ttest([1.0, 2.0], [1.0, 2.0, 3.0])
