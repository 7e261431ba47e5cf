"""Reading the LM selector's runs: which runs ended up the same selector, which fixed subset a
dev evaluation amounts to, and what one tool is worth family by family.

Used by the chapter "FGPO versus GRPO": runs whose kept adapters make the same picks are one
row of its tables, and the dev evaluations of its RL runs are matched to the fixed subsets they
reproduce, to explain why every one of them lowered dev accuracy.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..table import RewardTable

__all__ = ["identical_groups", "fixed_subset_matches", "tool_value_by_family"]


def identical_groups(picks: Mapping[str, Mapping[str, np.ndarray]]) -> list[list[str]]:
    """Group selectors whose picks are identical on every suite: ``picks`` maps a name to its
    picks by suite (free generation, say). Two selectors are one group when they were evaluated
    on the same suites and picked the same subset of every question of each. Groups keep the
    order of ``picks``, each group its members in that order."""
    groups: list[list[str]] = []
    keys: list[dict] = []
    for name, by_suite in picks.items():
        key = {s: np.asarray(v) for s, v in by_suite.items()}
        for g, k in zip(groups, keys):
            if set(k) == set(key) and all(np.array_equal(k[s], key[s]) for s in k):
                g.append(name)
                break
        else:
            groups.append([name])
            keys.append(key)
    return groups


def fixed_subset_matches(table: RewardTable, accuracy: float, tools: float, atol: float = 1e-6) -> list[int]:
    """The fixed subsets that reproduce a summary of an evaluation on ``table``'s questions: those
    of size ``tools`` whose accuracy (%) on every question is ``accuracy``. An evaluation whose
    mean tools per question is an integer and whose accuracy equals exactly one subset of that
    size is consistent with picking that subset for every question (the summary alone cannot
    prove it). Empty where ``tools`` is not an integer."""
    if abs(tools - round(tools)) > atol:
        return []
    acc = 100.0 * table.correct.mean(axis=0)
    sizes = table.space.sizes
    return [int(a) for a in np.flatnonzero((sizes == round(tools)) & np.isclose(acc, accuracy, atol=atol))]


def tool_value_by_family(table: RewardTable, tool: int, base: int = 0, kind: str = "eq1") -> pd.DataFrame:
    """What adding ``tool`` (0-based) to the fixed subset ``base`` (an action mask; 0 = no tool)
    changes, family by family of ``table``: accuracy (%) of ``base`` and of ``base`` plus the tool,
    their difference in points, the mean reward difference (``kind``, :meth:`RewardTable.rewards`)
    and the questions of each family. One row per family, in order of first appearance."""
    if table.family is None:
        raise ValueError("the table holds no question families")
    with_tool = base | (1 << tool)
    if with_tool == base:
        raise ValueError(f"the subset {base} already holds tool {tool}")
    fam = np.asarray(table.family)
    r = table.rewards(kind)
    rows = {}
    for f in dict.fromkeys(fam):
        m = fam == f
        a0, a1 = 100.0 * table.correct[m, base].mean(), 100.0 * table.correct[m, with_tool].mean()
        rows[f] = {"without": a0, "with": a1, "points": a1 - a0,
                   "reward": float((r[m, with_tool] - r[m, base]).mean()), "questions": int(m.sum())}
    return pd.DataFrame(rows).T.astype({"questions": int})
