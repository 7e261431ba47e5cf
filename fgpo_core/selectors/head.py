"""The policy-head selector: a small trainable head on frozen prompt features.

For each question the head maps the cached features of the selector's prompt
(:mod:`.features`) to one candidate score per subset, ``l(.|s) = head(x_s)``; ``q = softmax(l / T)``
(``T``, the listwise temperature, is 1 unless an ablation sets it). Sampling draws from ``q``
itself, so for this selector ``p_gen = q`` and no completion can fail the format: the
estimators differ only in how they use the rewards. No tool name or description enters;
the head knows subsets only by their index.
"""
from __future__ import annotations

import torch

__all__ = ["PolicyHead"]


class PolicyHead(torch.nn.Module):
    """Linear (``hidden=0``) or one-hidden-layer MLP head giving ``n_actions`` candidate scores.

    The last layer starts at zero, so every question starts at the uniform policy.
    """

    def __init__(self, in_dim: int, n_actions: int, hidden: int = 0, temperature: float = 1.0):
        super().__init__()
        if in_dim < 1 or n_actions < 2 or hidden < 0 or temperature <= 0:
            raise ValueError("need in_dim >= 1, n_actions >= 2, hidden >= 0 and temperature > 0")
        last = torch.nn.Linear(hidden or in_dim, n_actions)
        torch.nn.init.zeros_(last.weight)
        torch.nn.init.zeros_(last.bias)
        self.net = last if not hidden else torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.GELU(), last)
        self.n_actions, self.hidden, self.temperature = n_actions, hidden, temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Candidate scores ``[B, n_actions]`` (the logits of q, divided by the temperature)."""
        return self.net(x) / self.temperature

    def q(self, x: torch.Tensor) -> torch.Tensor:
        """The policy ``q(.|s)`` (and, for this selector, p_gen) ``[B, n_actions]``."""
        return torch.softmax(self(x), -1)
