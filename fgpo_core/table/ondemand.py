"""Rewards on demand: the reasoner asked only about the (question, subset) pairs a method needs,
each answer kept, persisted and shared by every method that asks again.

Past a few tools the exhaustive table stops being affordable for a reasoner that reads the
whole prompt (``2**n`` calls per question). A method that evaluates only a shortlist of
subsets per question needs only those rows: :class:`OnDemandRewards` renders a pair's
evidence with the same library, asks the reasoner, and stores the row exactly as
:func:`~fgpo_core.table.build.build_table` would have (same columns, same rewards), so a pair
costs one call the first time and nothing after, whichever method asks. ``calls`` counts the
reasoner calls made. Its store is one parquet file per flush, written atomically, under a
manifest that a store of other questions, tools or reasoner is refused by.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.rewards import LAMBDA, eq1_reward
from ..genomics.benchmarks.schema import LETTERS, Question
from ..io import atomic_path
from .build import check_manifest, table_manifest
from .files import MANIFEST

__all__ = ["OnDemandRewards", "ONDEMAND_FORMAT"]

ONDEMAND_FORMAT = "ondemand-1"


class OnDemandRewards:
    """Eq. 1 rewards and correctness of (question, subset) pairs, asked of the reasoner only once."""

    def __init__(self, questions: Sequence[Question], library, reasoner, store_dir, lam: float = LAMBDA):
        self.questions, self.library, self.reasoner, self.lam = list(questions), library, reasoner, lam
        self.store = Path(store_dir)
        self.store.mkdir(parents=True, exist_ok=True)
        check_manifest(
            self.store / MANIFEST, {**table_manifest(self.questions, library, reasoner, lam), "format": ONDEMAND_FORMAT}
        )
        self._rows: dict[tuple[int, int], dict] = {}
        for part in sorted(self.store.glob("answers-*.parquet")):
            for r in pd.read_parquet(part).to_dict("records"):
                self._rows[(int(r["q_index"]), int(r["mask"]))] = r
        self._pending: list[dict] = []
        self.calls = 0
        """Reasoner calls made by this object (pairs already in the store cost none)."""

    def __len__(self) -> int:
        """Pairs answered so far, by this object or any before it on the same store."""
        return len(self._rows)

    def _answer(self, pairs: list[tuple[int, int]]) -> None:
        by_q: dict[int, list[int]] = {}
        for qi, m in pairs:
            by_q.setdefault(qi, []).append(m)
        sizes = self.library.space.sizes
        for qi, masks in by_q.items():
            q = self.questions[qi]
            evs = self.library.run(q.tool_input(), key=q.id)
            outs = self.reasoner.answer([(q, self.library.render(evs, m)) for m in masks])
            self.calls += len(masks)
            for m, o in zip(masks, outs):
                correct = o.letter == q.answer
                row = {
                    "q_index": qi,
                    "question_id": q.id,
                    "family": q.family,
                    "mask": m,
                    "answer": q.answer,
                    "prediction": o.letter,
                    "correct": bool(correct),
                    **{f"logprob_{L}": float(o.logprobs[L]) for L in LETTERS},
                    "prompt_tokens": int(o.prompt_tokens),
                    "reward_eq1": float(
                        eq1_reward(np.array([correct]), np.array([sizes[m]]), self.library.n_tools, self.lam)[0]
                    ),
                }
                self._rows[(qi, m)] = row
                self._pending.append(row)

    def get(self, q_index: Sequence[int], masks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(correct, reward_eq1)`` of each pair ``(q_index[i], masks[i])``; the pairs not yet
        answered are asked of the reasoner (one call each) and kept."""
        q_index, masks = np.asarray(q_index, dtype=int), np.asarray(masks, dtype=int)
        if q_index.shape != masks.shape:
            raise ValueError("give one mask per question index")
        if len(q_index) and (q_index.min() < 0 or q_index.max() >= len(self.questions)):
            raise ValueError(f"question indices lie in 0..{len(self.questions) - 1}")
        if len(masks) and (masks.min() < 0 or masks.max() >= self.library.space.n_actions):
            raise ValueError(f"masks lie in 0..{self.library.space.n_actions - 1}")
        todo = list(
            dict.fromkeys((int(a), int(b)) for a, b in zip(q_index, masks) if (int(a), int(b)) not in self._rows)
        )
        if todo:
            self._answer(todo)
        rows = [self._rows[(int(a), int(b))] for a, b in zip(q_index, masks)]
        return (np.array([r["correct"] for r in rows], dtype=bool), np.array([r["reward_eq1"] for r in rows]))

    def flush(self) -> Path | None:
        """Write the pairs answered since the last flush (one atomic file); returns it."""
        if not self._pending:
            return None
        n = len(list(self.store.glob("answers-*.parquet")))
        path = self.store / f"answers-{n:05d}.parquet"
        with atomic_path(path) as tmp:
            pd.DataFrame(self._pending).to_parquet(tmp, index=False)
        self._pending = []
        return path

    def manifest(self) -> dict:
        return json.loads((self.store / MANIFEST).read_text())
