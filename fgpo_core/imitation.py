"""The SFT and DPO baselines through TRL's trainers, with targets read from the reward table.

* **SFT** imitates each training question's reward-optimal subset: the policy string
  of ``argmax_a r(s, a)`` (Eq. 1, so among correct subsets the one with fewest tools)
  is the completion of the selector's prompt.
* **DPO** prefers that string (chosen, as the paper) over the string of the
  lowest-reward subset (rejected; ties broken by the fewest tools, then the lowest
  mask), with ``beta`` 0.3 (the paper also tried 0.1 and 0.5).

Both train the same LoRA adapter on the same prompts as FGPO and GRPO. Questions
whose row is constant (every subset earns the same reward) carry no preference and
are skipped by DPO.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .benchmarks.schema import Question
from .subsets import ActionSpace

__all__ = ["ImitationConfig", "sft_targets", "dpo_pairs", "train_sft", "train_dpo"]


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
    seed: int = 0
    """Seeds the order."""


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


def _messages(selector, q: Question) -> list[dict]:
    from .selectors.prompt import selector_messages

    return selector_messages(q, selector.slots(), selector.keep)


def _args(cls, out_dir, cfg: ImitationConfig, **kw):
    # gradient checkpointing (the paper's memory saver at 7B) stays off: a 135M selector fits
    # easily, and checkpointing disables the key-value cache the candidate scores reuse
    return cls(output_dir=str(out_dir), learning_rate=cfg.lr, lr_scheduler_type="cosine", warmup_steps=0,
               num_train_epochs=cfg.epochs, per_device_train_batch_size=cfg.batch_size, gradient_accumulation_steps=1,
               logging_steps=1, save_strategy="epoch", save_total_limit=2, report_to=[], use_cpu=True, bf16=False,
               seed=cfg.seed, data_seed=cfg.seed, disable_tqdm=True, dataloader_num_workers=0,
               gradient_checkpointing=False, **kw)


def train_sft(selector, questions: Sequence[Question], rewards: np.ndarray, cfg: ImitationConfig, out_dir):
    """Supervised imitation of the table's best subset; returns the trainer's log history."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    space = ActionSpace(selector.space.n_tools)
    best = sft_targets(rewards)
    ds = Dataset.from_list([{"prompt": _messages(selector, q),
                             "completion": [{"role": "assistant", "content": space.to_string(int(m))}]}
                            for q, m in zip(questions, best)])
    args = _args(SFTConfig, out_dir, cfg, completion_only_loss=True, max_length=None, packing=False)
    tr = SFTTrainer(model=selector.model, args=args, train_dataset=ds, processing_class=selector.tokenizer)
    tr.train()
    return tr.state.log_history


def train_dpo(selector, questions: Sequence[Question], rewards: np.ndarray, cfg: ImitationConfig, out_dir):
    """DPO on (table argmax, table argmin) pairs; the reference is the adapter-free base model."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    space = ActionSpace(selector.space.n_tools)
    rows = [{"prompt": _messages(selector, questions[i]),
             "chosen": [{"role": "assistant", "content": space.to_string(c)}],
             "rejected": [{"role": "assistant", "content": space.to_string(r)}]} for i, c, r in dpo_pairs(rewards)]
    if not rows:
        raise ValueError("every reward row is constant: DPO has no preference pair to learn from")
    args = _args(DPOConfig, out_dir, cfg, beta=cfg.dpo_beta, max_length=None)
    tr = DPOTrainer(model=selector.model, args=args, train_dataset=Dataset.from_list(rows),
                    processing_class=selector.tokenizer)
    tr.train()
    return tr.state.log_history
