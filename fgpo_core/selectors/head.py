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

__all__ = ["PolicyHead", "StackedHead"]


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


class StackedHead(torch.nn.Module):
    """A frozen head with a fresh one on top: candidate scores ``base(x) + head(x)``.

    The policy-head analogue of merging one stage's LoRA adapter into the weights and training
    a fresh adapter for the next stage: the new head starts at zero, so the stacked policy
    starts where the frozen one ended, and the two stages may differ in width.
    """

    def __init__(self, base: torch.nn.Module, head: PolicyHead):
        super().__init__()
        if getattr(base, "n_actions", head.n_actions) != head.n_actions:
            raise ValueError("the stacked heads must score the same actions")
        self.base, self.head, self.n_actions = base, head, head.n_actions
        for p in self.base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            b = self.base(x)
        return b + self.head(x)

    def q(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self(x), -1)
