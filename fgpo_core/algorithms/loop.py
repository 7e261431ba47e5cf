"""The one training loop of the policy-head selector and the teaching bandit: minibatches of
questions, one :meth:`~fgpo_core.core.registry.Estimator.visit` per minibatch, an optimiser step.

The policy is injected as ``scores(idx) -> [B, A]`` (a head on the questions' features, or a
table of free logits); what the loop adds is the same for every estimator: the question order
(``rng.permutation`` per epoch), a shortlist rebuilt per epoch where the estimator has one, the
(question, subset) pairs paid for, the reward evaluations, each step's row (the visit's telemetry,
in percent, then the caller's) and the evaluations at ``eval_every``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from ..core.registry import Estimator, VisitContext
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


def visit_context(est: Estimator, r_eq1: torch.Tensor, **settings) -> VisitContext:
    """The whole table's context of a visit (sliced per minibatch by :func:`run_visits`):
    the Eq. 1-optimal subsets, SFT's targets and DPO's pairs where the estimator reads them."""
    optimal = r_eq1 == r_eq1.max(1, keepdim=True).values  # ties kept
    ctx = VisitContext(idx=torch.arange(len(r_eq1)), optimal=optimal, **settings)
    if est.kind == "imitation":
        ctx.targets = torch.as_tensor(r_eq1.numpy().argmax(1))
        ctx.pairs = {i: (c, r) for i, c, r in dpo_pairs(r_eq1.numpy())}
    return ctx


def run_visits(est: Estimator, scores: Callable[[torch.Tensor], torch.Tensor], rewards: torch.Tensor,
               ctx: VisitContext, opt, epochs: int, batch_size: int, rng: np.random.Generator,
               gen: torch.Generator, eval_every: int, evaluate: Callable[[int, LoopState], None],
               after_step: Callable[[torch.Tensor, LoopState], dict], row_start: Callable[[int, int], dict] | None = None,
               sched=None, n_tools: int = 0, on_step: Callable[[int], None] | None = None) -> LoopState:
    """Train with ``est`` for ``epochs`` passes over the ``N = len(rewards)`` questions.

    ``scores(idx)``: the policy's candidate scores of questions ``idx`` (with autograd);
    ``rewards [N, A]``: the reward the estimator trains on; ``ctx``: :func:`visit_context`.
    ``evaluate(step, state)`` runs at step 0, every ``eval_every`` steps and at the end;
    ``after_step(idx, state)`` returns the step row's own telemetry (after the optimiser step);
    ``row_start(epoch, b)`` its first columns after ``step``; ``on_step(step)`` runs last."""
    N, A = rewards.shape
    state = LoopState(paid=np.zeros((N, A), dtype=bool))
    if est.kind == "imitation":
        state.paid[:] = True  # their targets are the table's optimal (and worst) subsets: the whole table
    n_batches = math.ceil(N / batch_size)
    total = n_batches * epochs
    every = eval_every or n_batches
    r_np, shortlist = rewards.numpy(), None
    evaluate(0, state)
    for epoch in range(epochs):
        order = rng.permutation(N)
        if est.candidates is not None:  # a shortlist: rebuilt from the current policy once per epoch
            with torch.no_grad():
                q_all = torch.softmax(scores(torch.arange(N)), -1).numpy()
            shortlist = est.candidates(shortlist, q_all, r_np, n_tools, ctx.k, rng)
        for b in range(n_batches):
            idx = torch.as_tensor(order[b * batch_size:(b + 1) * batch_size])
            s = scores(idx)
            bctx = replace(ctx, idx=idx, optimal=ctx.optimal[idx],
                           candidates=None if shortlist is None else torch.as_tensor(shortlist[idx.numpy()]))
            v = est.visit(s, rewards[idx], gen, bctx)
            state.n_reward += v.n_reward
            state.paid[idx.numpy()] |= v.paid.numpy()
            row = {"step": state.step + 1, **(row_start(epoch, b) if row_start else {}), **v.telemetry}
            opt.zero_grad()
            v.loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            state.step += 1
            row.update({"loss": float(v.loss.detach()), **after_step(idx, state)})
            state.steps.append(row)
            if state.step % every == 0 or state.step == total:
                evaluate(state.step, state)
            if on_step is not None:
                on_step(state.step)
    return state
