"""A drop-in TRL callback: the closed-form dead-group probability (Eq. 7) of the policy being
trained, logged beside TRL's sampled ``frac_reward_zero_std``.

GRPO learns nothing from a group whose ``G`` rewards are all equal. TRL counts such groups
among the ones it happened to draw (``frac_reward_zero_std``); when completions parse into an
enumerable action space, the probability that a group drawn from the current policy is dead
can be computed exactly instead: with ``p_gen(a|s)`` the probability that generation emits
action ``a`` and ``w_v`` the mass of each reward class ``v``, it is ``sum_v w_v ** G`` (Eq. 7).
Generation mass outside the actions (completions that do not parse) is one more class, with
the reward the user's function gives a format failure.

Use::

    from fgpo_core.algorithms.callbacks import DeadGroupCallback, lm_selector_p_gen

    cb = DeadGroupCallback(lm_selector_p_gen(selector, probe_questions), rewards, failure_reward=0.0)
    trainer = trl.GRPOTrainer(..., callbacks=[cb])
    trainer.train()
    cb.history  # one row per logging step: step, dead_group_closed_form, frac_reward_zero_std, ...

``rewards[i, a]`` must be what the trainer's reward function returns for action ``a`` of probe
prompt ``i`` (any reward whose value depends only on the parsed action: the book's
differential reward, Eq. 1, a user's own). The closed form assumes sampling at temperature 1
from the distribution ``p_gen_fn`` returns.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..core.dead_groups import DEFAULT_ATOL, dead_group_probability

__all__ = ["DeadGroupCallback", "Recount", "lm_selector_p_gen", "closed_form_dead_groups"]


def closed_form_dead_groups(
    p_gen: np.ndarray, rewards: np.ndarray, G: int, failure_reward=None, atol: float = DEFAULT_ATOL
) -> np.ndarray:
    """Eq. 7 per prompt for a generation distribution over enumerable actions ``p_gen [N, A]``;
    with ``failure_reward`` (a number, or one per prompt) the missing mass ``1 - sum_a p_gen``
    is one more action, with that reward."""
    p = np.asarray(p_gen, dtype=float)
    r = np.asarray(rewards, dtype=float)
    if p.shape != r.shape or p.ndim != 2:
        raise ValueError(f"p_gen and rewards must both be [N, A], got {p.shape} and {r.shape}")
    if (p < -1e-9).any() or (p.sum(1) > 1 + 1e-6).any():
        raise ValueError("p_gen must be non-negative with at most unit mass per prompt")
    if failure_reward is not None:
        from ..evaluation.picks import p_gen_with_failures

        p = p_gen_with_failures(p)
        fail = np.broadcast_to(np.asarray(failure_reward, dtype=float), (len(r),))
        r = np.concatenate([r, fail[:, None]], 1)
    return dead_group_probability(np.clip(p, 0.0, None), r, G, atol)


def lm_selector_p_gen(selector, questions: Sequence) -> Callable:
    """A ``p_gen_fn`` for the book's LM selector: each probe question's p_gen over the ``2**n``
    canonical policy strings (:meth:`~fgpo_core.selectors.lm.LMSelector.scores_and_p_gen`)."""

    def p_gen(model=None) -> np.ndarray:
        return np.stack([selector.scores_and_p_gen(q)[1].cpu().numpy() for q in questions])

    return p_gen


def _callback_base():
    from transformers import TrainerCallback

    return TrainerCallback


class DeadGroupCallback(_callback_base()):
    """Logs ``dead_group_closed_form`` (Eq. 7, mean over the probe prompts, as a fraction like
    TRL's ``frac_reward_zero_std``) and ``p_gen_on_actions`` (mean generation mass that parses)
    at every ``every``-th logging step of any TRL trainer that samples groups.

    ``p_gen_fn(model) -> [N, A]``: the current policy's probability of each action on the ``N``
    probe prompts; ``rewards [N, A]``: the reward of each action; ``failure_reward``: the reward
    of a completion that parses to no action, a number or one per prompt (None: ``p_gen_fn`` is
    a full distribution);
    ``G``: group size (default: the trainer's ``num_generations``). The values go into the
    trainer's ``logs`` (so later callbacks and reporters see them), into the matching entry of
    ``state.log_history`` and into :attr:`history`.
    """

    def __init__(
        self,
        p_gen_fn: Callable,
        rewards,
        failure_reward=None,
        G: int | None = None,
        every: int = 1,
        atol: float = DEFAULT_ATOL,
    ):
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.p_gen_fn, self.rewards = p_gen_fn, np.asarray(rewards, dtype=float)
        self.failure_reward, self.G, self.every, self.atol = failure_reward, G, every, atol
        self.history: list[dict] = []
        self._logs_seen: int | None = None  # counted from the trainer's log history at the first log (a resumed run)

    def measure(self, model, G: int) -> dict:
        """The closed form for the current ``model`` (evaluated without gradients, in eval mode)."""
        import torch

        was_training = getattr(model, "training", False)
        if model is not None:
            model.eval()
        try:
            with torch.no_grad():
                p = np.asarray(self.p_gen_fn(model), dtype=float)
        finally:
            if model is not None and was_training:
                model.train()
        dead = closed_form_dead_groups(p, self.rewards, G, self.failure_reward, self.atol)
        return {"dead_group_closed_form": float(dead.mean()), "p_gen_on_actions": float(p.sum(1).mean())}

    def on_log(self, args, state, control, model=None, logs=None, **kwargs):
        if logs is None or "train_runtime" in logs:  # the end-of-training summary is not a step
            return control
        if self._logs_seen is None:  # a run resumed from a checkpoint keeps its cadence
            self._logs_seen = sum("train_runtime" not in h for h in state.log_history[:-1])
        self._logs_seen += 1
        if (self._logs_seen - 1) % self.every:
            return control
        G = self.G or getattr(args, "num_generations", None)
        if not G:
            raise ValueError("give G: the trainer's args have no num_generations")
        vals = self.measure(model, int(G))
        logs.update(vals)
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(vals)
        self.history.append(
            {"step": state.global_step, **vals, "frac_reward_zero_std": logs.get("frac_reward_zero_std", float("nan"))}
        )
        return control


class Recount(_callback_base()):
    """Writes the exact dead-group fraction of the groups a reward function scored since the last log
    (``reward.groups``, ``reward.dead_fraction``: :class:`~fgpo_core.algorithms.grpo.TableReward`) into
    the step's log entry as ``dead_fraction_recount``, beside TRL's ``frac_reward_zero_std`` (TRL keeps
    its log history in every checkpoint, so a resumed run keeps the counts of its earlier steps)."""

    def __init__(self, reward):
        self.reward = reward
        self.seen = len(reward.groups)

    def on_log(self, args, state, control, logs=None, **kw):
        new = len(self.reward.groups) - self.seen
        if logs is None or "train_runtime" in logs or not new:
            return control
        self.seen = len(self.reward.groups)
        value = self.reward.dead_fraction(last=new)
        logs["dead_fraction_recount"] = value
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1]["dead_fraction_recount"] = value
        return control
