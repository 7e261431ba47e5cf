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

__all__ = [
    "identical_groups",
    "group_label",
    "selector_table",
    "fixed_subset_matches",
    "tool_value_by_family",
    "tool_value_table",
]


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


def group_label(group: Sequence[str], kept_step: Mapping[str, int | None], tools: Mapping[str, float]) -> str:
    """The row label of a group of :func:`identical_groups`: its members (the warm-up and the RL
    runs first), and what made them one selector: every trained member kept its starting adapter
    (``kept_step``: a trained run's kept step), every member picks the empty subset (``tools``: a
    member's mean tools per question), or else the same picks."""
    if len(group) == 1:
        return group[0]
    order = [m for m in ("Warm-up", "FGPO", "FGPO + format term", "GRPO", "SFT", "DPO") if m in group]
    order += [m for m in group if m not in order]
    if "Warm-up" in group and all(kept_step[m] == 0 for m in group if m in kept_step):
        why = "each RL run kept its starting adapter"
    elif tools[group[0]] == 0:
        why = "each always picks the empty subset"
    else:
        why = "the same picks"
    return " = ".join(order) + f" ({why})"


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
        rows[f] = {
            "without": a0,
            "with": a1,
            "points": a1 - a0,
            "reward": float((r[m, with_tool] - r[m, base]).mean()),
            "questions": int(m.sum()),
        }
    return pd.DataFrame(rows).T.astype({"questions": int})


def selector_table(
    grid: pd.DataFrame, scoring: pd.Series, rows: Sequence[str], labels: Mapping[str, str], suites: Sequence[str]
) -> pd.DataFrame:
    """The LM selectors' table as a chapter shows it: accuracy (%) by free generation on each of
    ``suites`` (from ``grid``, :func:`~fgpo_core.reports.lm_runs.method_grid`; each column headed
    with its questions), then on core the tools per question, the format failures (%) and
    ``scoring`` (accuracy by controlled scoring, by method). One row per method of ``rows``, in
    that order, named by ``labels`` (a method without a label keeps its name)."""
    core = grid[grid.suite == "core"].set_index("method")
    out = grid.pivot(index="method", columns="suite", values="accuracy").reindex(list(rows))[list(suites)]
    out["tools (core)"] = core["tools"].reindex(rows)
    out["format failures, core (%)"] = core["format_failures"].reindex(rows)
    out["controlled scoring, core"] = scoring.reindex(rows)
    out.index = [labels.get(m, m) for m in rows]
    n = {s: int(grid[grid.suite == s].n.iloc[0]) for s in suites}
    out.columns = [f"{c} ({n[c]:,})" if c in n else c for c in out.columns]
    return out


def tool_value_table(
    tables: Mapping[str, RewardTable], tool: int, base: int, base_label: str, reward_on: Sequence[str] | None = None
) -> pd.DataFrame:
    """What ``tool`` (0-based) is worth family by family on each of ``tables`` (a name -> a reward
    table): alone against no tool and added to the fixed subset ``base`` (named ``base_label``), in
    points (:func:`tool_value_by_family`), with the mean Eq. 1 reward of adding it on the tables
    named in ``reward_on`` (all by default). Rows: (table name, family)."""
    t_ = f"T{tool + 1}"
    parts = {}
    for where, t in tables.items():
        alone, added = tool_value_by_family(t, tool, 0), tool_value_by_family(t, tool, base)
        rewarded = reward_on is None or where in reward_on
        parts[where] = pd.DataFrame(
            {
                "questions": alone.questions,
                f"{t_} alone vs no tool (points)": alone.points,
                f"{t_} added to {base_label} (points)": added.points,
                f"Eq. 1 reward of adding {t_}": added.reward if rewarded else np.nan,
            }
        )
    return pd.concat(parts, names=["questions from", "family"])
