"""The two estimators the book compares, on logits over the ``2**n`` subsets.

FGPO (Eq. 2, 4, 5) optimises the exact expectation over every action::

    J_beta(s) = sum_a q(a|s) r(s, a) + beta * H(q(.|s)),   q = softmax(l(.|s))
    loss      = -(1/|B|) sum_{s in B} J_beta(s)

whose logit gradient (Eq. 8) is ``dJ_s/dl_a = q_a (r_a - J_s)`` (plus
``-beta * q_a (log q_a + H)`` from the entropy bonus): every action whose
reward differs from the current expectation moves.

GRPO (Eq. 3) samples ``G`` actions and weights their log-probabilities by
group-normalised advantages ``A_i = (r_i - mean) / (std + eps)``; a group whose
rewards are all equal has ``A = 0`` and contributes nothing.

Functions take torch tensors and keep the autograd graph.
"""
from __future__ import annotations

from typing import Literal

import torch

__all__ = [
    "BETA",
    "shared_token_weight",
    "candidate_distribution",
    "entropy",
    "fgpo_objective",
    "fgpo_loss",
    "fgpo_logit_gradient",
    "grpo_advantages",
    "grpo_loss",
    "dead_groups",
]

BETA = 0.03
"""The paper's entropy-bonus weight beta."""


def _check_logits_rewards(logits: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor | None):
    if not isinstance(logits, torch.Tensor):
        raise TypeError("logits must be a torch.Tensor")
    rewards = torch.as_tensor(rewards, dtype=logits.dtype, device=logits.device)
    if logits.ndim < 1 or logits.shape != rewards.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and rewards {tuple(rewards.shape)} must share shape [..., A]")
    if mask is not None:
        mask = torch.as_tensor(mask, dtype=torch.bool, device=logits.device)
        if mask.shape != logits.shape:
            raise ValueError(f"mask {tuple(mask.shape)} must match logits {tuple(logits.shape)}")
        if not mask.any(-1).all():
            raise ValueError("every row of mask must keep at least one action")
    return rewards, mask


def candidate_distribution(logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """q = softmax of the candidate scores over the last axis (Eq. 4).

    With ``mask`` (True = evaluated), q is renormalised over the kept actions
    and is exactly zero elsewhere: the budgeted k-subset variant.
    """
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    return torch.softmax(logits, dim=-1)


def entropy(q: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) over the last axis; zero-mass actions contribute 0."""
    return -torch.special.xlogy(q, q).sum(-1)


def fgpo_objective(logits: torch.Tensor, rewards: torch.Tensor, beta: float = BETA,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-question exact objective ``J_beta(s) = sum_a q r + beta H(q)`` (Eq. 2, 5).

    ``logits`` and ``rewards`` are ``[..., A]``; returns ``[...]``.
    """
    rewards, mask = _check_logits_rewards(logits, rewards, mask)
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    logq = torch.log_softmax(logits, dim=-1)
    q = logq.exp()
    if mask is not None:  # excluded actions have q = 0 and add nothing (and no NaN gradient)
        logq = logq.masked_fill(~mask, 0.0)
    return (q * rewards).sum(-1) - beta * (q * logq).sum(-1)


def fgpo_loss(logits: torch.Tensor, rewards: torch.Tensor, beta: float = BETA,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    """FGPO minibatch loss: ``-(1/|B|) sum_s [sum_a q(a|s) r(s,a) + beta H(q(.|s))]``.

    ``logits`` are the candidate scores ``l(a|s)`` of every subset, ``[B, A]``;
    ``rewards`` the reward-table rows ``r(s, .)``. The sum over actions is
    exact; only questions are minibatched. ``mask`` restricts the sum to the
    evaluated actions (the coverage dial: ``k`` of ``2**n``).
    """
    return -fgpo_objective(logits, rewards, beta, mask).mean()


def fgpo_logit_gradient(logits: torch.Tensor, rewards: torch.Tensor, beta: float = 0.0) -> torch.Tensor:
    """Closed-form gradient of ``J_beta(s)`` with respect to the logits (Eq. 8).

    ``dJ/dl_a = q_a (r_a - J_s) - beta * q_a (log q_a + H(q))`` with
    ``J_s = sum_b q_b r_b``. Used to check autograd and to study estimators.
    """
    rewards, _ = _check_logits_rewards(logits, rewards, None)
    q = torch.softmax(logits, dim=-1)
    J = (q * rewards).sum(-1, keepdim=True)
    grad = q * (rewards - J)
    if beta:
        logq = torch.log_softmax(logits, dim=-1)
        H = -(q * logq).sum(-1, keepdim=True)
        grad = grad - beta * q * (logq + H)
    return grad


def shared_token_weight(logits: torch.Tensor, rewards: torch.Tensor, lengths, beta: float = 0.0) -> torch.Tensor:
    """How hard the exact objective pushes on a token that every candidate string contains.

    With per-token mean scores (Eq. 4), ``l_a = (1/|y_a|) sum_t log pi(y_a,t)``, a log-probability
    shared by every candidate (the closing ``</answer>`` and the end-of-turn token) enters each
    ``l_a`` with weight ``1/|y_a|``, so by Eq. 8 ``dJ_beta/d log pi_shared = sum_a g_a / |y_a|``
    with ``g_a = dJ_beta/dl_a``. The ``g_a`` sum to zero; when the strings that gain (``g_a > 0``)
    are longer than those that lose, the sum is negative and FGPO lowers the probability of
    closing the answer. Returns one weight per question (``[...]`` of ``logits[..., 0]``).
    """
    lengths = torch.as_tensor(lengths, dtype=logits.dtype)
    if lengths.shape[-1] != logits.shape[-1] or bool((lengths <= 0).any()):
        raise ValueError("give one positive length per candidate")
    return (fgpo_logit_gradient(logits, rewards, beta) / lengths).sum(-1)


def dead_groups(rewards: torch.Tensor, atol: float = 1e-8) -> torch.Tensor:
    """Boolean ``[B]``: True where all ``G`` rewards of a group agree within ``atol``."""
    rewards = torch.as_tensor(rewards)
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be [B, G], got {tuple(rewards.shape)}")
    return (rewards.max(-1).values - rewards.min(-1).values) <= atol


def grpo_advantages(rewards: torch.Tensor, variant: Literal["paper", "trl"] = "paper",
                    eps: float | None = None) -> torch.Tensor:
    """Group-normalised advantages of Eq. 3, ``A_i = (r_i - mean) / (std + eps)``.

    ``rewards`` is ``[B, G]`` (``B`` groups of ``G`` rollouts).

    * ``variant="paper"``: population standard deviation, ``eps = 1e-6``.
    * ``variant="trl"``: Bessel-corrected standard deviation and ``eps = 1e-4``,
      as TRL's GRPOTrainer computes them.

    A dead group (all rewards equal) gets exactly zero advantages in both.
    """
    rewards = torch.as_tensor(rewards, dtype=torch.get_default_dtype() if not torch.is_tensor(rewards)
                              else rewards.dtype)
    if rewards.ndim != 2 or rewards.shape[-1] < 2:
        raise ValueError(f"rewards must be [B, G] with G >= 2, got {tuple(rewards.shape)}")
    if variant not in ("paper", "trl"):
        raise ValueError(f"variant must be 'paper' or 'trl', got {variant!r}")
    if eps is None:
        eps = 1e-6 if variant == "paper" else 1e-4
    mean = rewards.mean(-1, keepdim=True)
    std = rewards.std(-1, keepdim=True, correction=0 if variant == "paper" else 1)
    adv = (rewards - mean) / (std + eps)
    return adv.masked_fill(dead_groups(rewards)[:, None], 0.0)


def grpo_loss(logprobs: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """Policy-gradient surrogate of Eq. 3 for one on-policy step:
    ``-(1/(B G)) sum_{s,i} A_i log p(a_i|s)`` with ``logprobs`` and
    ``advantages`` shaped ``[B, G]`` (sequence log-probabilities of the sampled
    completions; the ratio is 1 and the clip inactive on policy)."""
    if logprobs.shape != advantages.shape:
        raise ValueError(f"logprobs {tuple(logprobs.shape)} and advantages {tuple(advantages.shape)} differ")
    return -(advantages.detach() * logprobs).mean()
