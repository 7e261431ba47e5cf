"""DPO: the table's reward-optimal subset preferred over its worst, through TRL's DPOTrainer
(pairs from :func:`~fgpo_core.algorithms.imitation.dpo_pairs`; the reference is the adapter
as DPO starts: the base model for a fresh adapter, the format warm-up for a run from it)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from .common import trainer_resume
from .imitation import ImitationConfig, dpo_pairs, trainer_args

__all__ = ["dpo_dataset", "train_dpo"]


def dpo_dataset(selector, questions: Sequence[Question], rewards: np.ndarray):
    """Tokenized preference pairs in TRL's layout (``prompt_ids``, ``chosen_ids``, ``rejected_ids``),
    tokenized as the selector scores them."""
    from datasets import Dataset

    rows = [
        {
            "prompt_ids": selector.prompt_ids(questions[i]),
            "chosen_ids": list(selector.candidates[c]),
            "rejected_ids": list(selector.candidates[r]),
        }
        for i, c, r in dpo_pairs(rewards)
    ]
    if not rows:
        raise ValueError("every reward row is constant: DPO has no preference pair to learn from")
    return Dataset.from_list(rows)


def train_dpo(selector, questions: Sequence[Question], rewards: np.ndarray, cfg: ImitationConfig, out_dir):
    """DPO on (table argmax, table argmin) pairs. The reference is the adapter as DPO starts (TRL
    keeps a frozen copy of it): the base model for a fresh adapter, the format warm-up for a run
    started from it. The pairs are given to TRL already tokenized (see
    :func:`fgpo_core.algorithms.sft.train_sft`). Interrupted, it resumes from its last checkpoint
    in ``out_dir``."""
    from trl import DPOConfig, DPOTrainer

    class PreTokenizedDPO(DPOTrainer):
        def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
            return dataset  # already tokenized by dpo_dataset

    ds = dpo_dataset(selector, questions, rewards)
    args = trainer_args(DPOConfig, out_dir, cfg, beta=cfg.dpo_beta, max_length=None)
    tr = PreTokenizedDPO(model=selector.model, args=args, train_dataset=ds, processing_class=selector.tokenizer)
    tr.train(resume_from_checkpoint=trainer_resume(out_dir, cfg))
    if "ref" in getattr(selector.model, "peft_config", {}):  # TRL's frozen reference copy: not part of the result
        selector.model.delete_adapter("ref")
    return tr.state.log_history
