import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from fgpo_core.algorithms.bandit import BanditConfig, gradient_estimator_study, policy_metrics, train_bandit
from fgpo_core.book import paper
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


@pytest.mark.parametrize(
    "method,extra", [("fgpo", {}), ("fgpo-k", {"k": 4}), ("grpo", {}), ("grpo", {"reward": "differential"})]
)
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
    for bad in [
        dict(method="ppo"),
        dict(method="fgpo-k", k=17),
        dict(method="grpo", group_size=1),
        dict(reward="other"),
        dict(epochs=0),
        dict(lr=0.0),
    ]:
        with pytest.raises(ValueError):
            train_bandit(t, BanditConfig(**bad))


def test_estimator_study_exact_row_is_exact(table):
    t = table.subset(np.arange(30))
    p = np.random.default_rng(0).dirichlet(np.ones(16), size=30)
    study = gradient_estimator_study(p, t.rewards("eq1"), {"exact": ("fgpo-k", 16), "g6": ("grpo", 6)}, n_draws=20)
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
    cos = _mean_cosines(table)
    assert cos["g64"] > 0.85
    assert cos["g6"] < cos["g16"] < cos["g64"] and cos["k4"] < cos["k8"]
    import fgpo_core.core.registry as registry

    real = registry.grpo_advantages  # the registry's GRPO, which the study differentiates
    monkeypatch.setattr(registry, "grpo_advantages", lambda r, *a, **k: real(r.roll(1, dims=1), *a, **k))
    wrong = _mean_cosines(table)
    assert not wrong["g64"] > 0.85 and abs(wrong["g64"]) < 0.2


def test_policy_metrics_of_the_oracle(table):
    best = table.oracle_actions()
    probs = np.eye(16)[best]
    m = policy_metrics(probs, table)
    assert m["accuracy"] == pytest.approx(table.ceilings()["oracle"])
    assert m["dead_G6"] == pytest.approx(100.0)
    assert m["top_mass"] == pytest.approx(1.0)


def _closed_form_grpo(p, r, G, n_draws, rng):
    """GRPO's single-visit logit gradients, written out (the bandit's former numpy copy): ``G`` draws
    by inverse CDF, Eq. 3's advantages (population std), ``(1/G) sum_i A_i (e_{a_i} - q)``."""
    N, A = p.shape
    cdf = np.cumsum(p, 1)
    cdf[:, -1] = 1.0
    draws = (rng.random((n_draws, N, G))[..., None] > cdf[None, :, None, :]).sum(-1)
    gr = np.take_along_axis(np.broadcast_to(r, (n_draws, N, A)), draws, 2)
    std = gr.std(2, keepdims=True)
    adv = np.where(std > 0, (gr - gr.mean(2, keepdims=True)) / (std + 1e-6), 0.0)
    onehot = np.zeros((n_draws, N, G, A))
    np.put_along_axis(onehot, draws[..., None], 1.0, 3)
    return (adv[..., None] * (onehot - p[None, :, None, :])).mean(2)


def _closed_form_dial(p, r, k, n_draws, rng):
    """The coverage dial's gradients written out: ``q_k (r - J_k)`` on ``k`` uniformly kept subsets."""
    keys = rng.random((n_draws,) + p.shape)
    mask = keys <= np.sort(keys, 2)[..., k - 1 : k]
    qk = np.where(mask, p[None], 0.0)
    qk /= qk.sum(2, keepdims=True)
    return qk * (r[None] - (qk * r[None]).sum(2, keepdims=True))


def _registry_gradients(method, p, r, n_draws, seed=0):
    from fgpo_core.algorithms.bandit import BANDIT_SETTINGS
    from fgpo_core.algorithms.methods import context, resolve_method, visit_gradient

    est, s, _ = resolve_method(method, BANDIT_SETTINGS.__class__(grpo_variant="paper", regularizer="none"))
    rt = torch.as_tensor(r)
    ctx = context(est, s, rt)
    rows = torch.arange(len(p)).repeat(n_draws)
    g, n = visit_gradient(
        est,
        torch.as_tensor(np.log(p))[rows],
        rt[rows],
        torch.Generator().manual_seed(seed),
        dataclasses.replace(ctx, idx=rows, optimal=ctx.optimal[rows]),
    )
    return g.numpy().reshape(n_draws, *p.shape), n


@pytest.mark.parametrize(
    "method,closed",
    [
        ("grpo-G4", lambda p, r, d, rng: _closed_form_grpo(p, r, 4, d, rng)),
        ("fgpo-k3", lambda p, r, d, rng: _closed_form_dial(p, r, 3, d, rng)),
    ],
)
def test_registry_gradient_has_the_closed_forms_mean(method, closed):
    """The bandit's gradient is the registry's loss differentiated by autograd; over many visits its
    mean equals the mean of the closed form written out by hand (GRPO's score-function estimate, the
    dial's renormalised Eq. 8), within Monte Carlo error; the two draw independently."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(8), size=5)
    r = rng.choice([0.0, 0.5, 1.0], size=(5, 8))
    D = 20000
    reg, n = _registry_gradients(method, p, r, D)
    ref = closed(p, r, D, rng)
    se = np.sqrt(reg.var(0) / D + ref.var(0) / D)
    assert np.all(np.abs(reg.mean(0) - ref.mean(0)) <= 5 * se + 1e-9)
    assert n == D * 5 * (4 if method.startswith("grpo") else 3)


def test_rloo_gradient_is_unbiased_for_the_exact_one():
    """RLOO's leave-one-out baseline makes one visit's gradient an unbiased estimate of Eq. 8's
    ``q (r - J)``: the Monte Carlo mean through the registry matches it; plain GRPO's (normalised) does not."""
    from fgpo_core.core.estimators import fgpo_logit_gradient

    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(8), size=4)
    r = rng.choice([0.0, 0.3, 1.0], size=(4, 8))
    exact = fgpo_logit_gradient(torch.as_tensor(np.log(p)), torch.as_tensor(r)).numpy()
    D = 40000
    g, _ = _registry_gradients("rloo-G3", p, r, D)
    se = g.std(0) / np.sqrt(D)
    assert np.all(np.abs(g.mean(0) - exact) <= 5 * se + 1e-9)
    grpo, _ = _registry_gradients("grpo-G3", p, r, D)
    assert np.abs(grpo.mean(0) - exact).max() > 10 * (grpo.std(0) / np.sqrt(D)).max()


@pytest.mark.parametrize("method", ["rloo", "dapo", "rloo-kl", "grpo-eq1-G4", "sft", "dpo", "shortlist-top4"])
def test_every_registered_estimator_trains_the_bandit(method):
    t = make_synthetic_table(SyntheticTableConfig(n_questions=48), seed=1)
    run = train_bandit(
        t, BanditConfig(method=method, settings=BanditConfig().settings.__class__(reward="eq1"), epochs=3, eval_every=4)
    )
    assert run.evals.iloc[-1]["J"] > run.evals.iloc[0]["J"]


def test_method_names_and_their_modifiers():
    t = make_synthetic_table(SyntheticTableConfig(n_questions=16), seed=0)
    cfg = BanditConfig(method="grpo-G8-e2")
    assert cfg.G == 8 and cfg.name == "GRPO (differential, G=8)"
    assert train_bandit(t, cfg).reward_evaluations == 2 * 16 * 8  # two epochs of G = 8
    assert BanditConfig(method="fgpo-k4").name == "k-subset (k=4)" == BanditConfig(method="fgpo-k", k=4).name
    assert BanditConfig(method="rloo").name == "RLOO (differential, G=6)"
    older = BanditConfig(method="grpo", reward="eq1", group_size=4, epochs=2)  # the chapter's earlier spelling
    assert older.settings.reward == "eq1" and older.G == 4 and older.name == "GRPO (Eq. 1, G=4)"
    with pytest.raises(ValueError, match="hidden"):
        train_bandit(t, BanditConfig(method="grpo-h64"))


def test_the_study_takes_method_names_and_the_older_pairs(table):
    t = table.subset(np.arange(10))
    p = np.random.default_rng(0).dirichlet(np.ones(16), size=10)
    a = gradient_estimator_study(p, t.rewards("eq1"), {"x": ("grpo", 6), "k": ("fgpo-k", 4)}, n_draws=5, seed=3)
    b = gradient_estimator_study(p, t.rewards("eq1"), {"x": "grpo-G6", "k": "fgpo-k4"}, n_draws=5, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = gradient_estimator_study(p, t.rewards("eq1"), {"r": "rloo-G4", "d": "dapo"}, n_draws=5)
    assert set(c.estimator) == {"r", "d"} and c.cosine.between(-1, 1).all()


def test_a_clipped_ratio_with_several_updates_per_draw_races_beside_the_others():
    """GRPO with PPO's clip, four optimiser updates per draw: its ratio moves off 1, it pays G rewards
    per visit once (not per update), and the race's epochs count its updates."""
    from fgpo_core.algorithms.bandit import run_race

    t = make_synthetic_table(SyntheticTableConfig(n_questions=32), seed=0)
    race = run_race(t, [BanditConfig(method="grpo", epochs=2), BanditConfig(method="grpo-clip-u4", epochs=2)])
    clip = race.runs[(race.order[1], 0)]
    assert race.order[1] == "GRPO (clipped ratio; differential, G=6)"
    assert clip.reward_evaluations == race.runs[(race.order[0], 0)].reward_evaluations == 2 * 32 * 6
    assert len(clip.steps) == 4 * len(race.runs[(race.order[0], 0)].steps)
    assert race.evals.groupby("arm").epoch.max().tolist() == [2.0, 2.0]
    assert not np.allclose(clip.probs, race.runs[(race.order[0], 0)].probs)
