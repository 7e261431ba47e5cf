"""The reward table: correctness of the frozen reasoner for every (question, subset).

Stage 1 of FGPO evaluates the reasoner once on every question ``s`` and every
subset ``a`` of the tool library; stage 2 only looks rewards up. A
:class:`RewardTable` holds the correctness matrix ``correct[s, a]`` (actions
indexed by bitmask, see :mod:`fgpo_core.subsets`) and derives from it the
rewards of Eq. 1, the differential reward of the GRPO arm, and the ceilings
that frame every result: No-Tool, Random, All-Tools, every fixed subset, the
best fixed one and the per-question oracle.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from .rewards import LAMBDA, differential_reward, eq1_reward
from .subsets import ActionSpace

__all__ = ["RewardTable"]


@dataclass
class RewardTable:
    """Correctness of every subset on every question, shape ``[N, 2**n_tools]``."""

    correct: np.ndarray
    n_tools: int
    family: np.ndarray | None = None
    tool_names: tuple[str, ...] | None = None
    lam: float = LAMBDA
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.correct = np.asarray(self.correct)
        if self.correct.dtype != bool:
            if not np.isin(self.correct, (0, 1)).all():
                raise ValueError("correct must hold booleans or 0/1")
            self.correct = self.correct.astype(bool)
        self.space = ActionSpace(self.n_tools)
        if self.correct.ndim != 2 or self.correct.shape[1] != self.space.n_actions:
            raise ValueError(f"correct must be [N, {self.space.n_actions}] for {self.n_tools} tools, "
                             f"got {self.correct.shape}")
        if self.family is not None:
            self.family = np.asarray(self.family)
            if self.family.shape != (self.n_questions,):
                raise ValueError(f"family must have one entry per question ({self.n_questions})")
        if self.tool_names is not None and len(self.tool_names) != self.n_tools:
            raise ValueError(f"tool_names needs {self.n_tools} names")

    # -- basic views ---------------------------------------------------------
    @property
    def n_questions(self) -> int:
        return self.correct.shape[0]

    @property
    def n_actions(self) -> int:
        return self.space.n_actions

    def names(self) -> list[str]:
        return list(self.tool_names) if self.tool_names else [f"T{i + 1}" for i in range(self.n_tools)]

    def labels(self) -> list[str]:
        """Subset labels indexed by mask ("none", "T1", "T1+T2", ...)."""
        return self.space.labels(self.names())

    def rewards(self, kind: str = "eq1", lam: float | None = None) -> np.ndarray:
        """Reward matrix ``[N, A]``: ``"eq1"`` (Eq. 1 with ``lam``, default the
        table's), ``"binary"`` (Eq. 1 with lambda = 0) or ``"differential"``."""
        if kind == "eq1":
            return eq1_reward(self.correct, self.space.sizes[None, :], self.n_tools,
                              self.lam if lam is None else lam)
        if kind == "binary":
            return eq1_reward(self.correct, self.space.sizes[None, :], self.n_tools, 0.0)
        if kind == "differential":
            return differential_reward(self.correct, self.correct[:, :1])
        raise ValueError(f"unknown reward kind {kind!r}: use 'eq1', 'binary' or 'differential'")

    def subset(self, rows) -> "RewardTable":
        """A table over a subset of questions (an index array or boolean mask)."""
        fam = None if self.family is None else self.family[rows]
        return RewardTable(self.correct[rows], self.n_tools, fam, self.tool_names, self.lam, dict(self.meta))

    def restrict_tools(self, tools) -> "RewardTable":
        """The table of a sub-library: only subsets built from ``tools`` (slots),
        re-indexed as a library of ``len(tools)`` tools."""
        tools = tuple(tools)
        small = ActionSpace(len(tools))
        cols = [self.space.mask(tools[i] for i in small.tools(m)) for m in range(small.n_actions)]
        names = None if self.tool_names is None else tuple(self.tool_names[t] for t in tools)
        return RewardTable(self.correct[:, cols], len(tools), self.family, names, self.lam, dict(self.meta))

    # -- ceilings ------------------------------------------------------------
    def fixed_subset_accuracy(self) -> pd.Series:
        """Accuracy (%) of always choosing each subset, indexed by label."""
        return pd.Series(100.0 * self.correct.mean(0), index=self.labels(), name="accuracy")

    def oracle_actions(self, kind: str = "eq1") -> np.ndarray:
        """Per question, the reward-optimal subset (ties to the lowest mask)."""
        return self.rewards(kind).argmax(1)

    def ceilings(self) -> pd.Series:
        """The reference points of every comparison, in percent.

        ``no_tool``, ``random`` (uniform over all subsets, in expectation),
        ``all_tools``, ``best_fixed`` (and its label), ``oracle`` (some subset
        is correct), ``empty_optimal`` (questions whose Eq. 1 optimum is the
        empty subset) and ``outcome_degenerate`` (all subsets agree on
        correctness).
        """
        fixed = self.fixed_subset_accuracy()
        c = self.correct
        return pd.Series({
            "no_tool": 100.0 * c[:, 0].mean(),
            "random": 100.0 * c.mean(),
            "all_tools": 100.0 * c[:, -1].mean(),
            "best_fixed": fixed.max(),
            "best_fixed_subset": fixed.idxmax(),
            "oracle": 100.0 * c.any(1).mean(),
            "empty_optimal": 100.0 * (self.oracle_actions() == 0).mean(),
            "outcome_degenerate": 100.0 * self.outcome_degenerate().mean(),
        })

    def outcome_degenerate(self) -> np.ndarray:
        """Boolean ``[N]``: every subset gives the same correctness."""
        return self.correct.all(1) | (~self.correct).all(1)

    def outcome_degenerate_by_library_size(self) -> pd.Series:
        """Outcome-degenerate fraction (%) for each library size, averaged over
        all sub-libraries of that size (the paper's Figure 5d)."""
        out = {}
        for size in range(1, self.n_tools + 1):
            vals = [self.restrict_tools(tools).outcome_degenerate().mean()
                    for tools in combinations(range(self.n_tools), size)]
            out[size] = 100.0 * float(np.mean(vals))
        return pd.Series(out, name="outcome_degenerate")

    def single_tool_removal(self) -> pd.DataFrame:
        """The cost (points) to the oracle and to the best fixed subset of removing each tool
        from the library, computed from the table alone (the paper's Table 12)."""
        full = self.ceilings()
        rows = {}
        for t, name in enumerate(self.names()):
            rest = self.restrict_tools([u for u in range(self.n_tools) if u != t])
            c = rest.ceilings()
            rows[f"-{name}"] = {"delta_oracle": c["oracle"] - full["oracle"],
                                "delta_best_fixed": c["best_fixed"] - full["best_fixed"]}
        return pd.DataFrame.from_dict(rows, orient="index")
