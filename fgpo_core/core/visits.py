"""What a visit draws and the losses computed from a draw: the functions the estimators of
:mod:`fgpo_core.core.registry` are made of, sampling apart from the loss.

* ``draw(scores, rewards, gen, ctx) -> Draw``: what a visit samples and pays for (the drawn actions
  and their log-probabilities under the drawing policy, a budgeted mask, group rewards,
  advantages, the (question, subset) pairs read, telemetry in percent, reward evaluations);
* ``loss(scores, rewards, draw, ctx, penalty) -> scalar``: the estimator's loss of the *current*
  scores on that draw (a ratio to the drawing policy moves off 1 after the first update).

:class:`VisitContext` is what a visit may read besides its scores and rewards; :class:`Draw`, what
it sampled. The registry re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from .estimators import (
    clipped_policy_loss,
    coverage_mask,
    dead_group_mask,
    draw_groups,
    draw_live_groups,
    exact_objective,
    policy_gradient_loss,
)
from .settings import EstimatorSettings

__all__ = [
    "Draw",
    "VisitContext",
    "exact_draw",
    "shortlist_draw",
    "group_draw",
    "imitation_draw",
    "exact_loss",
    "pg_loss",
    "clipped_loss",
    "gspo_loss",
    "sft_loss",
    "dpo_loss",
]


@dataclass
class VisitContext:
    """What a visit may read besides its scores and rewards, for the minibatch's questions."""

    idx: torch.Tensor
    """The questions of the minibatch (rows of the table)."""
    optimal: torch.Tensor
    """``[B, A]`` bool: each question's Eq. 1-optimal subsets (ties kept), for ``best_seen``."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What the estimator and its regularizer read (G, k, clip, updates, ...)."""
    candidates: torch.Tensor | None = None
    """``[B, A]`` bool: a shortlist's candidate subsets for the minibatch."""
    targets: torch.Tensor | None = None
    """``[N]``: each question's reward-optimal subset (SFT), indexed by ``idx``."""
    pairs: dict = field(default_factory=dict)
    """``{question: (chosen, rejected)}`` of DPO over the whole table."""
    reference: torch.Tensor | None = None
    """``[B, A]``: the reference policy's log-probabilities (the ``klr`` regularizer)."""
    lengths: torch.Tensor | None = None
    """``[B, A]`` or ``[A]``: each candidate's token length (GSPO's ratio; None: 1 per action)."""


@dataclass
class Draw:
    """What one visit sampled and paid for, apart from any loss."""

    paid: torch.Tensor
    """``[B, A]`` bool: the (question, subset) pairs whose reward the visit read."""
    telemetry: dict
    """Percentages: ``best_seen``, ``dead_observed``, ``dropped`` where the estimator has them."""
    n_reward: int
    """Reward evaluations the visit used (every draw counted, repeats included)."""
    actions: torch.Tensor | None = None
    """``[B, G]``: the drawn actions of a sampled estimator."""
    old_logp: torch.Tensor | None = None
    """``[B, G]``: their log-probabilities under the drawing policy (detached)."""
    mask: torch.Tensor | None = None
    """``[B, A]`` bool: a budgeted estimator's evaluated subsets (None: all of them)."""
    group_rewards: torch.Tensor | None = None
    """``[B, G]``: the drawn actions' rewards."""
    advantages: torch.Tensor | None = None
    """``[B, G]``: their advantages."""
    live: torch.Tensor | None = None
    """``[B]`` bool: dynamic sampling's groups kept (the others are dropped from the loss)."""


def _rows(ctx: VisitContext, A: int) -> torch.Tensor:
    return torch.ones(len(ctx.idx), A, dtype=torch.bool)


def _best_seen(ctx: VisitContext, mask: torch.Tensor | None) -> float:
    return 100.0 if mask is None else 100.0 * float((mask & ctx.optimal).any(1).double().mean())


def exact_draw(scores, rewards, gen, ctx) -> Draw:
    """Every subset's reward, or the coverage dial's ``k`` uniform subsets per question (``settings.k``)."""
    A, k = scores.shape[-1], ctx.settings.k
    mask = None if k is None or k == A else coverage_mask(len(ctx.idx), A, k, gen)
    return Draw(
        _rows(ctx, A) if mask is None else mask,
        {"best_seen": _best_seen(ctx, mask)},
        len(ctx.idx) * (A if mask is None else k),
        mask=mask,
    )


def shortlist_draw(scores, rewards, gen, ctx) -> Draw:
    """The shortlist's candidates (``ctx.candidates``, rebuilt by the loop every epoch)."""
    mask = ctx.candidates
    return Draw(mask, {"best_seen": _best_seen(ctx, mask)}, len(ctx.idx) * ctx.settings.k, mask=mask)


def exact_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """``-(1/|B|) sum_s [sum_a q r - w R(s)]`` over the draw's mask (Eq. 2, 5; the regularizer folded in)."""
    reg, w = penalty
    return -exact_objective(scores, rewards, draw.mask, reg.penalty, w, ctx.reference).mean()


def _sample(scores, rewards, gen, ctx, dynamic=False):
    with torch.no_grad():
        probs = torch.softmax(scores, -1)
    st = ctx.settings
    if dynamic:
        draws, live, n_draws = draw_live_groups(probs, rewards, st.G, st.max_draws, gen)
        n = int(n_draws.sum()) * st.G
    else:
        draws, live = draw_groups(probs, st.G, gen), None
        n = draws.numel()
    group_r = rewards.gather(1, draws)
    paid = torch.zeros(scores.shape, dtype=torch.bool).scatter_(1, draws, True)
    tele = {
        "best_seen": 100.0 * float(ctx.optimal.gather(1, draws).any(1).double().mean()),
        "dead_observed": 100.0 * float(dead_group_mask(group_r).double().mean()),
    }
    with torch.no_grad():
        old = torch.log_softmax(scores, -1).gather(1, draws)
    return Draw(paid, tele, n, actions=draws, old_logp=old, group_rewards=group_r, live=live)


def group_draw(advantages: Callable[[torch.Tensor, VisitContext], torch.Tensor], dynamic: bool = False) -> Callable:
    """The draw of a group-sampled estimator: ``G`` actions per question from q (dynamic sampling:
    dead groups drawn again, :func:`draw_live_groups`), their rewards and ``advantages(group_r, ctx)``."""

    def draw(scores, rewards, gen, ctx) -> Draw:
        d = _sample(scores, rewards, gen, ctx, dynamic)
        d.advantages = advantages(d.group_rewards, ctx)
        if dynamic:
            d.telemetry["dropped"] = 100.0 * float((~d.live).double().mean())
        return d

    return draw


def pg_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """The on-policy surrogate ``-(1/(B G)) sum A_i log q(a_i)`` (GRPO, RLOO; Eq. 3 at ratio 1);
    dynamic sampling's dropped groups left out."""
    if draw.live is None:
        return policy_gradient_loss(scores, draw.actions, draw.advantages)
    live = draw.live
    return (
        policy_gradient_loss(scores[live], draw.actions[live], draw.advantages[live])
        if live.any()
        else scores.sum() * 0.0
    )


def _token_lengths(ctx: VisitContext, actions: torch.Tensor, dtype) -> torch.Tensor | None:
    if ctx.lengths is None:
        return None
    lengths = torch.as_tensor(ctx.lengths, dtype=dtype)
    lengths = lengths.expand(len(actions), lengths.shape[-1]) if lengths.ndim == 1 else lengths
    return lengths.gather(1, actions)


def clipped_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """GRPO with PPO's clip (:func:`clipped_policy_loss`): the ratio of each drawn action's current
    q to its q when drawn, clipped at ``settings.clip``; on the policy head one action is one token."""
    logp = torch.log_softmax(scores, -1).gather(1, draw.actions)
    return clipped_policy_loss(logp, draw.old_logp, draw.advantages, ctx.settings.clip)


def gspo_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """GSPO: the clipped surrogate on the sequence-level, length-normalised ratio
    ``exp((log q(y) - log q_old(y)) / |y|)`` of each drawn candidate. ``ctx.lengths`` gives the
    candidates' token lengths (the LM selector's action strings); without them every action counts
    as one token and GSPO's ratio is GRPO-clip's, so on the policy head the two train alike (GSPO
    then differs only by its clip range). ``log q`` is the selector's listwise log-probability of
    the candidate (Eq. 4 on the LM selector), standing in for the sequence log-likelihood."""
    logp = torch.log_softmax(scores, -1).gather(1, draw.actions)
    return clipped_policy_loss(
        logp, draw.old_logp, draw.advantages, ctx.settings.clip, _token_lengths(ctx, draw.actions, logp.dtype)
    )


def imitation_draw(scores, rewards, gen, ctx) -> Draw:
    """Imitation reads its targets off the whole table (paid for up front); a visit draws nothing."""
    return Draw(_rows(ctx, scores.shape[-1]), {}, 0)


def sft_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """Cross-entropy to each question's reward-optimal subset."""
    return torch.nn.functional.cross_entropy(scores, ctx.targets[ctx.idx])


def dpo_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """DPO on (reward-optimal, worst) pairs at ``settings.dpo_beta``, the uniform initial head as reference."""
    rows = [j for j, i in enumerate(ctx.idx.tolist()) if i in ctx.pairs]
    if not rows:
        return scores.sum() * 0.0
    c = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][0] for j in rows])
    rj = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][1] for j in rows])
    logq = torch.log_softmax(scores[rows], -1)
    # the reference is the initial head: uniform, so its log-ratio terms cancel
    margin = logq.gather(1, c[:, None]) - logq.gather(1, rj[:, None])
    return -torch.nn.functional.logsigmoid(ctx.settings.dpo_beta * margin).mean()
