"""The reward table: correctness of the frozen reasoner for every (question, subset).

Stage 1 of FGPO evaluates the reasoner once on every question ``s`` and every
subset ``a`` of the tool library; stage 2 only looks rewards up. A
:class:`RewardTable` holds the correctness matrix ``correct[s, a]`` (actions
indexed by bitmask, see :mod:`fgpo_core.core.subsets`) with the ids of its
questions, the rewards it was built with (Eq. 1 and the differential reward of
the GRPO arm) and its manifest. It selects its own rows for a list of questions
and derives the reference points of every comparison: No-Tool, Random,
All-Tools, every fixed subset, the best fixed one and the per-question oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.rewards import LAMBDA, differential_reward, eq1_reward
from ..core.subsets import ActionSpace

__all__ = ["RewardTable", "BASELINE_NAMES"]

BASELINE_NAMES = ("No-Tool", "Random", "All-Tools", "BestFixed*", "Oracle")
"""The table-only reference rows of Table 2, in order (BestFixed* is the best single subset
on these very questions, hence the star)."""

_PER_QUESTION = ("correct", "family", "question_ids", "tokens", "predictions", "letter_logprobs")


@dataclass
class RewardTable:
    """Correctness of every subset on every question, shape ``[N, 2**n_tools]``.

    ``question_ids`` name the rows; ``tokens`` (the reasoner's input tokens) and
    ``predictions`` (its answer letters) are ``[N, 2**n]`` and ``letter_logprobs`` (its
    log-probabilities of A-D) ``[N, 2**n, 4]`` when the table was built by
    :func:`~fgpo_core.table.build.build_table`; ``built_rewards`` holds the rewards stored
    at build time (``"eq1"``, ``"differential"``), which :meth:`rewards` returns.
    """

    correct: np.ndarray
    n_tools: int
    family: np.ndarray | None = None
    tool_names: tuple[str, ...] | None = None
    lam: float = LAMBDA
    question_ids: np.ndarray | None = None
    tokens: np.ndarray | None = None
    predictions: np.ndarray | None = None
    letter_logprobs: np.ndarray | None = None
    built_rewards: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.correct = np.asarray(self.correct)
        if self.correct.dtype != bool:
            if not np.isin(self.correct, (0, 1)).all():
                raise ValueError("correct must hold booleans or 0/1")
            self.correct = self.correct.astype(bool)
        self.space = ActionSpace(self.n_tools)
        if self.correct.ndim != 2 or self.correct.shape[1] != self.space.n_actions:
            raise ValueError(
                f"correct must be [N, {self.space.n_actions}] for {self.n_tools} tools, got {self.correct.shape}"
            )
        for name in ("family", "question_ids"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v)
                if v.shape != (self.n_questions,):
                    raise ValueError(f"{name} must have one entry per question ({self.n_questions})")
                setattr(self, name, v)
        for name in ("tokens", "predictions"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v)
                if v.shape != self.correct.shape:
                    raise ValueError(f"{name} must be [N, A] like correct, got {v.shape}")
                setattr(self, name, v)
        if self.letter_logprobs is not None:
            self.letter_logprobs = np.asarray(self.letter_logprobs, dtype=float)
            if self.letter_logprobs.shape[:2] != self.correct.shape:
                raise ValueError("letter_logprobs must be [N, A, letters]")
        for kind, v in self.built_rewards.items():
            if np.shape(v) != self.correct.shape:
                raise ValueError(f"built reward {kind!r} must be [N, A] like correct")
        if self.question_ids is not None and len(set(self.question_ids.tolist())) != self.n_questions:
            raise ValueError("question_ids must be unique")
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
        """Reward matrix ``[N, A]``: ``"eq1"`` (Eq. 1 with ``lam``, default the table's),
        ``"binary"`` (Eq. 1 with lambda = 0) or ``"differential"`` (with a parseable completion,
        ``0.95 r_diff + 0.05``). The rewards stored at build time are returned when present."""
        if kind == "eq1" and lam is None and "eq1" in self.built_rewards:
            return np.asarray(self.built_rewards["eq1"], dtype=float)
        if kind == "differential" and "differential" in self.built_rewards:
            return np.asarray(self.built_rewards["differential"], dtype=float)
        if kind == "eq1":
            return eq1_reward(self.correct, self.space.sizes[None, :], self.n_tools, self.lam if lam is None else lam)
        if kind == "binary":
            return eq1_reward(self.correct, self.space.sizes[None, :], self.n_tools, 0.0)
        if kind == "differential":
            return differential_reward(self.correct, self.correct[:, :1])
        raise ValueError(f"unknown reward kind {kind!r}: use 'eq1', 'binary' or 'differential'")

    def subset(self, rows) -> "RewardTable":
        """A table over a subset of questions (an index array or boolean mask)."""
        kw = {k: None if getattr(self, k) is None else getattr(self, k)[rows] for k in _PER_QUESTION}
        return replace(
            self,
            **kw,
            built_rewards={k: np.asarray(v)[rows] for k, v in self.built_rewards.items()},
            manifest=dict(self.manifest),
        )

    def contains(self, question_ids: Sequence[str]) -> np.ndarray:
        """Boolean ``[len(question_ids)]``: which of the questions the table holds."""
        pos = self._positions()
        return np.array([q in pos for q in question_ids], dtype=bool)

    def select(self, question_ids: Sequence[str]) -> "RewardTable":
        """The rows of ``question_ids``, in that order; refuses questions the table lacks."""
        pos = self._positions()
        missing = [q for q in question_ids if q not in pos]
        if missing:
            raise ValueError(
                f"the table lacks {len(missing)} of the {len(question_ids)} questions (e.g. {missing[0]!r})"
            )
        return self.subset(np.array([pos[q] for q in question_ids], dtype=int))

    def _positions(self) -> dict:
        if self.question_ids is None:
            raise ValueError("this table has no question ids to select by")
        return {q: i for i, q in enumerate(self.question_ids.tolist())}

    def restrict_tools(self, tools) -> "RewardTable":
        """The table of a sub-library: only subsets built from ``tools`` (slots),
        re-indexed as a library of ``len(tools)`` tools."""
        tools = tuple(tools)
        small = ActionSpace(len(tools))
        cols = [self.space.mask(tools[i] for i in small.tools(m)) for m in range(small.n_actions)]
        names = None if self.tool_names is None else tuple(self.tool_names[t] for t in tools)

        def pick(v):
            return None if v is None else np.asarray(v)[:, cols]

        return replace(
            self,
            correct=self.correct[:, cols],
            n_tools=len(tools),
            tool_names=names,
            tokens=pick(self.tokens),
            predictions=pick(self.predictions),
            letter_logprobs=pick(self.letter_logprobs),
            built_rewards={},
            manifest=dict(self.manifest),
        )

    # -- reference points ----------------------------------------------------
    def fixed_subset_accuracy(self) -> pd.Series:
        """Accuracy (%) of always choosing each subset, indexed by label."""
        return pd.Series(100.0 * self.correct.mean(0), index=self.labels(), name="accuracy")

    def oracle_actions(self, kind: str = "eq1") -> np.ndarray:
        """Per question, the reward-optimal subset (ties to the lowest mask)."""
        return self.rewards(kind).argmax(1)

    def baselines(self) -> pd.DataFrame:
        """The table-only rows of Table 2 (:data:`BASELINE_NAMES`): accuracy (%), tools per
        question, mean input tokens (NaN without ``tokens``) and, for BestFixed*, its mask.
        Random is the uniform policy over all subsets, in expectation; Oracle is "some subset
        is correct"."""
        c, sizes, A = self.correct, self.space.sizes, self.n_actions
        best = int(c.mean(0).argmax())
        tok = (lambda col: float(self.tokens[:, col].mean())) if self.tokens is not None else (lambda col: np.nan)
        rows = {
            "No-Tool": (100.0 * c[:, 0].mean(), 0.0, tok(0), 0),
            "Random": (
                100.0 * c.mean(),
                float(sizes.mean()),
                float(self.tokens.mean()) if self.tokens is not None else np.nan,
                -1,
            ),
            "All-Tools": (100.0 * c[:, -1].mean(), float(sizes[-1]), tok(A - 1), A - 1),
            "BestFixed*": (100.0 * c[:, best].mean(), float(sizes[best]), tok(best), best),
            "Oracle": (100.0 * c.any(1).mean(), np.nan, np.nan, -1),
        }
        return pd.DataFrame.from_dict(rows, orient="index", columns=["accuracy", "tools", "input_tokens", "subset"])

    def ceilings(self) -> pd.Series:
        """The reference points of every comparison, in percent, from :meth:`baselines`:

        ``no_tool``, ``random``, ``all_tools``, ``best_fixed`` (and its label
        ``best_fixed_subset``), ``oracle``, ``empty_optimal`` (questions whose Eq. 1 optimum is
        the empty subset) and ``outcome_degenerate`` (all subsets agree on correctness).
        """
        base = self.baselines()
        b = base["accuracy"]
        return pd.Series(
            {
                "no_tool": b["No-Tool"],
                "random": b["Random"],
                "all_tools": b["All-Tools"],
                "best_fixed": b["BestFixed*"],
                "best_fixed_subset": self.labels()[int(base.loc["BestFixed*", "subset"])],
                "oracle": b["Oracle"],
                "empty_optimal": 100.0 * (self.oracle_actions() == 0).mean(),
                "outcome_degenerate": 100.0 * self.outcome_degenerate().mean(),
            }
        )

    def outcome_degenerate(self) -> np.ndarray:
        """Boolean ``[N]``: every subset gives the same correctness."""
        return self.correct.all(1) | (~self.correct).all(1)

    def outcome_degenerate_by_library_size(self) -> pd.Series:
        """Outcome-degenerate fraction (%) for each library size, averaged over
        all sub-libraries of that size (the paper's Figure 5d)."""
        out = {}
        for size in range(1, self.n_tools + 1):
            vals = [
                self.restrict_tools(tools).outcome_degenerate().mean()
                for tools in combinations(range(self.n_tools), size)
            ]
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
            rows[f"-{name}"] = {
                "delta_oracle": c["oracle"] - full["oracle"],
                "delta_best_fixed": c["best_fixed"] - full["best_fixed"],
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def tool_gains(self) -> pd.DataFrame:
        """Per tool and family, the points of accuracy the tool adds: ``alone`` (the tool alone
        against no tool) and ``best_added`` (added to the subset without it where it adds most,
        that subset's label in ``added_to``), long by (tool, family)."""
        fams = np.asarray(self.family)
        labels = self.labels()
        rows = []
        for f in sorted(set(fams)):
            acc = 100.0 * self.correct[fams == f].mean(0)
            for t, name in enumerate(self.names()):
                bit = 1 << t
                without = [m for m in range(self.n_actions) if not m & bit]
                gains = [acc[m | bit] - acc[m] for m in without]
                j = int(np.argmax(gains))
                rows.append(
                    {
                        "tool": name,
                        "family": f,
                        "alone": float(acc[bit] - acc[0]),
                        "best_added": float(gains[j]),
                        "added_to": labels[without[j]],
                    }
                )
        return pd.DataFrame(rows)
