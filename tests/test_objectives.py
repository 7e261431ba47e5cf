import numpy as np
import pytest
import torch

from fgpo_core.core import estimators as obj
from fgpo_core.core.settings import EstimatorSettings


@pytest.fixture(autouse=True)
def float64_default():
    """These tests compare gradients closely: float64, restored afterwards for other modules."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def rand(B=8, A=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, A, generator=g), torch.randn(B, A, generator=g)


def test_fgpo_loss_value_by_hand():
    logits, rewards = rand()
    q = torch.softmax(logits, 1)
    H = -(q * q.log()).sum(1)
    expect = -((q * rewards).sum(1) + 0.03 * H).mean()
    assert obj.fgpo_loss(logits, rewards, 0.03) == pytest.approx(float(expect))


@pytest.mark.parametrize("beta", [0.0, 0.03, 0.7])
def test_eq8_equals_autograd(beta):
    logits, rewards = rand(seed=1)
    logits.requires_grad_(True)
    (auto,) = torch.autograd.grad(obj.fgpo_objective(logits, rewards, beta).sum(), logits)
    torch.testing.assert_close(auto, obj.fgpo_logit_gradient(logits.detach(), rewards, beta))


@pytest.mark.parametrize("beta", [0.0, 0.03])
def test_shared_token_weight_equals_autograd_through_mean_scores(beta):
    """Adding c to a log-probability every candidate shares moves score a by c/|y_a|."""
    base, rewards = rand(B=3, A=16, seed=4)
    lengths = torch.tensor([4.0 + bin(a).count("1") * 2 for a in range(16)])
    c = torch.zeros(3, 1, requires_grad=True)
    (auto,) = torch.autograd.grad(obj.fgpo_objective(base + c / lengths, rewards, beta).sum(), c)
    torch.testing.assert_close(auto[:, 0], obj.shared_token_weight(base, rewards, lengths, beta))


def test_shared_token_weight_is_negative_when_the_longer_strings_win():
    lengths = torch.tensor([3.0, 5.0, 7.0])
    logits = torch.zeros(1, 3)
    assert obj.shared_token_weight(logits, torch.tensor([[0.0, 0.0, 1.0]]), lengths) < 0
    assert obj.shared_token_weight(logits, torch.tensor([[1.0, 0.0, 0.0]]), lengths) > 0
    assert obj.shared_token_weight(logits, torch.ones(1, 3), lengths) == 0  # nothing to learn
    with pytest.raises(ValueError, match="length"):
        obj.shared_token_weight(logits, torch.ones(1, 3), torch.tensor([1.0, 0.0, 2.0]))


def test_eq8_equals_finite_differences():
    logits, rewards = rand(B=1, A=6, seed=2)
    grad = obj.fgpo_logit_gradient(logits, rewards, 0.03)[0]
    h = 1e-6
    for a in range(6):
        e = torch.zeros_like(logits)
        e[0, a] = h
        fd = (obj.fgpo_objective(logits + e, rewards, 0.03) - obj.fgpo_objective(logits - e, rewards, 0.03)) / (2 * h)
        assert float(fd) == pytest.approx(float(grad[a]), abs=1e-8)


def test_every_action_with_reward_different_from_J_gets_gradient():
    logits = torch.zeros(1, 16)
    rewards = torch.tensor([[1.0] * 4 + [-1.0] * 12])
    g = obj.fgpo_logit_gradient(logits, rewards)
    assert (g[0, :4] > 0).all() and (g[0, 4:] < 0).all()


def test_mask_restricts_the_sum_and_full_mask_is_fgpo():
    logits, rewards = rand(seed=3)
    logits.requires_grad_(True)
    full = torch.ones_like(logits, dtype=torch.bool)
    with torch.no_grad():
        assert float(obj.fgpo_loss(logits, rewards, 0.03, full)) == pytest.approx(
            float(obj.fgpo_loss(logits, rewards, 0.03))
        )
    mask = torch.zeros_like(full)
    mask[:, :3] = True
    loss = obj.fgpo_loss(logits, rewards, 0.03, mask)
    sub = obj.fgpo_loss(logits[:, :3], rewards[:, :3], 0.03)
    assert loss.item() == pytest.approx(sub.item())
    (g,) = torch.autograd.grad(loss, logits)
    assert torch.isfinite(g).all() and (g[:, 3:] == 0).all()
    with pytest.raises(ValueError, match="at least one"):
        obj.fgpo_loss(logits, rewards, 0.03, torch.zeros_like(full))


def test_fgpo_input_errors():
    logits, rewards = rand()
    with pytest.raises(ValueError, match="share shape"):
        obj.fgpo_loss(logits, rewards[:, :3])
    with pytest.raises(TypeError):
        obj.fgpo_loss(np.zeros((2, 4)), np.zeros((2, 4)))


def test_grpo_advantages_population_and_trl():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0, 1.0, 0.0]])
    mu, pop = 0.5, 0.5
    expect = (r - mu) / (pop + 1e-6)
    torch.testing.assert_close(obj.grpo_advantages(r), expect)
    # TRL: torch.std (Bessel) and eps 1e-4, as in GRPOTrainer
    trl = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)
    torch.testing.assert_close(obj.grpo_advantages(r, "trl"), trl)


def test_dead_group_has_exactly_zero_advantages():
    r = torch.tensor([[0.1] * 6, [1.1] * 6, [0.1, 0.2, 0.1, 0.1, 0.1, 0.1]])
    adv = obj.grpo_advantages(r)
    assert (adv[:2] == 0).all() and (adv[2] != 0).all()
    assert obj.dead_group_mask(r).tolist() == [True, True, False]
    assert (obj.grpo_advantages(r, "trl")[:2] == 0).all()


def test_grpo_loss_gradient_is_the_score_function():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(3, 16, generator=g, requires_grad=True)
    draws = torch.randint(0, 16, (3, 6), generator=g)
    adv = torch.randn(3, 6, generator=g)
    logp = torch.log_softmax(logits, 1).gather(1, draws)
    (grad,) = torch.autograd.grad(obj.grpo_loss(logp, adv), logits)
    q = torch.softmax(logits, 1).detach()
    onehot = torch.nn.functional.one_hot(draws, 16).double()
    expect = -(adv[..., None] * (onehot - q[:, None, :])).sum(1) / adv.numel()
    torch.testing.assert_close(grad, expect)


def test_grpo_input_errors():
    with pytest.raises(ValueError):
        obj.grpo_advantages(torch.zeros(6))
    with pytest.raises(ValueError):
        obj.grpo_advantages(torch.zeros(2, 1))
    with pytest.raises(ValueError):
        obj.grpo_advantages(torch.zeros(2, 3), variant="other")


def test_lm_configs_embed_the_estimator_settings_and_read_their_older_records():
    """``fgpo train`` flags reach the embedded settings (``--G``, ``--regularizer``), and the committed
    runs' manifests (a top-level ``G``, FGPO's ``beta``) read back as the configs that trained them."""
    import argparse
    import json
    from pathlib import Path

    from fgpo_core.algorithms.fgpo import FGPOConfig
    from fgpo_core.algorithms.grpo import GRPOConfig
    from fgpo_core.configs import add_dataclass_args, dataclass_from_args
    from fgpo_core.experiments.run import config_differences

    ap = argparse.ArgumentParser()
    add_dataclass_args(ap, GRPOConfig)
    cfg = dataclass_from_args(GRPOConfig, ap.parse_args(["--G", "8", "--regularizer", "klr", "--weight", "0.1"]))
    assert cfg.G == cfg.settings.G == 8 and cfg.settings.regularizer == "klr" and cfg.settings.weight == 0.1
    ap = argparse.ArgumentParser()
    add_dataclass_args(ap, FGPOConfig)
    cfg = dataclass_from_args(FGPOConfig, ap.parse_args(["--method", "rloo-klu0.05", "--k", "4"]))
    assert cfg.method == "rloo-klu0.05" and cfg.settings.k == 4 and cfg.settings.G == 6
    root = Path(__file__).resolve().parents[1] / "runs" / "cpu" / "lm"
    fgpo = json.loads((root / "fgpo-lr1e-4" / "manifest.json").read_text())["config"]
    grpo = json.loads((root / "grpo" / "manifest.json").read_text())["config"]
    assert "beta" in fgpo and "G" in grpo  # the older records
    assert config_differences(FGPOConfig(lr=1e-4, epochs=2, eval_every=8), fgpo) == []
    assert config_differences(GRPOConfig(lr=3e-4, epochs=2, eval_every=8), grpo) == []
    assert config_differences(
        FGPOConfig(lr=1e-4, epochs=2, eval_every=8, settings=EstimatorSettings(weight=0.1)), fgpo
    ) == ["settings"]
    assert config_differences(GRPOConfig(lr=3e-4, epochs=2, eval_every=8, settings=EstimatorSettings(G=4)), grpo) == [
        "settings"
    ]
    assert FGPOConfig.from_record({**fgpo, "beta": 0.1}).settings.weight == 0.1
