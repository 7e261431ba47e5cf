"""The estimators of the policy-head study: each sampled one against the exact gradient in
expectation, and GRPO's advantages and loss against TRL's own computation."""

import types
from collections import defaultdict

import numpy as np
import pytest
import torch

from fgpo_core.core import estimators as est


@pytest.fixture
def problem():
    """A small fixed table: 5 questions, 8 actions, rewards in a few classes, a non-uniform policy."""
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(5, 8, generator=g, dtype=torch.float64)
    rewards = torch.tensor(np.random.default_rng(0).choice([-1.1, -0.9, 0.9, 1.1], size=(5, 8)), dtype=torch.float64)
    return scores, rewards


def mean_gradient(scores, rewards, draw, n=20000, seed=1):
    """The mean over ``n`` independent visits of the score gradient of a sampled loss ``draw``
    (a mean over its questions): the visits are stacked into one batch of ``n`` copies, whose
    loss is the mean of the visits' losses, so the summed slices of its gradient are their mean."""
    gen = torch.Generator().manual_seed(seed)
    B, A = scores.shape
    z = scores.repeat(n, 1).requires_grad_(True)
    loss = draw(z, rewards.repeat(n, 1), gen)
    (g,) = torch.autograd.grad(loss, z)
    return -g.view(n, B, A).sum(0)  # the losses are minimised: their negative gradient ascends J


def exact(scores, rewards):
    return est.fgpo_logit_gradient(scores, rewards) / len(scores)  # the loss is a mean over questions


def test_rloo_is_unbiased(problem):
    scores, rewards = problem

    def rloo(z, r, gen):
        draws = est.draw_groups(torch.softmax(z, -1).detach(), 4, gen)
        return est.policy_gradient_loss(z, draws, est.rloo_advantages(r.gather(1, draws)))

    g = mean_gradient(scores, rewards, rloo)
    torch.testing.assert_close(g, exact(scores, rewards), atol=0.01, rtol=0)


def test_mean_centred_group_gradient_is_the_exact_one_shrunk_by_one_minus_one_over_g(problem):
    """With advantages r_i - mean (no std), E[grad] = (1 - 1/G) dJ: the plumbing of
    policy_gradient_loss (draws, log q, the mean over B G) checked exactly in expectation."""
    scores, rewards = problem
    G = 3

    def centred(z, r, gen):
        draws = est.draw_groups(torch.softmax(z, -1).detach(), G, gen)
        g = r.gather(1, draws)
        return est.policy_gradient_loss(z, draws, g - g.mean(1, keepdim=True))

    g = mean_gradient(scores, rewards, centred)
    torch.testing.assert_close(g, (1 - 1 / G) * exact(scores, rewards), atol=0.01, rtol=0)


@pytest.mark.parametrize("name", ["grpo", "dapo", "k2", "k4"])
def test_biased_estimators_still_point_along_the_exact_gradient(problem, name):
    scores, rewards = problem
    A = scores.shape[1]

    def visit(z, r, gen):
        probs = torch.softmax(z, -1).detach()
        if name == "grpo":
            draws = est.draw_groups(probs, 6, gen)
            return est.policy_gradient_loss(z, draws, est.grpo_advantages(r.gather(1, draws), "trl"))
        if name == "dapo":  # dead groups dropped: the loss is the live ones' mean, weighted as a whole batch
            draws, live, _ = est.draw_live_groups(probs, r, 6, 4, gen)
            adv = est.grpo_advantages(r.gather(1, draws), "trl") * live[:, None]
            return est.policy_gradient_loss(z, draws, adv)
        k = int(name[1:])
        return est.fgpo_loss(z, r, beta=0.0, mask=est.coverage_mask(len(z), A, k, gen))

    g, e = mean_gradient(scores, rewards, visit, n=5000).flatten(), exact(scores, rewards).flatten()
    assert float(torch.nn.functional.cosine_similarity(g, e, dim=0)) > 0.8


def test_coverage_of_every_action_is_fgpo(problem):
    scores, rewards = problem
    mask = est.coverage_mask(5, 8, 8)
    assert mask.all()
    torch.testing.assert_close(est.fgpo_loss(scores, rewards, 0.03, mask), est.fgpo_loss(scores, rewards, 0.03))
    m2 = est.coverage_mask(5, 8, 2, torch.Generator().manual_seed(0))
    assert (m2.sum(1) == 2).all()
    with pytest.raises(ValueError):
        est.coverage_mask(5, 8, 9)


@pytest.mark.parametrize("k", [1, 3, 8, 16])
def test_coverage_hit_probability_matches_the_dial_by_monte_carlo(k):
    """1 - C(A-o, k)/C(A, k) against the dial's own draws, for questions with 0..16 best subsets."""
    best = np.zeros((17, 16), dtype=bool)
    for o in range(17):
        best[o, :o] = True
    closed = est.coverage_hit_probability(best, k)
    n = 4000
    hits = np.zeros(17)
    gen = torch.Generator().manual_seed(0)
    for _ in range(n // 500):
        mask = est.coverage_mask(17 * 500, 16, k, gen).reshape(500, 17, 16).numpy()
        hits += (mask & best[None]).any(-1).sum(0)
    mc = hits / n
    assert closed[0] == 0 and closed[16] == 1 and closed[1] == pytest.approx(k / 16)
    np.testing.assert_allclose(mc, closed, atol=4 * np.sqrt(0.25 / n))
    with pytest.raises(ValueError):
        est.coverage_hit_probability(best, 17)


def test_dynamic_sampling_redraws_dead_groups_and_counts_the_draws():
    probs = torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=torch.float64)
    rewards = torch.tensor([[0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    actions, live, draws = est.draw_live_groups(probs, rewards, 4, 5, torch.Generator().manual_seed(0))
    assert not live[1] and draws[1] == 5  # always the same action: dead after every draw, then dropped
    assert live[0] and 1 <= draws[0] <= 5 and len(set(actions[0].tolist())) == 2


def test_rloo_and_grpo_give_dead_groups_zero_advantage():
    r = torch.tensor([[0.3, 0.3, 0.3], [0.0, 1.0, 0.0]])
    for adv in (est.rloo_advantages(r), est.grpo_advantages(r, "trl")):
        assert (adv[0] == 0).all() and adv[1, 1] > 0 > adv[1, 0]
    torch.testing.assert_close(est.rloo_advantages(r)[1], torch.tensor([-0.5, 1.0, -0.5]))


def trl_compute_loss(per_token_logps, advantages):
    """TRL's own GRPOTrainer._compute_loss (loss_type "grpo", on policy, KL beta 0) on given
    log-probabilities, through a minimal stand-in for the trainer's state."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    B, T = per_token_logps.shape

    class Acc:
        sync_gradients = True

        def gather(self, x):
            return x

        def reduce(self, x, reduction="sum"):
            return x

        gather_for_metrics = gather

    fake = types.SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (per_token_logps, torch.zeros(B, T), None),
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level="token",
        beta=0.0,
        loss_type="grpo",
        epsilon_low=0.2,
        epsilon_high=0.2,
        args=types.SimpleNamespace(delta=None),
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        model=types.SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        accelerator=Acc(),
        _metrics=defaultdict(lambda: defaultdict(list)),
    )
    inputs = {
        "prompt_ids": torch.zeros(B, 1, dtype=torch.long),
        "prompt_mask": torch.ones(B, 1),
        "completion_ids": torch.zeros(B, T, dtype=torch.long),
        "completion_mask": torch.ones(B, T),
        "advantages": advantages,
    }
    return GRPOTrainer._compute_loss(fake, None, inputs)


def test_book_grpo_advantages_and_loss_equal_trls_computation():
    """On identical rewards: the advantages of grpo_advantages("trl") equal TRL's group scaling
    (its nanstd, eps 1e-4), and policy_gradient_loss has TRL's "grpo" loss value and gradient
    for one-token completions (a subset is one action for the head selector)."""
    from trl.trainer.utils import nanstd

    G = 6
    rewards = torch.tensor(np.random.default_rng(3).choice([-0.95, 0.05, 1.0], size=(4, G)), dtype=torch.float32)
    rewards[0] = 0.05  # one dead group
    mean = rewards.mean(1, keepdim=True).expand_as(rewards)
    std = nanstd(rewards, dim=1).unsqueeze(1).expand_as(rewards)
    trl_adv = ((rewards - mean) / (std + 1e-4)).reshape(-1)
    ours = est.grpo_advantages(rewards, "trl")
    torch.testing.assert_close(ours.reshape(-1), trl_adv)

    scores = torch.randn(4, 16, generator=torch.Generator().manual_seed(0), requires_grad=True)
    draws = torch.randint(0, 16, (4, G), generator=torch.Generator().manual_seed(1))
    logp = torch.log_softmax(scores, -1).gather(1, draws).reshape(-1, 1)  # [B G, T=1]
    trl_loss = trl_compute_loss(logp, trl_adv)
    (trl_grad,) = torch.autograd.grad(trl_loss, scores)
    our_loss = est.policy_gradient_loss(scores, draws, ours)
    (our_grad,) = torch.autograd.grad(our_loss, scores)
    torch.testing.assert_close(our_grad, trl_grad)
    # the surrogates differ by a constant: on policy TRL's ratio is exp(logp - logp.detach()) = 1
    torch.testing.assert_close(trl_loss, -trl_adv.mean())


def _scipy_kl(p, q):
    from scipy.stats import entropy as kl

    return np.array([kl(a, b) for a, b in zip(p, q)])


@pytest.mark.parametrize("masked", [False, True])
def test_each_regularizer_is_its_divergence_computed_independently(problem, masked):
    """none, -H(q), KL(q || uniform) and KL(q || q_ref) per question, against scipy on numpy
    copies; with a mask, q (and the reference) renormalised over the kept actions."""
    from fgpo_core.core.regularizers import REGULARIZERS, regularizer

    scores, _ = problem
    B, A = scores.shape
    g = torch.Generator().manual_seed(3)
    ref_scores = torch.randn(B, A, generator=g, dtype=torch.float64)
    mask = torch.rand(B, A, generator=g) < 0.6 if masked else torch.ones(B, A, dtype=torch.bool)
    mask[:, 0] = True
    m = mask.numpy()
    z, rz = scores.numpy(), ref_scores.numpy()
    q = np.where(m, np.exp(z), 0.0)
    q /= q.sum(1, keepdims=True)
    ref = np.where(m, np.exp(rz), 0.0)
    ref /= ref.sum(1, keepdims=True)
    uniform = m / m.sum(1, keepdims=True)
    expect = {
        "none": np.zeros(B),
        "ent": -np.array([-(r[r > 0] * np.log(r[r > 0])).sum() for r in q]),
        "klu": _scipy_kl(q, uniform),
        "klr": _scipy_kl(q, ref),
    }
    assert set(expect) == set(REGULARIZERS)
    ref_logq = torch.log_softmax(ref_scores, -1)
    for name, want in expect.items():
        got = regularizer(name)(scores, mask if masked else None, ref_logq).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)
    with pytest.raises(ValueError, match="reference"):
        regularizer("klr")(scores)
    with pytest.raises(ValueError, match="unknown regularizer"):
        regularizer("l2")


def test_the_exact_objective_with_a_regularizer_has_the_gradient_of_its_value(problem):
    """exact_objective with KL to uniform: autograd of the folded objective against central
    differences, and FGPO's objective is exact_objective with the entropy penalty, bit for bit."""
    from fgpo_core.core.regularizers import kl_uniform, negative_entropy

    scores, rewards = problem
    z = scores.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad(est.exact_objective(z, rewards, None, kl_uniform, 0.2).sum(), z)
    h, fd = 1e-6, torch.zeros_like(scores)
    for i in range(scores.shape[1]):
        e = torch.zeros_like(scores)
        e[:, i] = h
        fd[:, i] = (
            est.exact_objective(scores + e, rewards, None, kl_uniform, 0.2)
            - est.exact_objective(scores - e, rewards, None, kl_uniform, 0.2)
        ) / (2 * h)
    torch.testing.assert_close(auto, fd, atol=1e-7, rtol=1e-6)
    assert torch.equal(
        est.fgpo_objective(scores, rewards, 0.03), est.exact_objective(scores, rewards, None, negative_entropy, 0.03)
    )


def _clipped_setup(seed=0, B=6, A=8, G=5, step=2.0):
    """Scores, a draw from them (actions, their old log-probabilities, advantages) and scores
    after one large update, so some ratios leave [1 - eps, 1 + eps]."""
    g = torch.Generator().manual_seed(seed)
    old_scores = torch.randn(B, A, generator=g, dtype=torch.float64)
    actions = est.draw_groups(torch.softmax(old_scores, -1), G, g)
    r = torch.rand(B, A, generator=g, dtype=torch.float64).round()
    adv = est.grpo_advantages(r.gather(1, actions), "trl")
    old = torch.log_softmax(old_scores, -1).gather(1, actions)
    new_scores = old_scores + step * torch.randn(B, A, generator=g, dtype=torch.float64)
    return old_scores, new_scores, actions, old, adv


def test_the_clipped_ratio_stops_the_samples_that_left_the_trust_region():
    """After an update the ratio is no longer 1: GRPO-clip's gradient differs from plain GRPO's,
    is zero for every sample whose ratio left [1 - eps, 1 + eps] in its advantage's direction, and
    is ``A_i rho_i d log q(a_i)`` / (B G) for the others (brute force, per sample)."""
    eps = 0.2
    old_scores, new_scores, actions, old, adv = _clipped_setup()
    B, G = actions.shape
    z = new_scores.clone().requires_grad_(True)
    logp = torch.log_softmax(z, -1).gather(1, actions)
    (clipped,) = torch.autograd.grad(est.clipped_policy_loss(logp, old, adv, eps), z)
    (plain,) = torch.autograd.grad(est.policy_gradient_loss(z, actions, adv), z)
    rho = torch.exp(logp.detach() - old)
    stopped = ((adv > 0) & (rho > 1 + eps)) | ((adv < 0) & (rho < 1 - eps))
    assert stopped.any() and (~stopped & (adv != 0)).any()  # both cases occur
    brute = torch.zeros_like(new_scores)
    q = torch.softmax(new_scores, -1)
    for b in range(B):
        for i in range(G):
            if stopped[b, i]:
                continue
            dlogq = -q[b].clone()
            dlogq[actions[b, i]] += 1.0  # d log q(a) / d scores
            brute[b] -= adv[b, i] * rho[b, i] * dlogq / (B * G)
    torch.testing.assert_close(clipped, brute, atol=1e-12, rtol=1e-10)
    assert (clipped - plain).abs().max() > 1e-3
    # on policy (the first update on a draw) the clipped gradient is GRPO's
    z0 = old_scores.clone().requires_grad_(True)
    logp0 = torch.log_softmax(z0, -1).gather(1, actions)
    (c0,) = torch.autograd.grad(est.clipped_policy_loss(logp0, old, adv, eps), z0)
    (p0,) = torch.autograd.grad(est.policy_gradient_loss(z0, actions, adv), z0)
    torch.testing.assert_close(c0, p0, atol=0, rtol=0)


def test_gspo_ratio_is_the_length_normalised_sequence_ratio():
    """With token lengths, each sample's ratio is exp((log q - log q_old) / |y|), clipped per
    sequence: the loss against a brute-force sum, and lengths of 1 give GRPO-clip's loss."""
    eps = 0.1
    _, new_scores, actions, old, adv = _clipped_setup(seed=1, step=0.5)
    lengths = torch.randint(1, 9, actions.shape, generator=torch.Generator().manual_seed(2)).double()
    logp = torch.log_softmax(new_scores, -1).gather(1, actions)
    got = est.clipped_policy_loss(logp, old, adv, eps, lengths)
    total = 0.0
    for b in range(actions.shape[0]):
        for i in range(actions.shape[1]):
            s = float(np.exp(float(logp[b, i] - old[b, i]) / float(lengths[b, i])))
            a = float(adv[b, i])
            total += min(s * a, min(max(s, 1 - eps), 1 + eps) * a)
    assert float(got) == pytest.approx(-total / actions.numel(), rel=1e-12)
    assert torch.equal(
        est.clipped_policy_loss(logp, old, adv, eps, torch.ones_like(lengths)),
        est.clipped_policy_loss(logp, old, adv, eps),
    )
    assert abs(float(got) - float(est.clipped_policy_loss(logp, old, adv, eps))) > 1e-4
