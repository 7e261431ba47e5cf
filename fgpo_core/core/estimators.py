"""The estimators the book compares, as functions of candidate scores, rewards and drawn actions.

Every selector gives, for each question ``s``, one candidate score ``l(a|s)`` per subset (the
logits of ``q = softmax(l)``; Eq. 4 for the LM selector, a head's outputs for the policy-head
selector, free parameters for the tabular one). Nothing here knows which selector produced them.

**Exact (FGPO, Eq. 2, 4, 5)** optimises the expectation over every action::

    J_beta(s) = sum_a q(a|s) r(s, a) + beta * H(q(.|s))
    loss      = -(1/|B|) sum_{s in B} J_beta(s)

whose score gradient (Eq. 8) is ``dJ_s/dl_a = q_a (r_a - J_s)`` (plus ``-beta q_a (log q_a + H)``
from the entropy bonus): every action whose reward differs from the current expectation moves.

**The coverage dial** evaluates only ``k`` uniformly drawn actions per visit and renormalises
q on them (:func:`coverage_mask`, then the exact loss with that mask); ``k = 2**n`` is FGPO.
How often a visit's ``k`` subsets include one of the question's best subsets is
:func:`coverage_hit_probability`.

**Group-sampled (GRPO, Eq. 3; RLOO; DAPO's dynamic sampling)** draw ``G`` actions from the
policy and weight their log-probabilities by advantages: group-normalised for GRPO
(:func:`grpo_advantages`), leave-one-out for RLOO (:func:`rloo_advantages`). A group whose
rewards are all equal (dead, :func:`dead_group_mask`) has zero advantages; dynamic sampling
(:func:`draw_live_groups`) draws such groups again, paying for every extra draw.

**Several updates per draw (PPO's clip, GSPO)**: after the first optimiser step on a draw the
policy has moved, and :func:`clipped_policy_loss` weights each drawn action by its importance
ratio to the drawing policy, clipped to ``[1 - eps, 1 + eps]`` (per action, GRPO-clip; per
length-normalised sequence, GSPO). On the first update the ratio is 1 and its gradient is
:func:`policy_gradient_loss`'s.

**Regularizers** (:mod:`fgpo_core.core.regularizers`) fold into the exact objective per question
(:func:`exact_objective`); FGPO's is the entropy bonus (:func:`fgpo_objective`).

Functions take torch tensors and keep the autograd graph.
"""

from __future__ import annotations

from typing import Literal

import torch

from .regularizers import log_policy, negative_entropy
from .settings import PAPER_BETA

__all__ = [
    "BETA",
    "coverage_hit_probability",
    "entropy",
    "exact_objective",
    "fgpo_objective",
    "fgpo_loss",
    "fgpo_logit_gradient",
    "shared_token_weight",
    "coverage_mask",
    "draw_groups",
    "draw_live_groups",
    "dead_group_mask",
    "grpo_advantages",
    "rloo_advantages",
    "grpo_loss",
    "policy_gradient_loss",
    "clipped_policy_loss",
]

BETA = PAPER_BETA
"""The paper's entropy-bonus weight beta (0.03)."""


def _check_scores_rewards(scores: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor | None):
    if not isinstance(scores, torch.Tensor):
        raise TypeError("scores must be a torch.Tensor")
    rewards = torch.as_tensor(rewards, dtype=scores.dtype, device=scores.device)
    if scores.ndim < 1 or scores.shape != rewards.shape:
        raise ValueError(f"scores {tuple(scores.shape)} and rewards {tuple(rewards.shape)} must share shape [..., A]")
    if mask is not None:
        mask = torch.as_tensor(mask, dtype=torch.bool, device=scores.device)
        if mask.shape != scores.shape:
            raise ValueError(f"mask {tuple(mask.shape)} must match scores {tuple(scores.shape)}")
        if not mask.any(-1).all():
            raise ValueError("every row of mask must keep at least one action")
    return rewards, mask


def entropy(q: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) of distributions over the last axis; zero-mass actions add 0."""
    return -torch.special.xlogy(q, q).sum(-1)


def exact_objective(
    scores: torch.Tensor,
    rewards: torch.Tensor,
    mask: torch.Tensor | None = None,
    penalty=None,
    weight: float = 0.0,
    reference: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-question exact objective with any regularizer, ``J_w(s) = sum_a q r - w R(s)`` (Eq. 2;
    Eq. 5 with ``R = -H``), ``[...]`` of ``scores`` ``[..., A]``.

    ``penalty(q, logq, mask, reference) -> [...]`` is a regularizer's penalty
    (:mod:`fgpo_core.core.regularizers`; None: none), folded in per question before any mean.
    With ``mask`` (True = evaluated) q is renormalised over the kept actions and is exactly zero
    elsewhere: the coverage dial and the shortlists.
    """
    rewards, mask = _check_scores_rewards(scores, rewards, mask)
    q, logq = log_policy(scores, mask)
    J = (q * rewards).sum(-1)
    if penalty is not None:
        J = J - weight * penalty(q, logq, mask, reference)
    return J


def fgpo_objective(
    scores: torch.Tensor, rewards: torch.Tensor, beta: float = BETA, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-question exact objective ``J_beta(s) = sum_a q r + beta H(q)`` (Eq. 2, 5).

    ``scores`` (candidate scores) and ``rewards`` are ``[..., A]``; returns ``[...]``. With
    ``mask`` (True = evaluated) q is renormalised over the kept actions and is exactly zero
    elsewhere: the coverage dial. (:func:`exact_objective` with the entropy bonus.)
    """
    return exact_objective(scores, rewards, mask, negative_entropy, beta)


def fgpo_loss(
    scores: torch.Tensor, rewards: torch.Tensor, beta: float = BETA, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """FGPO minibatch loss: ``-(1/|B|) sum_s [sum_a q(a|s) r(s,a) + beta H(q(.|s))]`` (Eq. 2, 5).

    ``scores`` are the candidate scores ``l(a|s)`` of every subset, ``[B, A]``; ``rewards`` the
    reward-table rows ``r(s, .)``. The sum over actions is exact; only questions are
    minibatched. ``mask`` restricts the sum to the evaluated actions (the coverage dial).
    """
    return -fgpo_objective(scores, rewards, beta, mask).mean()


def fgpo_logit_gradient(scores: torch.Tensor, rewards: torch.Tensor, beta: float = 0.0) -> torch.Tensor:
    """Closed-form gradient of ``J_beta(s)`` with respect to the candidate scores (Eq. 8).

    ``dJ/dl_a = q_a (r_a - J_s) - beta * q_a (log q_a + H(q))`` with ``J_s = sum_b q_b r_b``.
    Used to check autograd and to study estimators.
    """
    rewards, _ = _check_scores_rewards(scores, rewards, None)
    q = torch.softmax(scores, dim=-1)
    J = (q * rewards).sum(-1, keepdim=True)
    grad = q * (rewards - J)
    if beta:
        logq = torch.log_softmax(scores, dim=-1)
        grad = grad - beta * q * (logq + entropy(q)[..., None])
    return grad


def shared_token_weight(scores: torch.Tensor, rewards: torch.Tensor, lengths, beta: float = 0.0) -> torch.Tensor:
    """How hard the exact objective pushes on a token that every candidate string contains.

    With per-token mean scores (Eq. 4), ``l_a = (1/|y_a|) sum_t log pi(y_a,t)``, a log-probability
    shared by every candidate (the closing ``</answer>`` and the end-of-turn token) enters each
    ``l_a`` with weight ``1/|y_a|``, so by Eq. 8 ``dJ_beta/d log pi_shared = sum_a g_a / |y_a|``
    with ``g_a = dJ_beta/dl_a``. The ``g_a`` sum to zero; when the strings that gain (``g_a > 0``)
    are longer than those that lose, the sum is negative and FGPO lowers the probability of
    closing the answer. Returns one weight per question (``[...]`` of ``scores[..., 0]``).
    """
    lengths = torch.as_tensor(lengths, dtype=scores.dtype)
    if lengths.shape[-1] != scores.shape[-1] or bool((lengths <= 0).any()):
        raise ValueError("give one positive length per candidate")
    return (fgpo_logit_gradient(scores, rewards, beta) / lengths).sum(-1)


def coverage_mask(n_questions: int, n_actions: int, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The coverage dial's draw: per question ``k`` of the ``n_actions`` actions, uniformly without
    replacement; boolean ``[n_questions, n_actions]`` (True = evaluated). ``k = n_actions`` keeps all."""
    if not 1 <= k <= n_actions:
        raise ValueError(f"k must lie in 1..{n_actions}, got {k}")
    keep = torch.rand(n_questions, n_actions, generator=generator).argsort(1)[:, :k]
    return torch.zeros(n_questions, n_actions, dtype=torch.bool).scatter_(1, keep, True)


def coverage_hit_probability(best, k: int):
    """The probability that ``k`` actions drawn uniformly without replacement (the coverage dial)
    include at least one of a question's best actions: ``1 - C(A - o, k) / C(A, k)`` for ``o``
    best actions out of ``A``. ``best``: boolean ``[..., A]``; returns ``[...]`` (numpy)."""
    import numpy as np
    from scipy.special import comb

    best = np.asarray(best, dtype=bool)
    A = best.shape[-1]
    if not 1 <= k <= A:
        raise ValueError(f"k must lie in 1..{A}, got {k}")
    o = best.sum(-1)
    return 1.0 - comb(A - o, k) / comb(A, k)


def draw_groups(probs: torch.Tensor, G: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``G`` i.i.d. actions per row of ``probs`` ``[B, A]`` (with replacement): ``[B, G]``."""
    if G < 1:
        raise ValueError(f"G must be >= 1, got {G}")
    return torch.multinomial(probs, G, replacement=True, generator=generator)


def dead_group_mask(group_rewards: torch.Tensor, atol: float = 1e-8) -> torch.Tensor:
    """Boolean ``[B]``: True where all ``G`` rewards of a group agree within ``atol`` (a dead group)."""
    group_rewards = torch.as_tensor(group_rewards)
    if group_rewards.ndim != 2:
        raise ValueError(f"group rewards must be [B, G], got {tuple(group_rewards.shape)}")
    return (group_rewards.max(-1).values - group_rewards.min(-1).values) <= atol


def draw_live_groups(
    probs: torch.Tensor, rewards: torch.Tensor, G: int, max_draws: int = 4, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DAPO's dynamic sampling: draw a group of ``G`` actions per question, and draw again for
    the questions whose group is dead, up to ``max_draws`` groups in all.

    ``rewards`` ``[B, A]`` are the reward-table rows. Returns the kept groups' actions ``[B, G]``
    (the last draw for a question that never came alive), ``live`` ``[B]`` (False: still dead,
    to be dropped from the batch) and ``draws`` ``[B]``, the groups drawn per question; each
    costs ``G`` reward evaluations.
    """
    if max_draws < 1:
        raise ValueError(f"max_draws must be >= 1, got {max_draws}")
    rewards = torch.as_tensor(rewards, dtype=probs.dtype)
    actions = draw_groups(probs, G, generator)
    live = ~dead_group_mask(rewards.gather(1, actions))
    draws = torch.ones(len(probs), dtype=torch.long)
    for _ in range(max_draws - 1):
        todo = (~live).nonzero()[:, 0]
        if len(todo) == 0:
            break
        again = draw_groups(probs[todo], G, generator)
        actions[todo] = again
        draws[todo] += 1
        live[todo] = ~dead_group_mask(rewards[todo].gather(1, again))
    return actions, live, draws


def grpo_advantages(
    group_rewards: torch.Tensor, variant: Literal["paper", "trl"] = "paper", eps: float | None = None
) -> torch.Tensor:
    """Group-normalised advantages of Eq. 3, ``A_i = (r_i - mean) / (std + eps)``.

    ``group_rewards`` is ``[B, G]`` (``B`` groups of ``G`` rollouts).

    * ``variant="paper"``: population standard deviation, ``eps = 1e-6``.
    * ``variant="trl"``: Bessel-corrected standard deviation and ``eps = 1e-4``,
      as TRL's GRPOTrainer computes them (``scale_rewards="group"``).

    A dead group (all rewards equal) gets exactly zero advantages in both.
    """
    r = torch.as_tensor(
        group_rewards, dtype=torch.get_default_dtype() if not torch.is_tensor(group_rewards) else group_rewards.dtype
    )
    if r.ndim != 2 or r.shape[-1] < 2:
        raise ValueError(f"group rewards must be [B, G] with G >= 2, got {tuple(r.shape)}")
    if variant not in ("paper", "trl"):
        raise ValueError(f"variant must be 'paper' or 'trl', got {variant!r}")
    if eps is None:
        eps = 1e-6 if variant == "paper" else 1e-4
    mean = r.mean(-1, keepdim=True)
    std = r.std(-1, keepdim=True, correction=0 if variant == "paper" else 1)
    adv = (r - mean) / (std + eps)
    return adv.masked_fill(dead_group_mask(r)[:, None], 0.0)


def rloo_advantages(group_rewards: torch.Tensor) -> torch.Tensor:
    """REINFORCE leave-one-out advantages ``A_i = r_i - mean_{j != i} r_j`` ``[B, G]``: each
    rollout's baseline is the mean of the others, so the estimator is unbiased (up to the
    factor ``(G - 1) / G``); a dead group's advantages are exactly zero."""
    r = torch.as_tensor(group_rewards)
    if r.ndim != 2 or r.shape[-1] < 2:
        raise ValueError(f"group rewards must be [B, G] with G >= 2, got {tuple(r.shape)}")
    G = r.shape[-1]
    return (r - (r.sum(-1, keepdim=True) - r) / (G - 1)).masked_fill(dead_group_mask(r)[:, None], 0.0)


def grpo_loss(logprobs: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """Policy-gradient surrogate of Eq. 3 for one on-policy step:
    ``-(1/(B G)) sum_{s,i} A_i log p(a_i|s)`` with ``logprobs`` and ``advantages`` shaped
    ``[B, G]`` (sequence log-probabilities of the sampled completions; the ratio is 1 and the
    clip inactive on policy)."""
    if logprobs.shape != advantages.shape:
        raise ValueError(f"logprobs {tuple(logprobs.shape)} and advantages {tuple(advantages.shape)} differ")
    return -(advantages.detach() * logprobs).mean()


def policy_gradient_loss(scores: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """:func:`grpo_loss` for a selector whose sampling distribution is ``q = softmax(scores)``
    (``scores`` ``[B, A]``, drawn ``actions`` and their ``advantages`` ``[B, G]``): the surrogate
    whose gradient is ``(1/(B G)) sum A_i d log q(a_i)``, GRPO's and RLOO's alike."""
    return grpo_loss(torch.log_softmax(scores, -1).gather(-1, actions), advantages)


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip: float = 0.2,
    lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """PPO's clipped surrogate, as GRPO (Eq. 3) and TRL's ``GRPOTrainer`` apply it per token:
    ``-(1/(B G)) sum_{s,i} min(rho_i A_i, clip(rho_i, 1 - eps, 1 + eps) A_i)`` with the importance
    ratio ``rho_i = exp(log p(a_i) - log p_old(a_i))`` of the drawn actions ``[B, G]`` under the
    current and the drawing policy. On policy (the first update on a draw) ``rho = 1`` and the
    gradient is :func:`grpo_loss`'s; after an update, a sample whose ratio has left
    ``[1 - eps, 1 + eps]`` in the direction of its advantage stops pushing.

    ``lengths`` ``[B, G]`` makes it GSPO's sequence-level ratio, ``rho_i = exp((log p(y_i) -
    log p_old(y_i)) / |y_i|)`` (the length-normalised sequence likelihood ratio), clipped per sequence.
    """
    if logp.shape != old_logp.shape or logp.shape != advantages.shape:
        raise ValueError(
            f"logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)} and advantages "
            f"{tuple(advantages.shape)} must share shape [B, G]"
        )
    if not clip > 0:
        raise ValueError(f"the clip range must be positive, got {clip}")
    log_ratio = logp - old_logp.detach()
    if lengths is not None:
        log_ratio = log_ratio / lengths
    ratio = torch.exp(log_ratio)
    adv = advantages.detach()
    return -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()
