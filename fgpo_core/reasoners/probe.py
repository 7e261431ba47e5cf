"""The evidence-following probe: does a reasoner use the evidence it is given?

Four conditions per question: no evidence; only the family's decisive tool (the
tool meant to settle it); only an irrelevant tool (one that cannot address the
family: the splice analysis, or the motif scan for splice questions); and every
tool's block. Accuracy under each, and the letters chosen, describe a reader: one
that follows decisive evidence but stays near chance without it, or with
irrelevant evidence only, makes a reward table with something to learn.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..genomics.benchmarks.families import family
from ..genomics.benchmarks.schema import LETTERS, Question

__all__ = ["CONDITIONS", "probe_masks", "probe_from_table", "probe_live"]

CONDITIONS = ("no evidence", "decisive tool only", "irrelevant tool only", "all tools")


def probe_masks(q: Question, tool_names: Sequence[str]) -> dict[str, int]:
    """The subset (bitmask) of each probe condition for question ``q``."""
    names = list(tool_names)
    decisive = family(q.family).decisive_tool
    if decisive not in names:
        decisive = "expert"
    irrelevant = "motif_scan" if q.family == "splice" else "splice"
    return {
        "no evidence": 0,
        "decisive tool only": 1 << names.index(decisive),
        "irrelevant tool only": 1 << names.index(irrelevant),
        "all tools": (1 << len(names)) - 1,
    }


def _summarise(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = pd.DataFrame(rows)
    acc = df.pivot_table(index="family", columns="condition", values="correct", aggfunc="mean") * 100
    acc.loc["all"] = df.groupby("condition")["correct"].mean() * 100
    letters = df.groupby("condition")["letter"].value_counts(normalize=True).unstack(fill_value=0) * 100
    return acc[list(CONDITIONS)], letters.reindex(index=list(CONDITIONS), columns=list(LETTERS), fill_value=0)


def probe_from_table(tables, questions: Sequence[Question], tool_names: Sequence[str]):
    """The probe read from built reward tables (one, or several suites'; no model call): every
    question must be in one of them."""
    tables = [tables] if hasattr(tables, "select") else list(tables)
    where = {}
    for t in tables:
        for i, qid in enumerate(t.question_ids.tolist()):
            where.setdefault(qid, (t, i))
    missing = [q.id for q in questions if q.id not in where]
    if missing:
        raise ValueError(f"no table holds {len(missing)} of the questions (e.g. {missing[0]!r})")
    rows = []
    for q in questions:
        t, i = where[q.id]
        for cond, m in probe_masks(q, tool_names).items():
            rows.append(
                {"family": q.family, "condition": cond, "correct": bool(t.correct[i, m]), "letter": t.predictions[i, m]}
            )
    return _summarise(rows)


def probe_live(reasoner, questions: Sequence[Question], library):
    """The probe with live calls (tools run once per question)."""
    rows = []
    for q in questions:
        evs = library.run(q.tool_input(), key=q.id)
        masks = probe_masks(q, library.names)
        outs = reasoner.answer([(q, library.render(evs, m)) for m in masks.values()])
        rows += [
            {"family": q.family, "condition": c, "correct": o.letter == q.answer, "letter": o.letter}
            for c, o in zip(masks, outs)
        ]
    return _summarise(rows)
