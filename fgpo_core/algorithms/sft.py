"""SFT: supervised imitation of each training question's reward-optimal subset, through TRL's
SFTTrainer (the target is :func:`~fgpo_core.algorithms.imitation.sft_targets` of the table's rows)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from .common import trainer_resume
from .imitation import ImitationConfig, sft_targets, trainer_args

__all__ = ["train_sft", "sft_on_subsets"]


def sft_on_subsets(selector, questions: Sequence[Question], masks: Sequence[int], cfg: ImitationConfig, out_dir):
    """Supervised training of each question's prompt followed by the policy string of its
    subset in ``masks`` (TRL's SFTTrainer, loss on the completion only); returns the log history.
    Interrupted, it resumes from its last checkpoint in ``out_dir``
    (:func:`~fgpo_core.algorithms.common.trainer_resume`).

    The examples are given to TRL already tokenized, as the selector tokenizes them when it
    scores and generates (prompt tokens, then the policy string's own tokens): joined as
    text, ``<answer>`` and ``</answer>`` would merge into one token for the empty subset and
    the model would be trained on a context it never sees."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if len(masks) != len(questions):
        raise ValueError(f"{len(masks)} target subsets for {len(questions)} questions")
    rows = []
    for q, m in zip(questions, masks):
        prompt, cand = selector.prompt_ids(q), selector.candidates[int(m)]
        rows.append({"input_ids": prompt + cand, "completion_mask": [0] * len(prompt) + [1] * len(cand)})
    args = trainer_args(SFTConfig, out_dir, cfg, completion_only_loss=True, max_length=None, packing=False)
    tr = SFTTrainer(
        model=selector.model, args=args, train_dataset=Dataset.from_list(rows), processing_class=selector.tokenizer
    )
    tr.train(resume_from_checkpoint=trainer_resume(out_dir, cfg))
    return tr.state.log_history


def train_sft(selector, questions: Sequence[Question], rewards: np.ndarray, cfg: ImitationConfig, out_dir):
    """Supervised imitation of the table's best subset (:func:`sft_targets`); returns the
    trainer's log history."""
    return sft_on_subsets(selector, questions, sft_targets(rewards), cfg, out_dir)
