"""The estimator registry: one object per method, read by the name grammar, the labels, the
palette and the presets; the kept head is the best dev evaluation for every method; the training
loop gives the results it gave before it was shared; the worked example ``rloo-kl``."""
import numpy as np
import pytest
import torch

from fgpo_core.algorithms.head import HeadConfig, train_head
from fgpo_core.core.method_names import ALL_METHODS, METHODS, MODIFIERS, modifier_help, parse_method
from fgpo_core.core.registry import ESTIMATORS, KINDS, RLOO_KL, VisitContext, estimator, preset_methods
from test_head import family_problem


def test_every_estimator_is_complete_and_its_names_parse_back_to_it():
    from matplotlib.colors import is_color_like

    from fgpo_core.book.plots import study_palette
    from fgpo_core.experiments.study import PRESETS
    from fgpo_core.experiments.study_report import label

    for name, est in ESTIMATORS.items():
        assert est.kind in KINDS and est.reward in ("eq1", "differential") and est.label
        assert is_color_like(est.colour) or est.dial  # a dial's colour is a palette
        for m in est.names:
            assert parse_method(m).estimator is est
            assert label(m) != m
    assert set(METHODS) < set(ALL_METHODS) and "rloo-kl" in ALL_METHODS and "rloo-kl" not in METHODS
    assert PRESETS["main"] == ",".join(preset_methods("main"))
    assert PRESETS["main"] == "fgpo,grpo,grpo-eq1,rloo,dapo,sft,dpo,fgpo-k1,fgpo-k2,fgpo-k4,fgpo-k8"
    pal = study_palette(list(ALL_METHODS) + ["fgpo-lambda0", "sft-e4+grpo-e2"])
    assert pal["fgpo-lambda0"] == pal["fgpo"] and pal["sft-e4+grpo-e2"] == pal["grpo"]
    assert len({pal[m] for m in ("fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8")}) == 4
    with pytest.raises(ValueError, match="unknown method"):
        study_palette(["fgpo", "ppo"])  # an unknown method is refused, not painted grey
    with pytest.raises(ValueError):
        estimator("ppo")


def test_the_modifier_table_drives_the_parser_and_the_help():
    text = modifier_help()
    for m in MODIFIERS:
        assert f"-{m.key}<" in text
    assert parse_method("dpo-beta0.1").overrides == {"dpo_beta": 0.1}  # DPO's beta is its own row
    assert parse_method("fgpo-beta0.1").overrides == {"beta": 0.1}
    assert parse_method("rloo-kl-G4").overrides == {"G": 4} and parse_method("rloo-kl").base == "rloo-kl"
    assert parse_method("rloo-G4").base == "rloo"


@pytest.mark.parametrize("method", ALL_METHODS)
def test_the_kept_step_is_the_argmax_of_dev_accuracy(method):
    """keep="best": the highest dev accuracy, ties broken by the higher J, then the earlier step.
    (DPO's branch used to rebind the variable this rule reads, and kept another step.)"""
    x, t, _ = family_problem(96)
    dx, dt, _ = family_problem(48, seed=1)
    run = train_head(x, t, dx, dt, HeadConfig(method=method, lr=0.03, epochs=2, seed=3, eval_every=3))
    dev = run.dev
    best = dev.sort_values(["accuracy", "J", "step"], ascending=[False, False, True]).iloc[0]
    assert run.best_step == int(best["step"])
    picks = run.q(dx).argmax(1)
    assert 100.0 * dt.correct[np.arange(len(picks)), picks].mean() == pytest.approx(best["accuracy"])  # that step's head


# Made by the training loop before it was shared between the estimators (dpo: after the fix of its
# checkpoint rule, which kept step 12, the last, before): best step, reward evaluations, reward
# calls, dev accuracy at each evaluation, final dev J.
BEFORE = {
    "fgpo": [12, 3072, 1536, [0.0, 100.0, 100.0, 100.0, 100.0], 0.229879],
    "fgpo-k2": [12, 384, 363, [0.0, 91.67, 100.0, 100.0, 100.0], 0.084844],
    "fgpo-k4": [12, 768, 677, [0.0, 100.0, 100.0, 100.0, 100.0], 0.151651],
    "grpo": [12, 1152, 837, [0.0, 100.0, 100.0, 100.0, 100.0], 0.171899],
    "grpo-eq1": [12, 1152, 836, [0.0, 100.0, 100.0, 100.0, 100.0], 0.167056],
    "rloo": [12, 1152, 834, [0.0, 100.0, 100.0, 100.0, 100.0], 0.169864],
    "dapo": [12, 1230, 844, [0.0, 100.0, 100.0, 100.0, 100.0], 0.176841],
    "sft": [6, 0, 1536, [0.0, 91.67, 100.0, 100.0, 100.0], -0.017522],
    "dpo": [6, 0, 1536, [0.0, 81.25, 100.0, 100.0, 100.0], -0.019476],
    "shortlist-top4": [12, 768, 709, [0.0, 100.0, 100.0, 100.0, 100.0], 0.132377],
    "shortlist-grow4": [12, 768, 553, [0.0, 56.25, 81.25, 95.83, 97.92], 0.057392],
}


@pytest.mark.parametrize("method", BEFORE)
def test_the_shared_loop_reproduces_the_runs_of_the_loop_before_it(method):
    torch.set_num_threads(1)
    x, t, _ = family_problem(96)
    dx, dt, _ = family_problem(48, seed=1)
    r = train_head(x, t, dx, dt, HeadConfig(method=method, lr=0.03, epochs=2, seed=3, eval_every=3))
    got = [r.best_step, r.reward_evaluations, r.extra["reward_calls"], [round(a, 2) for a in r.dev.accuracy]]
    assert got == BEFORE[method][:4]
    assert float(r.dev.J.iloc[-1]) == pytest.approx(BEFORE[method][4], abs=2e-6)


def test_an_injected_policy_is_trained_and_kept():
    x, t, _ = family_problem(64)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 16))
    torch.nn.init.zeros_(policy[0].weight), torch.nn.init.zeros_(policy[0].bias)
    run = train_head(x, t, x, t, HeadConfig(method="fgpo", lr=0.1, epochs=3), policy=policy)
    assert run.head is policy and policy[0].weight.abs().sum() > 0
    assert run.dev.accuracy.max() > run.dev.accuracy.iloc[0]


def test_rloo_kl_is_unbiased_for_the_exact_gradient_of_its_objective():
    """Averaged over many visits, the sampled gradient of ``rloo-kl`` is the exact gradient of
    ``-E_q[r] + RLOO_KL * KL(q || uniform)``, computed by enumerating every subset."""
    gen = torch.Generator().manual_seed(0)
    B, A, G, M = 3, 8, 4, 40000
    z = (2 * torch.randn(B, A, generator=gen, dtype=torch.float64)).requires_grad_()
    r = torch.rand(B, A, generator=gen, dtype=torch.float64).round()
    r[:, 0] = 0.3  # not only 0/1 rewards
    est = ESTIMATORS["rloo-kl"]
    ctx = VisitContext(idx=torch.arange(B * M), optimal=torch.ones(B * M, A, dtype=torch.bool), G=G)
    v = est.visit(z.repeat(M, 1), r.repeat(M, 1), gen, ctx)
    v.loss.backward()
    sampled, z.grad = z.grad.clone(), None
    logq = torch.log_softmax(z, -1)
    q = logq.exp()
    exact_loss = (-(q * r).sum(-1) + RLOO_KL * (q * (logq + np.log(A))).sum(-1)).mean()
    exact = torch.autograd.grad(exact_loss, z, retain_graph=True)[0]
    no_kl = torch.autograd.grad(-(q * r).sum(-1).mean(), z)[0]
    err = (sampled - exact).abs().max()
    assert err < 1.5e-3, err
    assert (no_kl - exact).abs().max() > 4 * err  # the KL term is seen, not lost in the noise
    assert v.n_reward == B * M * G and v.paid.sum(1).le(G).all() and "dead_observed" in v.telemetry
