"""Analyses a chapter runs on a selector, beyond scoring its picks."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ..algorithms.common import trainable_parameters
from ..algorithms.fgpo import fgpo_step
from ..core.estimators import BETA, shared_token_weight
from ..genomics.benchmarks.schema import Question
from .picks import picks_from_generation

__all__ = ["generation_drift"]


def generation_drift(selector, questions: Sequence[Question], rewards: np.ndarray, lr: float, steps: int = 4,
                     beta: float = BETA, progress: bool = False) -> pd.DataFrame:
    """What plain FGPO updates do to free generation, measured step by step and then undone.

    Takes ``steps`` full-batch FGPO updates (AdamW at a constant ``lr``) on ``questions`` and,
    before the first and after each, records on those questions: the expected reward ``J``
    under q (what Eq. 2 raises), ``p_gen_valid`` (p_gen summed over the ``2**n`` policy
    strings: the chance that sampling at temperature 1 emits exactly one of them, end of turn
    included; the parser also accepts a completion that runs on after its closing tag, so this
    bounds the parseable mass from below), the greedy format-failure rate, and the mean
    :func:`~fgpo_core.core.estimators.shared_token_weight` (negative: the gradient lowers the
    closing tokens). The selector's trainable weights are restored afterwards. Returns one row
    per step (step 0 = before training)."""
    from tqdm.auto import tqdm

    if steps < 1 or lr <= 0:
        raise ValueError("steps must be >= 1 and lr > 0")
    if len(questions) != len(rewards):
        raise ValueError("questions and reward rows must align")
    model = selector.model
    params = trainable_parameters(model)
    saved, was_training = [p.detach().clone() for p in params], model.training
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    r = torch.as_tensor(np.asarray(rewards), dtype=torch.float64)
    lengths = selector.cand_mask.sum(1)
    rows = []

    def measure(step: int) -> None:
        model.eval()
        pairs = [selector.scores_and_p_gen(question) for question in questions]
        scores = torch.stack([a for a, _ in pairs]).double()
        picks, _ = picks_from_generation(selector, questions)
        q = torch.softmax(scores, -1)
        rows.append({"step": step, "J": float((q * r).sum(-1).mean()),
                     "p_gen_valid": float(torch.stack([m for _, m in pairs]).sum(-1).mean()),
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
