"""What the two offline baselines, SFT and DPO, share: their config and their targets from the table.

* **SFT** imitates each training question's reward-optimal subset: the policy string
  of ``argmax_a r(s, a)`` (Eq. 1, so among correct subsets the one with fewest tools)
  is the completion of the selector's prompt.
* **DPO** prefers that string (chosen, as the paper) over the string of the
  lowest-reward subset (rejected; ties broken by the fewest tools, then the lowest
  mask), with ``beta`` 0.3 (the paper also tried 0.1 and 0.5).

Both train the same LoRA adapter on the same prompts as FGPO and GRPO (the loops are
:mod:`.sft` and :mod:`.dpo`, through TRL's trainers). Questions whose row is constant
(every subset earns the same reward) carry no preference and are skipped by DPO.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ImitationConfig", "sft_targets", "dpo_pairs", "micro_batching", "trainer_args"]


@dataclass
class ImitationConfig:
    """An SFT or DPO run of the LM selector (TRL SFTTrainer / DPOTrainer)."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay)."""
    epochs: int = 4
    """Passes over the training questions (the paper: 4)."""
    batch_size: int = 16
    """Questions per optimiser step (the paper: 16)."""
    dpo_beta: float = 0.3
    """DPO's beta (the paper: 0.3; 0.1 and 0.5 also tried)."""
    micro_batch: int = 0
    """Questions per forward pass; gradients accumulate over ``batch_size / micro_batch`` passes
    so an optimiser step still sees ``batch_size`` questions (0: the whole batch in one pass).
    DPO at CPU scale needs it: chosen, rejected and the reference pass over 16 prompts exceeded 24 GB."""
    seed: int = 0
    """Seeds the order."""
    save_steps: int = 4
    """Optimiser steps between checkpoints (an interrupted run resumes from the last; two are kept)."""
    lora_r: int = 16
    """LoRA rank of a fresh adapter (a run that continues another's adapter keeps that one's rank)."""
    lora_alpha: int = 32
    """LoRA alpha of a fresh adapter."""


def sft_targets(rewards: np.ndarray) -> np.ndarray:
    """The reward-optimal subset of each question (the first maximum: on ties, the lower mask)."""
    return np.asarray(rewards).argmax(-1)


def dpo_pairs(rewards: np.ndarray) -> list[tuple[int, int, int]]:
    """``(question index, chosen mask, rejected mask)`` for every question whose row is not constant."""
    rewards = np.asarray(rewards)
    out = []
    for i, r in enumerate(rewards):
        if np.ptp(r) <= 1e-12:
            continue
        out.append((i, int(r.argmax()), int(r.argmin())))
    return out


def micro_batching(cfg: ImitationConfig) -> tuple[int, int]:
    """``(examples per pass, passes per optimiser step)`` for ``cfg``; their product is ``batch_size``."""
    if cfg.batch_size < 1 or cfg.micro_batch < 0:
        raise ValueError(f"batch_size must be >= 1 and micro_batch >= 0, got {cfg.batch_size} and {cfg.micro_batch}")
    mb = cfg.micro_batch or cfg.batch_size
    if cfg.batch_size % mb:
        raise ValueError(f"micro_batch {mb} must divide batch_size {cfg.batch_size}")
    return mb, cfg.batch_size // mb


def trainer_args(cls, out_dir, cfg: ImitationConfig, **kw):
    """TRL training arguments of class ``cls`` (``SFTConfig`` or ``DPOConfig``) for ``cfg`` on CPU."""
    # gradient checkpointing (the paper's memory saver at 7B) stays off: a 135M selector fits
    # easily, and checkpointing disables the key-value cache the candidate scores reuse
    mb, accum = micro_batching(cfg)
    if cfg.save_steps < 1:
        raise ValueError(f"save_steps must be >= 1, got {cfg.save_steps}")
    return cls(
        output_dir=str(out_dir),
        learning_rate=cfg.lr,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        num_train_epochs=cfg.epochs,
        per_device_train_batch_size=mb,
        gradient_accumulation_steps=accum,
        logging_steps=1,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=2,
        report_to=[],
        use_cpu=True,
        bf16=False,
        seed=cfg.seed,
        data_seed=cfg.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        gradient_checkpointing=False,
        **kw,
    )
