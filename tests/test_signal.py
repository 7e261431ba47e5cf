"""Gradient signal-to-noise and dead groups at a policy (fgpo_core.evaluation.signal)."""

import numpy as np
import pytest

from fgpo_core.evaluation.signal import policy_signal, signal_to_noise, visit_directions


def test_signal_to_noise_recovers_a_known_ratio():
    rng = np.random.default_rng(0)
    mu = np.array([[3.0, 0.0, 4.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # |mu|^2 = 25 and 2
    sigma = np.array([1.0, 0.5])  # per-coordinate noise: trace = 4 sigma^2
    d = mu[None] + sigma[None, :, None] * rng.normal(size=(20000, 2, 4))
    np.testing.assert_allclose(signal_to_noise(d), [25 / 4, 2 / (4 * 0.25)], rtol=0.05)


def test_signal_to_noise_is_zero_for_pure_noise_and_nan_without_noise():
    rng = np.random.default_rng(1)
    assert signal_to_noise(rng.normal(size=(5000, 1, 8)))[0] < 0.01
    assert np.isnan(signal_to_noise(np.ones((10, 1, 3)))[0])


def test_rloo_visits_average_to_the_exact_gradient():
    """RLOO's single-visit direction is unbiased: its mean over many visits is q (r - J) (Eq. 8)."""
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(8), size=3)
    r = rng.integers(0, 2, size=(3, 8)).astype(float)
    r[:, 0], r[:, 1] = 0.0, 1.0  # every question has two rewards
    d = visit_directions(p, r, "rloo", n_draws=10000, seed=0)
    exact = p * (r - (p * r).sum(1, keepdims=True))
    np.testing.assert_allclose(d.mean(0), exact, atol=4 * d.std(0).max() / np.sqrt(10000))


def test_a_question_with_one_reward_is_all_dead_and_has_no_signal():
    p = np.full((2, 4), 0.25)
    r = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
    f = policy_signal(p, r, "grpo", G=6, n_draws=200)
    assert f.dead.iloc[0] == pytest.approx(1.0) and np.isnan(f.snr.iloc[0])
    assert f.dead.iloc[1] == pytest.approx(2 * 0.5**6) and f.snr.iloc[1] > 0


def test_a_concentrated_policy_has_more_dead_groups_and_less_signal():
    r = np.array([[0.0, 1.0, 0.0, 0.0]])
    flat = policy_signal(np.full((1, 4), 0.25), r, "grpo", G=6, n_draws=4000)
    peaked = policy_signal(np.array([[0.97, 0.01, 0.01, 0.01]]), r, "grpo", G=6, n_draws=4000)
    assert peaked.dead.iloc[0] > flat.dead.iloc[0] and peaked.snr.iloc[0] < flat.snr.iloc[0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="not a sampled"):
        visit_directions(np.full((1, 4), 0.25), np.zeros((1, 4)), "fgpo")
    with pytest.raises(ValueError, match=r"\[N, A\]"):
        visit_directions(np.full((1, 4), 0.25), np.zeros((1, 3)), "grpo")
