"""The TRL dead-group callback: its closed form against sampled groups, and its logging."""

import types

import numpy as np
import pytest

from fgpo_core.algorithms.callbacks import DeadGroupCallback, closed_form_dead_groups


def test_closed_form_with_a_format_failure_class_matches_sampled_groups():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=6) * 0.8  # 20% of the mass parses to no action
    r = rng.choice([-0.95, 0.05, 1.0], size=(6, 5))
    fail = np.array([0.0, -0.95, 0.0, 0.0, -0.95, 0.0])
    G = 4
    closed = closed_form_dead_groups(p, r, G, fail)
    full = np.concatenate([p, 1 - p.sum(1, keepdims=True)], 1)
    rew = np.concatenate([r, fail[:, None]], 1)
    n = 40000
    draws = np.stack([rng.choice(6, size=(n, G), p=full[i]) for i in range(6)])  # [6, n, G]
    groups = np.take_along_axis(rew[:, None, :].repeat(n, 1), draws, 2)
    mc = (np.ptp(groups, axis=2) <= 1e-8).mean(1)
    np.testing.assert_allclose(closed, mc, atol=4 * np.sqrt(0.25 / n))
    with pytest.raises(ValueError, match="unit mass"):
        closed_form_dead_groups(p * 2, r, G, fail)


def test_callback_logs_beside_trl_and_into_the_history():
    p = np.array([[0.5, 0.5], [1.0, 0.0]])
    r = np.array([[0.0, 1.0], [0.0, 1.0]])
    cb = DeadGroupCallback(lambda model: p, r, every=2)
    args = types.SimpleNamespace(num_generations=3)
    state = types.SimpleNamespace(global_step=1, log_history=[{"step": 1, "loss": 0.1}])
    logs = {"frac_reward_zero_std": 0.5}
    cb.on_log(args, state, None, model=None, logs=logs)
    want = (0.5**3 + 0.5**3 + 1.0) / 2
    assert logs["dead_group_closed_form"] == pytest.approx(want)
    assert state.log_history[-1]["dead_group_closed_form"] == pytest.approx(want)
    assert cb.history == [
        {"step": 1, "dead_group_closed_form": pytest.approx(want), "p_gen_on_actions": 1.0, "frac_reward_zero_std": 0.5}
    ]
    logs2 = {}
    state.global_step = 2
    cb.on_log(args, state, None, model=None, logs=logs2)  # every=2: the second log is skipped
    assert logs2 == {} and len(cb.history) == 1
    with pytest.raises(ValueError, match="num_generations"):
        DeadGroupCallback(lambda m: p, r).on_log(types.SimpleNamespace(), state, None, logs={})


def test_a_resumed_run_keeps_the_callbacks_cadence():
    p = np.array([[0.5, 0.5]])
    r = np.array([[0.0, 1.0]])
    cb = DeadGroupCallback(lambda model: p, r, G=2, every=4)
    # resumed after step 3 (its log history holds steps 1-3): measured at steps 5 and 9, as an unbroken run
    history = [{"step": i, "loss": 0.0} for i in range(1, 4)]
    state = types.SimpleNamespace(global_step=3, log_history=history)
    for step in range(4, 10):
        state.global_step = step
        history.append({"step": step, "loss": 0.0})
        cb.on_log(types.SimpleNamespace(), state, None, model=None, logs={})
    assert [h["step"] for h in cb.history] == [5, 9]
    assert [h["step"] for h in history if "dead_group_closed_form" in h] == [5, 9]


def test_recount_logs_the_dead_fraction_of_the_groups_scored_since_the_last_log():
    """The one Recount (TRL callback) of the GRPO runs, the cpu ones and the GPU one alike."""
    from fgpo_core.algorithms.callbacks import Recount
    from fgpo_core.algorithms.grpo import TableReward

    reward = TableReward(np.zeros((2, 16), bool), 4, G=2)
    reward.groups += [np.array([0.0, 0.0])]  # before the callback: not counted
    cb = Recount(reward)
    reward.groups += [np.array([1.0, 1.0]), np.array([0.0, 1.0]), np.array([0.05, 0.05]), np.array([0.0, 0.3])]
    state = types.SimpleNamespace(global_step=3, log_history=[{"step": 3, "loss": 0.1}])
    logs = {"frac_reward_zero_std": 0.5}
    cb.on_log(None, state, None, logs=logs)
    assert logs["dead_fraction_recount"] == 0.5 == state.log_history[-1]["dead_fraction_recount"]
    again = {}
    cb.on_log(None, state, None, logs=again)  # no new groups: nothing written
    cb.on_log(None, state, None, logs={"train_runtime": 1.0})
    assert again == {}
    reward.groups += [np.array([1.0, 1.0])]
    cb.on_log(None, state, None, logs=again)
    assert again["dead_fraction_recount"] == 1.0
