import numpy as np
import pytest

from fgpo_core.core.rewards import differential_reward, eq1_reward


def test_eq1_hand_cases():
    # n = 4, lambda = 0.1: correct with no tool = 1.1, wrong with all four = -1.1
    assert eq1_reward(True, 0, 4) == pytest.approx(1.1)
    assert eq1_reward(False, 4, 4) == pytest.approx(-1.1)
    assert eq1_reward(True, 2, 4) == pytest.approx(1.0)
    assert eq1_reward(False, 1, 4) == pytest.approx(-0.95)
    assert eq1_reward(True, 3, 4, lam=0.0) == pytest.approx(1.0)


def test_eq1_correctness_always_dominates():
    sizes = np.arange(5)
    right = eq1_reward(np.ones(5, bool), sizes, 4)
    wrong = eq1_reward(np.zeros(5, bool), sizes, 4)
    assert right.min() > wrong.max()
    assert np.all(np.diff(right) < 0) and np.all(np.diff(wrong) < 0)  # fewer tools score higher


def test_differential_reward_hand_cases():
    assert differential_reward(True, False) == pytest.approx(0.95 + 0.05)
    assert differential_reward(False, True) == pytest.approx(-0.95 + 0.05)
    assert differential_reward(True, True) == pytest.approx(0.05)
    assert differential_reward(True, False, parsed=False) == pytest.approx(0.0)


def test_reward_input_errors():
    with pytest.raises(ValueError):
        eq1_reward([2], [0], 4)
    with pytest.raises(ValueError):
        eq1_reward([1], [5], 4)
    with pytest.raises(ValueError):
        eq1_reward([1], [1], 4, lam=-0.1)
