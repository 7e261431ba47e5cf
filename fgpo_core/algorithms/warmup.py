"""The format warm-up: a short SFT of the LM selector's adapter on policy strings of subsets
drawn uniformly at random, until free generation puts its mass on the policy strings.

The untrained 135M selector puts only a few per cent of its generation mass on the ``2**n``
policy strings, so GRPO starts with almost no signal and free generation fails the format on
most questions (the chapter "FGPO versus GRPO" measures both). The warm-up teaches the format
and nothing else: every training question's target subset is drawn uniformly at random
(afresh each epoch, seeded), so no reward information enters. After each epoch p_gen's mass on
the policy strings is measured on the dev questions; the warm-up stops once its mean reaches
``target_mass``. Every method of the LM selector (FGPO, GRPO, SFT, DPO and the prompted
baseline) then starts from this one adapter.

Two ways to show the uniform targets (``WarmupConfig.targets``):

- ``"sampled"``: TRL's SFTTrainer on one uniformly drawn policy string per question and epoch
  (loss on the completion tokens only);
- ``"all"``: the same imitation taken in expectation, every policy string of every question at
  once: the loss is the cross-entropy from the uniform distribution over the ``2**n`` strings,
  ``-(1/|B|) sum_s (1/2**n) sum_a log p_gen(a|s)`` (:func:`uniform_format_loss`), read from the
  selector's one scoring pass per question (the prompt's keys and values shared by every
  candidate). It has no sampling noise in its targets; this is what sampling a string per
  question estimates, so it is the book's own principle applied to the warm-up: where the
  strings can be enumerated, enumerate them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from ..io import write_json
from .imitation import ImitationConfig
from .sft import sft_on_subsets

__all__ = [
    "WarmupConfig",
    "TARGETS",
    "warmup_targets",
    "format_mass",
    "uniform_format_loss",
    "sampled_format",
    "train_warmup",
]

TARGETS = ("sampled", "all")
"""How the uniform targets are shown: one drawn string per question (TRL's SFT) or all of them (exact)."""


@dataclass
class WarmupConfig:
    """The format warm-up of the LM selector (TRL's SFTTrainer on uniformly drawn subsets)."""

    lr: float = 1e-4
    """Peak learning rate of each epoch (cosine decay within the epoch)."""
    max_epochs: int = 4
    """Passes over the training questions at most."""
    target_mass: float = 0.95
    """Stop once the mean p_gen mass on the policy strings over the dev questions reaches this."""
    batch_size: int = 16
    """Questions per optimiser step."""
    lora_r: int = 16
    """LoRA rank (the adapter every method then continues)."""
    lora_alpha: int = 32
    """LoRA alpha."""
    seed: int = 0
    """Seeds the drawn subsets and the order."""
    targets: str = "sampled"
    """``"sampled"``: TRL's SFT on one uniformly drawn policy string per question and epoch;
    ``"all"``: every string at once, the expectation of that imitation (:func:`uniform_format_loss`)."""
    mass_weight: float = 0.0
    """With ``targets="all"``: the loss also subtracts ``mass_weight * log sum_a p_gen(a|s)``, the log
    of free generation's mass on the policy strings (the uniform cross-entropy alone trades some
    of that mass for an even spread over the strings)."""


def warmup_targets(n_questions: int, n_actions: int, seed: int, epoch: int) -> np.ndarray:
    """One uniformly drawn subset per question for one epoch: independent of every reward."""
    return np.random.default_rng([seed, epoch]).integers(0, n_actions, n_questions)


def format_mass(selector, questions: Sequence[Question]) -> np.ndarray:
    """Per question, p_gen's total mass on the ``2**n`` policy strings (free generation at
    temperature 1 emits a string that parses with this probability)."""
    return np.array([float(selector.scores_and_p_gen(q)[1].sum()) for q in questions])


def sampled_format(
    selector, questions: Sequence[Question], G: int = 8, temperature: float = 1.0, seed: int = 0, progress: bool = False
):
    """Free generation's format, measured by sampling ``G`` completions per question at
    ``temperature``: per question, the share that parse to a subset (``parse_rate``) and the
    share that are exactly a policy string's canonical tokens (``canonical_rate``, whose
    expectation is :func:`format_mass`). The two differ by completions that spell a policy
    string in other tokens, or run on past the closing tag (both still parse). Seeded."""
    import pandas as pd
    import torch
    from tqdm.auto import tqdm

    if G < 1:
        raise ValueError(f"G must be at least 1, got {G}")
    gen = torch.Generator().manual_seed(seed)
    canonical = {tuple(c) for c in selector.candidates}
    rows = []
    for q in tqdm(questions, desc="sampled format", disable=not progress):
        _, picks = selector.sample(q, G, temperature=temperature, generator=gen)
        rows.append(
            {
                "question_id": q.id,
                "parse_rate": float(np.mean(np.asarray(picks) >= 0)),
                "canonical_rate": float(np.mean([tuple(i) in canonical for i in selector.last_sample_ids])),
            }
        )
    return pd.DataFrame(rows)


def uniform_format_loss(selector, question: Question, mass_weight: float = 0.0) -> tuple:
    """One question's cross-entropy from the uniform distribution over the ``2**n`` policy
    strings to free generation, ``-(1/2**n) sum_a log p_gen(a|s)``, each string's log-probability
    the raw sum of its tokens' (the end-of-turn token included), with gradients; with
    ``mass_weight`` minus ``mass_weight * log sum_a p_gen(a|s)``. Also returns the detached mass
    ``sum_a p_gen(a|s)``. The cross-entropy is the expectation of the sequence-level SFT loss on
    one string drawn uniformly; it equals ``-log M + KL(uniform || p_gen / M) + log 2**n`` with
    ``M`` the mass, so minimising it raises the mass and spreads it evenly, trading one for the
    other where the adapter cannot have both; ``mass_weight`` leans that trade towards the mass."""
    import torch

    log_p = selector.candidate_scores([question], reduce="sum")[0]
    log_mass = torch.logsumexp(log_p, 0)
    return -log_p.mean() - mass_weight * log_mass, float(log_mass.detach().exp())


def _exact_epoch(selector, questions: Sequence[Question], cfg: "WarmupConfig", epoch: int, progress: bool) -> list:
    """One epoch of :func:`uniform_format_loss` in minibatches of ``cfg.batch_size`` questions
    (AdamW, cosine decay within the epoch, seeded order), back-propagated one question at a
    time; returns a log row per step."""
    import math

    import torch
    from tqdm.auto import tqdm

    from ..core.schedules import cosine_schedule
    from .common import trainable_parameters

    params = trainable_parameters(selector.model)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    n_batches = math.ceil(len(questions) / cfg.batch_size)
    sched = cosine_schedule(opt, n_batches)
    order = np.random.default_rng([cfg.seed, epoch]).permutation(len(questions))
    logs = []
    for b in tqdm(range(n_batches), desc=f"warm-up epoch {epoch}", disable=not progress, leave=False):
        idx = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
        opt.zero_grad()
        losses, masses = [], []
        for i in idx:
            loss, mass = uniform_format_loss(selector, questions[i], cfg.mass_weight)
            (loss / len(idx)).backward()
            losses.append(float(loss.detach()))
            masses.append(mass)
        opt.step()
        sched.step()
        logs.append(
            {
                "epoch": epoch,
                "step": b + 1,
                "loss": float(np.mean(losses)),
                "train_mass": float(np.mean(masses)),
                "learning_rate": sched.get_last_lr()[0],
            }
        )
    return logs


RESUME_FILE = "resume.pt"


def train_warmup(
    selector,
    train_qs: Sequence[Question],
    dev_qs: Sequence[Question],
    cfg: WarmupConfig,
    out_dir,
    progress: bool = True,
) -> dict:
    """Warm ``selector.model`` (LoRA-wrapped) up on the format; returns the log: the dev mass
    before training and after each epoch, and the epochs taken. ``out_dir`` holds TRL's output,
    ``warmup.json`` (the log, rewritten after every epoch) and ``resume.pt`` (the adapter's
    trainable weights after the last finished epoch, with the log).

    Interrupted, the warm-up resumes from the last finished epoch: called again on the same
    ``out_dir`` with the same config, it loads that epoch's weights and goes on; a folder
    holding a warm-up with another config is refused."""
    from tqdm.auto import tqdm

    from .common import resume_checkpoint, save_checkpoint, trainable_parameters

    if not 0 < cfg.target_mass <= 1:
        raise ValueError(f"target_mass must lie in (0, 1], got {cfg.target_mass}")
    if cfg.targets not in TARGETS:
        raise ValueError(f"targets must be one of {', '.join(TARGETS)}, got {cfg.targets!r}")
    if cfg.max_epochs < 1:
        raise ValueError(f"max_epochs must be at least 1, got {cfg.max_epochs}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    params = trainable_parameters(selector.model)
    curve, logs = [], []
    state = resume_checkpoint(out / RESUME_FILE)  # None: none yet, or torn (moved aside)
    if state is not None:
        same = {k: v for k, v in state["config"].items() if k != "max_epochs"} == {
            k: v for k, v in asdict(cfg).items() if k != "max_epochs"
        }
        if not same:
            raise ValueError(
                f"{out} holds a warm-up with another config {state['config']}; use another folder or delete it"
            )
        for p, v in zip(params, state["params"]):
            p.data.copy_(v)
        curve, logs = list(state["curve"]), list(state["log"])
    selector.model.eval()
    if not curve:
        curve = [{"epoch": 0, "dev_mass_mean": float(format_mass(selector, dev_qs).mean())}]
    bar = tqdm(
        total=cfg.max_epochs,
        initial=min(curve[-1]["epoch"], cfg.max_epochs),
        desc="format warm-up",
        disable=not progress,
    )
    for epoch in range(curve[-1]["epoch"] + 1, cfg.max_epochs + 1):
        if curve[-1]["dev_mass_mean"] >= cfg.target_mass:
            break
        selector.model.train()
        if cfg.targets == "all":
            logs += _exact_epoch(selector, train_qs, cfg, epoch, progress)
        else:
            targets = warmup_targets(len(train_qs), selector.space.n_actions, cfg.seed, epoch)
            logs += sft_on_subsets(
                selector,
                train_qs,
                targets,
                ImitationConfig(lr=cfg.lr, epochs=1, batch_size=cfg.batch_size, seed=cfg.seed + epoch),
                out / f"epoch{epoch}",
            )
        selector.model.eval()
        mass = format_mass(selector, dev_qs)
        curve.append({"epoch": epoch, "dev_mass_mean": float(mass.mean()), "dev_mass_min": float(mass.min())})
        save_checkpoint(
            out / RESUME_FILE,
            {"config": asdict(cfg), "curve": curve, "log": logs, "params": [p.detach().clone() for p in params]},
        )
        write_json(out / "warmup.json", {"config": asdict(cfg), "curve": curve}, indent=1)
        bar.update()
    bar.close()
    reached = curve[-1]["dev_mass_mean"] >= cfg.target_mass
    return {"curve": curve, "epochs": curve[-1]["epoch"], "reached_target": bool(reached), "log": logs}
