import numpy as np
import pandas as pd
import pytest

from fgpo_core.book import paper
from fgpo_core.algorithms.bandit import BanditConfig, gradient_estimator_study, policy_metrics, train_bandit
from fgpo_core.table.synthetic import SyntheticTableConfig, make_synthetic_table


@pytest.fixture(scope="module")
def table():
    return make_synthetic_table(SyntheticTableConfig(n_questions=2000), seed=0)


def test_synthetic_table_resembles_the_paper(table):
    c = table.ceilings()
    for key, tol in [("no_tool", 4), ("oracle", 4), ("empty_optimal", 5), ("outcome_degenerate", 6)]:
        assert abs(c[key] - paper.GENOMEQA_CEILINGS[key]) < tol, key


def test_synthetic_table_is_deterministic():
    a = make_synthetic_table(SyntheticTableConfig(n_questions=50), seed=3)
    b = make_synthetic_table(SyntheticTableConfig(n_questions=50), seed=3)
    c = make_synthetic_table(SyntheticTableConfig(n_questions=50), seed=4)
    assert (a.correct == b.correct).all() and not (a.correct == c.correct).all()


@pytest.mark.parametrize("method,extra", [("fgpo", {}), ("fgpo-k", {"k": 4}), ("grpo", {}),
                                          ("grpo", {"reward": "differential"})])
def test_tiny_training_raises_expected_reward(method, extra):
    t = make_synthetic_table(SyntheticTableConfig(n_questions=64), seed=1)
    run = train_bandit(t, BanditConfig(method=method, epochs=3, eval_every=4, **extra))
    first, last = run.evals.iloc[0], run.evals.iloc[-1]
    assert last["J"] > first["J"] + 0.02
    assert last["accuracy"] > first["accuracy"]


def test_runs_are_deterministic_under_a_seed():
    t = make_synthetic_table(SyntheticTableConfig(n_questions=48), seed=2)
    cfg = BanditConfig(method="grpo", epochs=2, seed=5)
    a, b = train_bandit(t, cfg), train_bandit(t, cfg)
    np.testing.assert_array_equal(a.probs, b.probs)
    pd.testing.assert_frame_equal(a.steps, b.steps)


def test_grpo_logged_dead_fraction_equals_equal_reward_groups(monkeypatch):
    """The logged per-step fraction must be the share of groups whose G rewards are all equal."""
    import fgpo_core.core.registry as registry

    seen = []
    real = registry.grpo_advantages

    def spy(group_r, variant="paper"):
        seen.append(float((group_r.max(1).values == group_r.min(1).values).double().mean()))
        return real(group_r, variant)

    monkeypatch.setattr(registry, "grpo_advantages", spy)
    t = make_synthetic_table(SyntheticTableConfig(n_questions=80), seed=0)
    run = train_bandit(t, BanditConfig(method="grpo", reward="differential", epochs=2))
    np.testing.assert_allclose(run.steps["dead_observed"].to_numpy(), 100 * np.array(seen))  # percent
    assert 0 < np.mean(seen) < 1


def test_reward_evaluations_are_counted():
    t = make_synthetic_table(SyntheticTableConfig(n_questions=32), seed=0)
    assert train_bandit(t, BanditConfig(method="fgpo", epochs=1)).reward_evaluations == 32 * 16
    assert train_bandit(t, BanditConfig(method="fgpo-k", k=2, epochs=1)).reward_evaluations == 32 * 2
    assert train_bandit(t, BanditConfig(method="grpo", epochs=1)).reward_evaluations == 32 * 6


def test_config_errors():
    t = make_synthetic_table(SyntheticTableConfig(n_questions=8), seed=0)
    for bad in [dict(method="ppo"), dict(method="fgpo-k", k=17), dict(method="grpo", group_size=1),
                dict(reward="other"), dict(epochs=0), dict(lr=0.0)]:
        with pytest.raises(ValueError):
            train_bandit(t, BanditConfig(**bad))


def test_estimator_study_exact_row_is_exact(table):
    t = table.subset(np.arange(30))
    p = np.random.default_rng(0).dirichlet(np.ones(16), size=30)
    study = gradient_estimator_study(p, t.rewards("eq1"), {"exact": ("fgpo-k", 16), "g6": ("grpo", 6)},
                                     n_draws=20)
    exact = study[study.estimator == "exact"]
    np.testing.assert_allclose(exact.cosine, 1.0, atol=1e-9)
    np.testing.assert_allclose(exact.rel_error, 0.0, atol=1e-12)


def _mean_cosines(table):
    t = table.subset(np.arange(30))
    p = np.random.default_rng(0).dirichlet(np.ones(16), size=30)
    arms = {"g6": ("grpo", 6), "g16": ("grpo", 16), "g64": ("grpo", 64), "k4": ("fgpo-k", 4), "k8": ("fgpo-k", 8)}
    return gradient_estimator_study(p, t.rewards("eq1"), arms, n_draws=50).groupby("estimator").cosine.mean()


def test_sampled_gradients_point_along_the_exact_one_and_a_miswired_one_does_not(table, monkeypatch):
    """One visit's sampled gradient against the exact logit gradient ``q (r - J)``: GRPO's lines up
    as G grows (mean cosine about 0.93 at G=64 on these policies) and so does the coverage dial's as
    k grows. The same bound fails for a GRPO whose advantages are paired with the wrong samples
    (each sample given its neighbour's advantage): its mean cosine is about 0."""
    from fgpo_core.algorithms import bandit

    cos = _mean_cosines(table)
    assert cos["g64"] > 0.85
    assert cos["g6"] < cos["g16"] < cos["g64"] and cos["k4"] < cos["k8"]
    real = bandit.grpo_advantages
    monkeypatch.setattr(bandit, "grpo_advantages", lambda r, *a, **k: real(r.roll(1, dims=1), *a, **k))
    wrong = _mean_cosines(table)
    assert not wrong["g64"] > 0.85 and abs(wrong["g64"]) < 0.2


def test_policy_metrics_of_the_oracle(table):
    best = table.oracle_actions()
    probs = np.eye(16)[best]
    m = policy_metrics(probs, table)
    assert m["accuracy"] == pytest.approx(table.ceilings()["oracle"])
    assert m["dead_G6"] == pytest.approx(100.0)
    assert m["top_mass"] == pytest.approx(1.0)
