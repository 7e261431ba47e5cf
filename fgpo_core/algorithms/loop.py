"""The one training loop of the policy-head selector and the teaching bandit: minibatches of
questions, one draw per minibatch (:attr:`~fgpo_core.core.registry.Estimator.draw`), then
``settings.updates`` optimiser steps on that draw (TRL's ``num_iterations``), each on the loss of
freshly computed scores (:func:`~fgpo_core.core.registry.visit_loss`), so a clipped ratio to the
drawing policy moves off 1 from the second update on.

The policy is injected as ``scores(idx) -> [B, A]`` (a head on the questions' features, or a
table of free logits); what the loop adds is the same for every estimator: the question order
(``rng.permutation`` per epoch), a shortlist rebuilt per epoch where the estimator has one, the
(question, subset) pairs paid for, the reward evaluations, each optimiser step's row (the draw's
telemetry, in percent, then the caller's; ``update`` where there are several per draw) and the
evaluations at ``eval_every`` optimiser steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from ..core.registry import Estimator, VisitContext, visit_loss
from ..core.settings import EstimatorSettings
from .imitation import dpo_pairs

__all__ = ["LoopState", "visit_context", "run_visits"]


@dataclass
class LoopState:
    """What the loop has done so far."""

    paid: np.ndarray
    """``[N, A]`` bool: the (question, subset) pairs whose reward was read (reasoner calls)."""
    n_reward: int = 0
    """Reward evaluations used."""
    step: int = 0
    steps: list = field(default_factory=list)


_LEGACY = ("G", "k", "max_draws", "dpo_beta", "grpo_variant")


def visit_context(
    est: Estimator,
    r_eq1: torch.Tensor,
    settings: EstimatorSettings | None = None,
    reference: torch.Tensor | None = None,
    lengths: torch.Tensor | None = None,
    beta: float | None = None,
    **legacy,
) -> VisitContext:
    """The whole table's context of a visit (sliced per minibatch by :func:`run_visits`):
    the Eq. 1-optimal subsets, SFT's targets and DPO's pairs where the estimator reads them.

    ``settings``: what the estimator reads; the older keywords ``G``, ``k``, ``max_draws``,
    ``dpo_beta``, ``grpo_variant`` set those fields, and ``beta`` the entropy weight of an estimator
    whose default regularizer is the entropy bonus (as ``VisitContext.beta`` meant). ``reference``:
    the ``[N, A]`` log-probabilities of the reference policy (the ``klr`` regularizer)."""
    unknown = set(legacy) - set(_LEGACY)
    if unknown:
        raise TypeError(f"visit_context got unknown settings {sorted(unknown)}")
    settings = replace(settings or EstimatorSettings(), **legacy)
    if beta is not None and est.regularizer == "ent" and settings.regularizer in (None, "ent"):
        settings = replace(settings, weight=float(beta))
    optimal = r_eq1 == r_eq1.max(1, keepdim=True).values  # ties kept
    ctx = VisitContext(
        idx=torch.arange(len(r_eq1)), optimal=optimal, settings=settings, reference=reference, lengths=lengths
    )
    if est.kind == "imitation":
        ctx.targets = torch.as_tensor(r_eq1.numpy().argmax(1))
        ctx.pairs = {i: (c, r) for i, c, r in dpo_pairs(r_eq1.numpy())}
    return ctx


def _rows(x: torch.Tensor | None, idx: torch.Tensor) -> torch.Tensor | None:
    return None if x is None or x.ndim < 2 else x[idx]


def run_visits(
    est: Estimator,
    scores: Callable[[torch.Tensor], torch.Tensor],
    rewards: torch.Tensor,
    ctx: VisitContext,
    opt,
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
    gen: torch.Generator,
    eval_every: int,
    evaluate: Callable[[int, LoopState], None],
    after_step: Callable[[torch.Tensor, LoopState], dict],
    row_start: Callable[[int, int], dict] | None = None,
    sched=None,
    n_tools: int = 0,
    on_step: Callable[[int], None] | None = None,
) -> LoopState:
    """Train with ``est`` for ``epochs`` passes over the ``N = len(rewards)`` questions.

    ``scores(idx)``: the policy's candidate scores of questions ``idx`` (with autograd);
    ``rewards [N, A]``: the reward the estimator trains on; ``ctx``: :func:`visit_context`.
    Each minibatch is drawn once and trained on for ``ctx.settings.updates`` optimiser steps;
    ``sched`` steps with the optimiser. ``evaluate(step, state)`` runs at step 0, every
    ``eval_every`` optimiser steps (0: once per epoch) and at the end; ``after_step(idx, state)``
    returns the step row's own telemetry (after the optimiser step); ``row_start(epoch, b)`` its
    first columns after ``step``; ``on_step(step)`` runs last."""
    N, A = rewards.shape
    state = LoopState(paid=np.zeros((N, A), dtype=bool))
    if est.kind == "imitation":
        state.paid[:] = True  # their targets are the table's optimal (and worst) subsets: the whole table
    updates = ctx.settings.updates
    if updates < 1:
        raise ValueError(f"updates per draw must be >= 1, got {updates}")
    n_batches = math.ceil(N / batch_size)
    total = n_batches * epochs * updates
    every = eval_every or n_batches * updates
    r_np, shortlist = rewards.numpy(), None
    evaluate(0, state)
    for epoch in range(epochs):
        order = rng.permutation(N)
        if est.candidates is not None:  # a shortlist: rebuilt from the current policy once per epoch
            with torch.no_grad():
                q_all = torch.softmax(scores(torch.arange(N)), -1).numpy()
            shortlist = est.candidates(shortlist, q_all, r_np, n_tools, ctx.settings.k, rng)
        for b in range(n_batches):
            idx = torch.as_tensor(order[b * batch_size : (b + 1) * batch_size])
            s = scores(idx)
            bctx = replace(
                ctx,
                idx=idx,
                optimal=ctx.optimal[idx],
                reference=_rows(ctx.reference, idx),
                lengths=ctx.lengths if ctx.lengths is None or ctx.lengths.ndim < 2 else ctx.lengths[idx],
                candidates=None if shortlist is None else torch.as_tensor(shortlist[idx.numpy()]),
            )
            r = rewards[idx]
            draw = est.draw(s, r, gen, bctx)
            state.n_reward += draw.n_reward
            state.paid[idx.numpy()] |= draw.paid.numpy()
            for u in range(updates):
                if u:
                    s = scores(idx)  # the policy after the previous update, on the same draw
                loss = visit_loss(est, s, r, draw, bctx)
                row = {
                    "step": state.step + 1,
                    **(row_start(epoch, b) if row_start else {}),
                    **({"update": u + 1} if updates > 1 else {}),
                    **draw.telemetry,
                }
                opt.zero_grad()
                loss.backward()
                opt.step()
                if sched is not None:
                    sched.step()
                state.step += 1
                row.update({"loss": float(loss.detach()), **after_step(idx, state)})
                state.steps.append(row)
                if state.step % every == 0 or state.step == total:
                    evaluate(state.step, state)
                if on_step is not None:
                    on_step(state.step)
    return state
