"""FGPO's configuration and one step: what a run of the LM selector is configured by
(:class:`FGPOConfig`), how its dev evaluations are ranked (:func:`dev_key`), and one optimiser step's
gradients of any estimator of the registry on the selector's candidate scores (:func:`selector_step`;
:func:`fgpo_step`, FGPO's). The training loop is :func:`fgpo_core.algorithms.fgpo.train_fgpo`, which
re-exports every name here.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import torch

from ..core.estimators import BETA
from ..core.registry import Estimator, VisitContext, estimator, visit_loss
from ..core.settings import EstimatorSettings
from ..genomics.benchmarks.schema import Question
from .methods import resolve_method

__all__ = [
    "FGPOConfig",
    "SELECT_KEYS",
    "dev_key",
    "eval_steps",
    "training_reward",
    "fgpo_step",
    "selector_step",
    "one_at_a_time",
    "reference_log_policy",
]


@dataclass
class FGPOConfig:
    """An FGPO run of the LM selector (or of any estimator of the registry on its candidate scores)."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay to zero); the paper's (7B) is in ``fgpo_core.book.paper.HYPERPARAMETERS``."""
    epochs: int = 4
    """Passes over the training questions (the paper: 4)."""
    batch_size: int = 16
    """Questions per minibatch; all 2**n subsets of each are scored."""
    method: str = "fgpo"
    """The estimator, a method name of the registry (``fgpo``: the exact objective with its entropy bonus;
    ``rloo-klu0.05``, ``grpo-G4``, ``fgpo-k4``...; see ``fgpo study --help``)."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What the estimator and its regularizer read (``G``, ``k``, ``regularizer``, ``weight``: FGPO's
    entropy bonus, None its default 0.03, ...); a method name's modifiers override them."""
    lora_r: int = 16
    """LoRA rank (the paper: 16)."""
    lora_alpha: int = 32
    """LoRA alpha (the paper: 32)."""
    lora_targets: tuple = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Modules that receive adapters."""
    seed: int = 0
    """Seeds the question order, an estimator's draws and the adapter's initialisation."""
    eval_every: int = 0
    """Optimiser steps between dev evaluations (0: once per epoch)."""
    evals_per_epoch: int = 0
    """Instead of ``eval_every``: dev evaluations at the steps nearest each 1/N of an epoch (0: off)."""
    micro_batch: int = 1
    """Questions per forward/backward pass (1: one question's graph in memory at a time)."""
    format_weight: float = 0.0
    """This book's addition, not the paper's (0: FGPO as the paper writes it): the loss also
    subtracts ``format_weight * log sum_a p_gen(a|s)``, the log of free generation's mass on
    the policy strings, so that raising q's expected reward cannot move p_gen off the strings
    that parse (the role GRPO's 0.05 r_fmt plays in its reward)."""
    select_by: str = "generation"
    """Dev metric that picks the kept adapter: "generation" (greedy free generation, how the
    selector is used) or "scoring" (controlled candidate scoring, Eq. 6), ties to the higher J;
    or "last": the adapter of the last step, whatever dev says (a fixed-budget comparison)."""
    stop_after: int = 0
    """From this many epochs on, stop once the best dev evaluation is a full epoch old (0: train
    every epoch). The cosine schedule still spans ``epochs``."""
    snapshots: bool = False
    """Also keep the trainable weights of every dev evaluation (``step-<N>.pt``, half precision),
    so another run can be compared with this one at its own visit count."""

    def __post_init__(self):
        resolve_method(self.method, self.settings)  # an unknown method or an unread modifier: ValueError
        if self.micro_batch < 1:
            raise ValueError(f"micro_batch must be >= 1, got {self.micro_batch}")

    @classmethod
    def from_record(cls, record: dict) -> "FGPOConfig":
        """The config a run's manifest (or ``config.json``) records, older records included: their
        ``beta`` is the entropy weight, and a missing field has its default."""
        rec = dict(record)
        settings = dict(rec.pop("settings", None) or {})
        beta = rec.pop("beta", None)
        if beta is not None and float(beta) != BETA:
            settings.setdefault("weight", float(beta))
        if "lora_targets" in rec:
            rec["lora_targets"] = tuple(rec["lora_targets"])
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in rec.items() if k in names}, settings=EstimatorSettings(**settings))


SELECT_KEYS = {"generation": "gen_accuracy", "scoring": "accuracy"}
"""The dev-row field each ``select_by`` ranks by."""


def dev_key(row: dict, select_by: str = "generation") -> tuple:
    """How dev evaluations are ranked: the chosen accuracy, then the expected reward J, then the
    earlier step; with ``select_by="last"``, the later step."""
    if select_by == "last":
        return (row["step"], 0.0, 0)
    if select_by not in SELECT_KEYS:
        raise ValueError(f"select_by must be one of {', '.join(SELECT_KEYS)} or last, got {select_by!r}")
    return (row[SELECT_KEYS[select_by]], row["J"], -row["step"])


def training_reward(config: FGPOConfig) -> str:
    """The reward table rows ``config``'s estimator trains on: ``settings.reward``, else the
    estimator's own (Eq. 1 for FGPO, the differential reward for GRPO and RLOO)."""
    est, settings, _ = resolve_method(config.method, config.settings)
    return settings.reward or est.reward


def eval_steps(steps_per_epoch: int, epochs: int, per_epoch: int) -> list[int]:
    """The optimiser steps nearest each 1/``per_epoch`` of an epoch (the last step included)."""
    return sorted(
        {
            max(1, round(e * steps_per_epoch + k * steps_per_epoch / per_epoch))
            for e in range(epochs)
            for k in range(1, per_epoch + 1)
        }
    )


def one_at_a_time(selector, questions: Sequence[Question]) -> tuple[torch.Tensor, torch.Tensor]:
    """The candidate scores ``[b, 2**n]`` and log p_gen masses ``[b]`` of ``questions``, one pass each
    (:meth:`~fgpo_core.selectors.lm.LMSelector.scores_and_log_mass`)."""
    pairs = [selector.scores_and_log_mass(q) for q in questions]
    return torch.stack([a for a, _ in pairs]), torch.stack([m for _, m in pairs])


def _full(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def selector_step(
    selector,
    questions: Sequence[Question],
    rewards: np.ndarray,
    est: Estimator,
    ctx: VisitContext,
    gen: torch.Generator | None = None,
    format_weight: float = 0.0,
    micro_batch: int = 1,
    score: Callable = one_at_a_time,
    autocast: Callable = contextlib.nullcontext,
    draws: list | None = None,
) -> dict:
    """One optimiser step's gradients (no optimiser step) of estimator ``est`` on a minibatch.

    ``micro_batch`` questions at a time are scored (``score(selector, questions) -> (scores [b, A],
    log_mass [b])``, under ``autocast()``), handed to the registry (a draw, then the estimator's loss
    and regularizer, :func:`~fgpo_core.core.registry.visit_loss`, on CPU) and back-propagated at
    their share of the batch, so only their graph is held in memory. ``ctx``: the visit's context for
    these questions (``idx``, ``optimal`` of the minibatch). With ``format_weight`` each question
    also subtracts ``format_weight * log sum_a p_gen(a|s)``. ``draws``: the draws of an earlier update
    on this minibatch (None: draw now). Returns the detached ``scores``, ``log_masses``, the
    estimator's ``loss``, the ``draws``, their ``telemetry`` (mean over parts) and ``n_reward``."""
    B = len(questions)
    rows, masses, loss_sum, new_draws, tele, n_reward = [], [], 0.0, [], {}, 0
    for i, s in enumerate(range(0, B, micro_batch)):
        part = slice(s, s + micro_batch)
        n = len(questions[part])
        with autocast():
            scores, log_mass = score(selector, questions[part])
        scores, log_mass = _full(scores).cpu(), _full(log_mass).cpu()  # the estimators run on CPU, in float32 or more
        r = torch.as_tensor(rewards[part], dtype=scores.dtype)
        pctx = replace(
            ctx,
            idx=ctx.idx[part],
            optimal=ctx.optimal[part],
            candidates=None if ctx.candidates is None else ctx.candidates[part],
            reference=None if ctx.reference is None else ctx.reference[part],
        )
        d = draws[i] if draws is not None else est.draw(scores, r, gen, pctx)
        loss = visit_loss(est, scores, r, d, pctx)
        total = loss - format_weight * log_mass.mean() if format_weight else loss
        (total * n / B).backward()
        rows.append(scores.detach())
        masses.append(log_mass.detach().reshape(-1))
        loss_sum += float(loss.detach()) * n / B
        new_draws.append(d)
        n_reward += d.n_reward
        for k, v in d.telemetry.items():
            tele[k] = tele.get(k, 0.0) + v * n / B
    return {
        "scores": torch.cat(rows),
        "log_masses": torch.cat(masses),
        "loss": loss_sum,
        "draws": new_draws,
        "telemetry": tele,
        "n_reward": n_reward,
    }


def reference_log_policy(
    selector,
    questions: Sequence[Question],
    micro_batch: int = 1,
    score: Callable = one_at_a_time,
    autocast: Callable = contextlib.nullcontext,
) -> torch.Tensor:
    """The selector's ``log q`` ``[N, 2**n]`` of ``questions`` now, in eval mode and without gradients: the
    reference policy of the ``klr`` regularizer (the policy at the start of training)."""
    was_training = selector.model.training
    selector.model.eval()
    with torch.no_grad(), autocast():
        parts = [
            _full(score(selector, questions[i : i + micro_batch])[0]).cpu()
            for i in range(0, len(questions), micro_batch)
        ]
    selector.model.train(was_training)
    return torch.log_softmax(torch.cat(parts), -1)


def fgpo_step(
    selector,
    questions: Sequence[Question],
    rewards: np.ndarray,
    beta: float = BETA,
    format_weight: float = 0.0,
    log_masses: list | None = None,
) -> torch.Tensor:
    """The FGPO loss of a minibatch, back-propagated one question at a time (no optimiser step):
    :func:`selector_step` with FGPO at entropy weight ``beta``. ``log_masses``, if given, receives each
    question's detached log mass. Returns the detached candidate scores ``[B, 2**n]``."""
    r = torch.as_tensor(np.asarray(rewards, dtype=float))
    ctx = VisitContext(
        idx=torch.arange(len(questions)),
        optimal=r == r.max(1, keepdim=True).values,
        settings=EstimatorSettings(weight=beta),
    )
    out = selector_step(selector, questions, rewards, estimator("fgpo"), ctx, format_weight=format_weight)
    if log_masses is not None:
        log_masses.extend(float(m) for m in out["log_masses"])
    return out["scores"]
