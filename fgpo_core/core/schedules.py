"""The learning-rate schedule every training loop of the library shares (the policy head, the LM
selector, the evidence readers): cosine decay to zero with no warm-up, as the paper trains
(Table 6). A learning-rate multiplier knows nothing of models, so it lives here, below both the
training loops (:mod:`fgpo_core.algorithms`) and what runs them (:mod:`fgpo_core.experiments`,
:mod:`fgpo_core.reasoners`)."""

from __future__ import annotations

import math

import torch

__all__ = ["cosine_factor", "cosine_schedule"]


def cosine_factor(step: int, total_steps: int) -> float:
    """The multiplier of the peak learning rate after ``step`` of ``total_steps`` optimiser steps:
    ``(1 + cos(pi * min(step, total) / total)) / 2``, from 1 at the start to 0 at the end and after."""
    return 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))


def cosine_schedule(opt: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Cosine decay from the optimiser's learning rate to zero over ``total_steps`` (no warm-up),
    as the paper trains (Table 6)."""
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_factor(s, total_steps))
