"""FGPO: training a selector with the exact objective, rewards read from the reward table.

One step: score every subset of each question in a minibatch (the candidate scores of
Eq. 4), take ``q = softmax`` of the scores and minimise
``-(1/|B|) sum_s [sum_a q r + beta H(q)]`` (Eq. 2, 5) with the rewards looked up in the
reward table; no reasoner is called. The learning rate follows a cosine schedule. Every
``eval_every`` steps (default: every epoch) the dev split is evaluated by ``evaluate``
(default :func:`~fgpo_core.evaluation.picks.evaluate_dev`: greedy free generation, the
paper's main evaluation, and controlled candidate scoring, Eq. 6), and the weights that
rank best by ``select_by`` are kept. Checkpoints are written atomically after every step,
and a run restarted with the same configuration resumes from the last one.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from ..core.estimators import BETA, entropy, fgpo_loss
from ..genomics.benchmarks.schema import Question
from .common import cosine_schedule, load_checkpoint, record_config, save_checkpoint, trainable_parameters

__all__ = ["FGPOConfig", "FGPOResult", "SELECT_KEYS", "dev_key", "train_fgpo", "fgpo_step"]


@dataclass
class FGPOConfig:
    """An FGPO run of the LM selector."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay to zero); the paper's (7B) is in ``fgpo_core.book.paper.HYPERPARAMETERS``."""
    epochs: int = 4
    """Passes over the training questions (the paper: 4)."""
    batch_size: int = 16
    """Questions per minibatch; all 2**n subsets of each are scored."""
    beta: float = BETA
    """Entropy bonus of Eq. 5."""
    lora_r: int = 16
    """LoRA rank (the paper: 16)."""
    lora_alpha: int = 32
    """LoRA alpha (the paper: 32)."""
    lora_targets: tuple = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Modules that receive adapters."""
    seed: int = 0
    """Seeds the question order and the adapter's initialisation."""
    eval_every: int = 0
    """Optimiser steps between dev evaluations (0: once per epoch)."""
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


@dataclass
class FGPOResult:
    """What an FGPO run logged: one row per optimiser step, one per dev evaluation, and the
    step whose weights were kept."""

    config: FGPOConfig
    steps: pd.DataFrame
    dev: pd.DataFrame
    best_step: int
    extra: dict = field(default_factory=dict)


def fgpo_step(selector, questions: Sequence[Question], rewards: np.ndarray, beta: float = BETA,
              format_weight: float = 0.0, log_masses: list | None = None) -> torch.Tensor:
    """The FGPO loss of a minibatch, back-propagated one question at a time (no optimiser step).

    The loss is a mean over questions, so each question's term, divided by the batch size, is
    back-propagated as soon as it is scored: the gradients are those of the whole batch while
    only one question's graph is held in memory. With ``format_weight`` (this book's addition,
    see :class:`FGPOConfig`) each term also subtracts ``format_weight * log sum_a p_gen(a|s)``;
    ``log_masses``, if given, receives each question's detached log mass. Returns the detached
    candidate scores ``[B, 2**n]``.
    """
    B = len(questions)
    rows = []
    for question, r in zip(questions, rewards):
        scores, log_mass = selector.scores_and_log_mass(question)
        scores = scores[None]
        loss = fgpo_loss(scores, torch.as_tensor(r[None], dtype=scores.dtype), beta)
        if format_weight:
            loss = loss - format_weight * log_mass
        (loss / B).backward()
        rows.append(scores.detach()[0])
        if log_masses is not None:
            log_masses.append(float(log_mass))
    return torch.stack(rows)


def train_fgpo(selector, train_qs: Sequence[Question], train_rewards: np.ndarray, dev_qs: Sequence[Question],
               dev_rewards: np.ndarray, dev_correct: np.ndarray, config: FGPOConfig, out_dir=None,
               progress: bool = True, evaluate: Callable | None = None) -> FGPOResult:
    """Train ``selector.model`` (already LoRA-wrapped) with the exact objective; returns the logs.

    ``evaluate(selector, dev_qs, dev_rewards, dev_correct) -> dict`` scores the dev split (default
    :func:`~fgpo_core.evaluation.picks.evaluate_dev`; its row must hold the ``select_by`` field
    and ``J``). With ``out_dir`` a checkpoint (trainable weights, optimiser, schedule, logs) is
    written after every optimiser step (and its dev evaluation, where one falls) and the weights
    of the best dev evaluation are saved as ``best.pt``; a restarted run resumes at the step after
    the last one written, with the same batches, so an interruption costs at most one step.
    """
    from tqdm import tqdm

    if evaluate is None:
        from ..evaluation.picks import evaluate_dev as evaluate
    if len(train_qs) != len(train_rewards) or len(dev_qs) != len(dev_rewards):
        raise ValueError("questions and reward rows must align")
    dev_key({"gen_accuracy": 0, "accuracy": 0, "J": 0, "step": 0}, config.select_by)  # refuse a bad select_by early
    model = selector.model
    params = trainable_parameters(model)
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    n_batches = math.ceil(len(train_qs) / config.batch_size)
    total = n_batches * config.epochs
    every = config.eval_every or n_batches
    sched = cosine_schedule(opt, total)
    rng = np.random.default_rng(config.seed)
    orders = [rng.permutation(len(train_qs)) for _ in range(config.epochs)]
    steps, dev_rows, start_step = [], [], 0
    out = Path(out_dir) if out_dir else None
    if out:
        record_config(out, config)
        last = out / "last.pt"
        if last.exists():
            state = load_checkpoint(last)
            for p, v in zip(params, state["params"]):
                p.data.copy_(v)
            opt.load_state_dict(state["opt"])
            sched.load_state_dict(state["sched"])
            steps, dev_rows = state["steps"], state["dev"]
            # checkpoints written once per epoch (before per-step ones) hold no step: their epoch's end
            start_step = int(state.get("step", (state["epoch"] + 1) * n_batches))

    def evaluate_at(step: int, visits: int) -> None:
        model.eval()
        wall, cpu = time.perf_counter(), time.process_time()
        row = evaluate(selector, dev_qs, dev_rewards, dev_correct)
        dev_rows.append({"step": step, "epoch": step / n_batches, "visits": visits, **row,
                         "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu})
        best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
        if out and best["step"] == step:
            save_checkpoint(out / "best.pt", {"params": [p.detach().clone() for p in params], "step": step})
        if out and config.snapshots:
            save_checkpoint(out / f"step-{step}.pt", {"params": [p.detach().half() for p in params], "step": step})
        model.train()

    def stale(step: int) -> bool:
        """The early-stop rule: past ``stop_after`` epochs and no better dev evaluation for an epoch."""
        if not config.stop_after or step < config.stop_after * n_batches or not dev_rows:
            return False
        best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
        return best["step"] <= step - n_batches and dev_rows[-1]["step"] == step

    if not dev_rows:
        evaluate_at(0, 0)  # the untrained adapter
    bar = tqdm(total=total, initial=start_step, desc="FGPO", disable=not progress)
    stopped = start_step if stale(start_step) else 0
    for epoch in range(start_step // n_batches, config.epochs if not stopped else 0):
        model.train()
        for b in range(n_batches):
            step = epoch * n_batches + b + 1
            if step <= start_step:
                continue
            idx = orders[epoch][b * config.batch_size:(b + 1) * config.batch_size]
            wall, cpu = time.perf_counter(), time.process_time()
            opt.zero_grad()
            log_masses: list = []
            scores = fgpo_step(selector, [train_qs[i] for i in idx], train_rewards[idx], config.beta,
                               config.format_weight, log_masses)
            r = torch.as_tensor(train_rewards[idx], dtype=scores.dtype)
            opt.step()
            sched.step()
            with torch.no_grad():
                q = torch.softmax(scores, -1)
                steps.append({"epoch": epoch + 1, "step": step,
                              "visits": epoch * len(train_qs) + min((b + 1) * config.batch_size, len(train_qs)),
                              "loss": float(fgpo_loss(scores, r, config.beta)), "J": float((q * r).sum(-1).mean()),
                              "entropy": float(entropy(q).mean()), "top_mass": float(q.max(-1).values.mean()),
                              "tools": float(selector.space.sizes[q.argmax(-1).numpy()].mean()),
                              "p_gen_mass": float(np.exp(log_masses).mean()),
                              "lr": sched.get_last_lr()[0], "seconds": time.perf_counter() - wall,
                              "cpu_seconds": time.process_time() - cpu})
            bar.update()
            if step % every == 0 or step == total:
                evaluate_at(step, steps[-1]["visits"])
            if out:
                save_checkpoint(out / "last.pt", {"params": [p.detach().clone() for p in params],
                                                  "opt": opt.state_dict(), "sched": sched.state_dict(),
                                                  "steps": steps, "dev": dev_rows, "epoch": epoch, "step": step})
            if stale(step):
                stopped = step
                break
        if stopped:
            break
    bar.close()
    best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
    return FGPOResult(config, pd.DataFrame(steps), pd.DataFrame(dev_rows), int(best["step"]),
                      {"stopped_early_at": stopped} if stopped else {})
