"""Training the LM selector with the exact objective (FGPO), reading rewards from a table.

One step: score every subset of each question in a minibatch (Eq. 4), take
``q = softmax`` of the scores and minimise ``-(1/|B|) sum_s [sum_a q r + beta H(q)]``
(Eq. 2, 5) with the rewards looked up in the reward table; no reasoner is called.
The learning rate follows a cosine schedule. Every ``eval_every`` steps (default:
every epoch) the dev split is evaluated two ways, by greedy free generation (the
paper's main evaluation) and by controlled candidate scoring (Eq. 6: the argmax
subset's correctness), and the adapter that is best on the chosen one is kept.
Checkpoints are written atomically after every epoch, and a run restarted with the
same configuration resumes from the last one.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from .benchmarks.schema import Question
from .objectives import BETA, fgpo_loss
from .table import RewardTable

__all__ = ["FGPOConfig", "add_lora", "align_table", "evaluate_scoring", "evaluate_dev", "dev_key", "train_fgpo",
           "TrainResult", "fgpo_step", "grpo_step", "generation_drift"]


@dataclass
class FGPOConfig:
    """An FGPO run of the LM selector."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay to zero); the paper used 1e-5 at 7B."""
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
    select_by: str = "generation"
    """Dev metric that picks the kept adapter: "generation" (greedy free generation, how the
    selector is used) or "scoring" (controlled candidate scoring, Eq. 6); ties go to the higher J."""


SELECT_KEYS = {"generation": "gen_accuracy", "scoring": "accuracy"}
"""The dev-row field each ``select_by`` ranks by."""


def dev_key(row: dict, select_by: str = "generation") -> tuple:
    """How dev evaluations are ranked: the chosen accuracy, then the expected reward J, then the earlier step."""
    if select_by not in SELECT_KEYS:
        raise ValueError(f"select_by must be one of {', '.join(SELECT_KEYS)}, got {select_by!r}")
    return (row[SELECT_KEYS[select_by]], row["J"], -row["step"])


@dataclass
class TrainResult:
    config: FGPOConfig
    steps: pd.DataFrame
    dev: pd.DataFrame
    best_step: int
    extra: dict = field(default_factory=dict)


def add_lora(model, r: int = 16, alpha: int = 32, targets: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj")):
    """Wrap a causal LM with a fresh peft LoRA adapter (base weights frozen)."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0,
                                            bias="none", task_type="CAUSAL_LM"))


def align_table(table: RewardTable, df: pd.DataFrame, questions: Sequence[Question], kind: str = "eq1") -> np.ndarray:
    """Reward rows ``[N, 2**n]`` in the order of ``questions``; refuses a table of other questions."""
    ids = list(df["question_id"].to_numpy()[::table.n_actions])
    want = [q.id for q in questions]
    if ids != want:
        pos = {qid: i for i, qid in enumerate(ids)}
        missing = [qid for qid in want if qid not in pos]
        if missing:
            raise ValueError(f"the table lacks {len(missing)} of the questions (e.g. {missing[0]})")
        return table.rewards(kind)[[pos[qid] for qid in want]]
    return table.rewards(kind)


def evaluate_scoring(selector, questions: Sequence[Question], rewards: np.ndarray, correct: np.ndarray,
                     batch_size: int = 16) -> dict:
    """Controlled candidate scoring (Eq. 6): accuracy of each question's argmax-score subset,
    the expected Eq. 1 reward under q, tools per question and the entropy of q."""
    sizes = selector.space.sizes
    picks, J, H = [], [], []
    with torch.no_grad():
        for i in range(0, len(questions), batch_size):
            scores = selector.candidate_scores(questions[i:i + batch_size]).double()
            q = torch.softmax(scores, -1)
            picks += scores.argmax(-1).tolist()
            J += (q * torch.as_tensor(rewards[i:i + batch_size])).sum(-1).tolist()
            H += (-(q * q.clamp_min(1e-300).log()).sum(-1)).tolist()
    picks = np.array(picks)
    return {"accuracy": 100.0 * correct[np.arange(len(picks)), picks].mean(), "J": float(np.mean(J)),
            "tools": float(sizes[picks].mean()), "entropy": float(np.mean(H)),
            "empty_argmax": 100.0 * float((picks == 0).mean())}


def evaluate_dev(selector, questions: Sequence[Question], rewards: np.ndarray, correct: np.ndarray) -> dict:
    """Both dev evaluations of the selector: controlled scoring (:func:`evaluate_scoring`'s
    fields) and greedy free generation (``gen_accuracy``, ``gen_format_failures``, ``gen_tools``)."""
    from .evaluate import picks_from_generation, summarise_picks

    row = evaluate_scoring(selector, questions, rewards, correct)
    picks, _ = picks_from_generation(selector, questions)
    gen = summarise_picks(picks, correct, selector.space.n_tools)
    return {**row, "gen_accuracy": gen["accuracy"], "gen_format_failures": gen["format_failures"],
            "gen_tools": gen["tools"]}


def _save(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_fgpo(selector, train_qs: Sequence[Question], train_rewards: np.ndarray, dev_qs: Sequence[Question],
               dev_rewards: np.ndarray, dev_correct: np.ndarray, config: FGPOConfig, out_dir=None,
               progress: bool = True) -> TrainResult:
    """Train ``selector.model`` (already LoRA-wrapped) with the exact objective; returns the logs.

    With ``out_dir`` a checkpoint (trainable weights, optimiser, logs) is written after every
    epoch and the weights of the best dev evaluation (``config.select_by``) are saved as
    ``best.pt``; a restarted run resumes.
    """
    from tqdm import tqdm

    if len(train_qs) != len(train_rewards) or len(dev_qs) != len(dev_rewards):
        raise ValueError("questions and reward rows must align")
    dev_key({"gen_accuracy": 0, "accuracy": 0, "J": 0, "step": 0}, config.select_by)  # refuse a bad select_by early
    model = selector.model
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the selector has no trainable parameters: wrap it with add_lora first")
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    n_batches = math.ceil(len(train_qs) / config.batch_size)
    total = n_batches * config.epochs
    every = config.eval_every or n_batches
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    rng = np.random.default_rng(config.seed)
    orders = [rng.permutation(len(train_qs)) for _ in range(config.epochs)]
    steps, dev_rows, start_epoch = [], [], 0
    out = Path(out_dir) if out_dir else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
        cfg_file = out / "config.json"
        if cfg_file.exists() and json.loads(cfg_file.read_text()) != json.loads(json.dumps(asdict(config))):
            raise ValueError(f"{out} holds a run with another configuration")
        cfg_file.write_text(json.dumps(asdict(config), indent=2))
        last = out / "last.pt"
        if last.exists():
            state = torch.load(last, weights_only=False)
            for p, v in zip(params, state["params"]):
                p.data.copy_(v)
            opt.load_state_dict(state["opt"])
            sched.load_state_dict(state["sched"])
            steps, dev_rows, start_epoch = state["steps"], state["dev"], state["epoch"] + 1

    def evaluate(step: int, visits: int) -> None:
        model.eval()
        dev_rows.append({"step": step, "epoch": step / n_batches, "visits": visits,
                         **evaluate_dev(selector, dev_qs, dev_rewards, dev_correct)})
        best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
        if out and best["step"] == step:
            _save(out / "best.pt", {"params": [p.detach().clone() for p in params], "step": step})
        model.train()

    if not dev_rows:
        evaluate(0, 0)  # the untrained adapter
    bar = tqdm(total=total, initial=start_epoch * n_batches, desc="FGPO", disable=not progress)
    for epoch in range(start_epoch, config.epochs):
        model.train()
        for b in range(n_batches):
            step = epoch * n_batches + b + 1
            idx = orders[epoch][b * config.batch_size:(b + 1) * config.batch_size]
            opt.zero_grad()
            scores = fgpo_step(selector, [train_qs[i] for i in idx], train_rewards[idx], config.beta)
            r = torch.as_tensor(train_rewards[idx], dtype=scores.dtype)
            opt.step()
            sched.step()
            with torch.no_grad():
                q = torch.softmax(scores, -1)
                loss = fgpo_loss(scores, r, config.beta)
                steps.append({"epoch": epoch + 1, "step": step,
                              "visits": epoch * len(train_qs) + min((b + 1) * config.batch_size, len(train_qs)),
                              "loss": float(loss), "J": float((q * r).sum(-1).mean()),
                              "entropy": float(-(q * q.clamp_min(1e-300).log()).sum(-1).mean()),
                              "top_mass": float(q.max(-1).values.mean()),
                              "tools": float(selector.space.sizes[q.argmax(-1).numpy()].mean()),
                              "lr": sched.get_last_lr()[0]})
            bar.update()
            if step % every == 0 or step == total:
                evaluate(step, steps[-1]["visits"])
        if out:
            _save(out / "last.pt", {"params": [p.detach().clone() for p in params], "opt": opt.state_dict(),
                                    "sched": sched.state_dict(), "steps": steps, "dev": dev_rows, "epoch": epoch})
    bar.close()
    best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
    return TrainResult(config, pd.DataFrame(steps), pd.DataFrame(dev_rows), int(best["step"]))


def fgpo_step(selector, questions: Sequence[Question], rewards: np.ndarray, beta: float = BETA) -> torch.Tensor:
    """The FGPO loss of a minibatch, back-propagated one question at a time (no optimiser step).

    The loss is a mean over questions, so each question's term, divided by the batch size, is
    back-propagated as soon as it is scored: the gradients are those of the whole batch while
    only one question's graph is held in memory. Returns the detached scores ``[B, 2**n]``.
    """
    B = len(questions)
    rows = []
    for q, r in zip(questions, rewards):
        scores = selector.candidate_scores([q])
        (fgpo_loss(scores, torch.as_tensor(r[None], dtype=scores.dtype), beta) / B).backward()
        rows.append(scores.detach()[0])
    return torch.stack(rows)


def generation_drift(selector, questions: Sequence[Question], rewards: np.ndarray, lr: float, steps: int = 4,
                     beta: float = BETA, progress: bool = False) -> pd.DataFrame:
    """What plain FGPO updates do to free generation, measured step by step and then undone.

    Takes ``steps`` full-batch FGPO updates (AdamW at a constant ``lr``) on ``questions`` and,
    before the first and after each, records on those questions: the expected reward ``J``
    under q (what Eq. 2 raises), the **valid mass** (p_gen summed over the ``2**n`` policy
    strings: the chance that sampling at temperature 1 emits exactly one of them, end of turn
    included; the parser also accepts a completion that runs on after its closing tag, so this
    bounds the parseable mass from below), the greedy format-failure rate, and the mean
    :func:`~fgpo_core.objectives.shared_token_weight` (negative: the gradient lowers the closing
    tokens). The selector's trainable weights are restored afterwards. Returns one row per
    step (step 0 = before training)."""
    from tqdm.auto import tqdm

    from .evaluate import picks_from_generation
    from .objectives import shared_token_weight

    if steps < 1 or lr <= 0:
        raise ValueError("steps must be >= 1 and lr > 0")
    if len(questions) != len(rewards):
        raise ValueError("questions and reward rows must align")
    model = selector.model
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the selector has no trainable parameters: wrap it with add_lora first")
    saved, was_training = [p.detach().clone() for p in params], model.training
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    r = torch.as_tensor(np.asarray(rewards), dtype=torch.float64)
    lengths = selector.cand_mask.sum(1)
    rows = []

    def measure(step: int) -> None:
        model.eval()
        pairs = [selector.scores_and_mass(q) for q in questions]
        scores = torch.stack([a for a, _ in pairs]).double()
        picks, _ = picks_from_generation(selector, questions)
        qd = torch.softmax(scores, -1)
        rows.append({"step": step, "J": float((qd * r).sum(-1).mean()),
                     "valid_mass": float(torch.stack([m for _, m in pairs]).sum(-1).mean()),
                     "format_failures": 100.0 * float((picks < 0).mean()),
                     "closing_weight": float(shared_token_weight(scores, r, lengths, beta).mean())})

    try:
        measure(0)
        for step in tqdm(range(1, steps + 1), desc="FGPO steps", disable=not progress):
            model.train()
            opt.zero_grad()
            fgpo_step(selector, questions, rewards, beta)
            opt.step()
            measure(step)
    finally:
        with torch.no_grad():
            for p, v in zip(params, saved):
                p.copy_(v)
        opt.zero_grad(set_to_none=True)
        model.train(was_training)
    return pd.DataFrame(rows)


def grpo_step(selector, questions: Sequence[Question], correct: np.ndarray, G: int = 6,
              generator: torch.Generator | None = None) -> dict:
    """One on-policy GRPO loss and backward pass (no optimiser step): ``G`` completions per question
    from p_gen at temperature 1, the differential reward ``0.95 r_diff + 0.05 r_fmt`` read from the
    table's correctness, group-normalised advantages (Eq. 3), and the score-function loss.
    Returns the loss, the dead-group fraction and the format-failure rate."""
    from .objectives import dead_groups, grpo_advantages, grpo_loss
    from .rewards import differential_reward

    B = len(questions)
    rewards, losses, fails = [], [], 0
    for q, row in zip(questions, correct):
        with torch.no_grad():
            _, masks = selector.sample(q, G, generator=generator)
        ids = selector.last_sample_ids
        parsed = np.array([m is not None for m in masks])
        fails += int((~parsed).sum())
        ok = np.array([bool(row[m]) if m is not None else False for m in masks])
        r = differential_reward(ok, np.repeat(row[0], G), parsed)
        rewards.append(r)
        adv = grpo_advantages(torch.as_tensor(r[None]))
        # each question's share of the batch loss, back-propagated at once (one graph in memory);
        # a dead group's zero advantages are computed through as TRL does, for an honest cost
        logp = selector.completion_logprobs(q, ids)
        term = grpo_loss(logp[None], adv.to(logp.dtype)) / B
        term.backward()
        losses.append(term.item())
    r = torch.as_tensor(np.stack(rewards))
    return {"loss": float(sum(losses)), "dead_fraction": float(dead_groups(r).double().mean()),
            "format_failures": fails / (G * B)}
