"""GRPO's reward, read from the table: :class:`TableReward` (TRL's reward function, the differential
reward ``0.95 r_diff + 0.05 r_fmt`` of each completion, keeping every group it scored for an
independent dead-group count) and :func:`trl_constant_groups` (how TRL treats a group whose rewards
all equal). :mod:`fgpo_core.algorithms.grpo` trains with them and re-exports both.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..core.rewards import differential_reward
from ..core.subsets import ActionSpace

__all__ = ["TableReward", "trl_constant_groups"]


class TableReward:
    """TRL reward function: the differential reward of each completion, from the table.

    ``correct`` is the table's correctness ``[N, 2**n]`` in the order of the dataset's
    ``qi`` column. Every call's groups are kept in ``groups`` (one array of ``G``
    rewards per prompt) for an independent dead-group count.
    """

    def __init__(
        self, correct: np.ndarray, n_tools: int, G: int, w_diff: float = 0.95, w_fmt: float = 0.05, prefill: str = ""
    ):
        self.correct = np.asarray(correct, dtype=bool)
        self.prefill = prefill
        self.space = ActionSpace(n_tools)
        self.G, self.w_diff, self.w_fmt = G, w_diff, w_fmt
        self.groups: list[np.ndarray] = []
        self.masks: list[list] = []
        self.calls: list[list[np.ndarray]] = []
        self.__name__ = "table_differential_reward"

    @staticmethod
    def _text(c) -> str:
        if isinstance(c, list):  # conversational: [{"role": "assistant", "content": ...}]
            return "".join(m.get("content", "") for m in c if isinstance(m, dict))
        return str(c)

    def score(self, completions, qi) -> tuple[np.ndarray, list[int]]:
        """The differential reward of each completion of question ``qi`` and its parsed subset
        (-1: a format failure, ``r_fmt = 0``)."""
        masks = [self.space.parse(self.prefill + self._text(c)).mask for c in completions]
        parsed = np.array([m >= 0 for m in masks])
        rows = self.correct[np.asarray(qi, dtype=int)]
        ok = np.array([m >= 0 and bool(r[m]) for r, m in zip(rows, masks)])
        return differential_reward(ok, rows[:, 0], parsed, self.w_diff, self.w_fmt), masks

    def action_rewards(self, qi) -> tuple[np.ndarray, np.ndarray]:
        """What this reward gives each subset's canonical string of questions ``qi`` ``[N, 2**n]``,
        and a completion that parses to no subset ``[N]`` (for the closed-form dead-group count)."""
        rows = self.correct[np.asarray(qi, dtype=int)]
        N, A = rows.shape
        ok = differential_reward(rows, rows[:, :1], np.ones_like(rows), self.w_diff, self.w_fmt)
        fail = differential_reward(
            np.zeros(N, dtype=bool), rows[:, 0], np.zeros(N, dtype=bool), self.w_diff, self.w_fmt
        )
        return np.asarray(ok, dtype=float), np.asarray(fail, dtype=float)

    def __call__(self, prompts=None, completions=None, qi=None, **kwargs) -> list[float]:
        r, masks = self.score(completions, qi)
        call = []
        for i in range(0, len(r), self.G):
            call.append(np.asarray(r[i : i + self.G], dtype=float).copy())
            self.masks.append(masks[i : i + self.G])
        self.groups += call
        self.calls.append(call)
        return [float(x) for x in r]

    def dead_fraction(self, last: int | None = None) -> float:
        g = self.groups[-last:] if last else self.groups
        return float(np.mean([np.ptp(x) <= 1e-8 for x in g])) if g else float("nan")


def trl_constant_groups(values: Sequence[float] | None = None, G: int = 6) -> pd.DataFrame:
    """How TRL's GRPOTrainer treats a dead group, one whose ``G`` rewards all equal ``value``, for
    each value (default: every value the differential reward takes): the float32 standard
    deviation it computes (``trl.trainer.utils.nanstd``, as in its group scaling), whether
    ``torch.isclose(std, 0)`` counts the group in ``frac_reward_zero_std``
    (``trl_counts_dead``), and the advantage ``(r - mean) / (std + 1e-4)`` each of its
    completions then gets (``advantage``). A value whose float32 mean over ``G`` copies rounds
    away from itself leaves a standard deviation of rounding residue: TRL counts that group as
    live and gives its completions one tiny equal advantage instead of zero."""
    import torch
    from trl.trainer.utils import nanstd

    if values is None:
        grid = np.array(np.meshgrid([False, True], [False, True], [False, True])).reshape(3, -1)
        values = np.unique(differential_reward(*grid))
    rows = []
    for v in values:
        r = torch.full((1, G), float(v), dtype=torch.float32)
        std = nanstd(r, dim=1)
        mean = torch.nanmean(r, dim=1)
        rows.append(
            {
                "reward": float(v),
                "float32_std": float(std),
                "trl_counts_dead": bool(torch.isclose(std, torch.zeros_like(std))),
                "advantage": float(((r - mean[:, None]) / (std[:, None] + 1e-4))[0, 0]),
            }
        )
    return pd.DataFrame(rows)
