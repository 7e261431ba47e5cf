"""How answerable is each family, and by which tool? And can text alone answer it?

For every question, each tool's structured record is read by a simple
deterministic rule that picks an option (or abstains): T1 applies the
CpG-island criteria, T2 picks the factor (or sequence) with the strongest
reported hit, T3 matches its site classification, T4 follows the top vote (or
the highest vote share for the asked label), T5 follows the homology consensus.
An abstention counts as not identified. This describes the benchmark; it is not
a reasoner. Text-only baselines (always A, the longest option, the option
sharing most words with the question) must sit near chance.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .families import CpG, family
from .schema import LETTERS, Question

__all__ = ["asked_label", "tool_choice", "answerability", "text_baselines", "RULE_FAMILIES"]

RULE_FAMILIES = {
    "composition": {"cpg"},
    "motif_scan": {"tf_motif", "regulator"},
    "splice": {"splice"},
    "expert": None,
    "homology": {"repeat"},
}
"""Families each tool's rule can address (None: every family with a reference set)."""


def _family(q: Question):
    return family(q.family)


def asked_label(q: Question):
    """The label a select question asks for, read from its text."""
    fam = _family(q)
    text = q.question
    hits = [lab for lab in fam.labels if fam.text_of(lab) in text]
    return max(hits, key=lambda lab: len(fam.text_of(lab))) if hits else None


def _option_labels(q: Question) -> dict:
    fam = _family(q)
    inv = {fam.text_of(lab): lab for lab in fam.labels}
    return {L: inv.get(q.options[L]) for L in LETTERS}


def _cpg_label(rec: dict) -> str:
    """The CpG-island criteria applied to T1's record."""
    return CpG.label_of(rec["gc_percent"], rec["cpg_observed_expected"] or 0.0)


def _unique_best(scores: dict):
    """The letter with the strictly highest score, or None on a tie or when empty."""
    scores = {k: v for k, v in scores.items() if v is not None}
    if not scores:
        return None
    best = max(scores.values())
    top = [k for k, v in scores.items() if v == best]
    return top[0] if len(top) == 1 else None


def tool_choice(q: Question, tool: str, record_by_seq: dict):
    """The option a tool's rule picks for question ``q`` from its records (one per sequence), or None."""
    if q.shape == "describe":
        rec = record_by_seq[""]
        labels = _option_labels(q)
        if tool == "composition":
            lab = _cpg_label(rec) if q.family == "cpg" else None
            return next((L for L, x in labels.items() if x == lab), None)
        if tool == "motif_scan":
            best = {
                L: -min(
                    (h["p_value"] for h in rec["top_hits"] if h["name"].upper() == (x or "").upper()), default=np.inf
                )
                for L, x in labels.items()
            }
            best = {k: v for k, v in best.items() if np.isfinite(v)}
            return _unique_best(best)
        if tool == "splice":
            return next((L for L, x in labels.items() if x == rec["class"]), None)
        if tool == "expert":
            if not rec.get("votes"):
                return None
            return next((L for L, x in labels.items() if x == rec["votes"][0]["label"]), None)
        if tool == "homology":
            return next((L for L, x in labels.items() if x is not None and x == rec.get("consensus")), None)
        raise ValueError(f"no rule for tool {tool!r}")
    target = asked_label(q)
    if target is None:
        return None
    if tool == "composition":
        return (
            _unique_best({L: float(_cpg_label(record_by_seq[L]) == target) for L in LETTERS})
            if q.family == "cpg"
            else None
        )
    if tool == "motif_scan":
        return _unique_best(
            {
                L: -min(
                    (h["p_value"] for h in record_by_seq[L]["top_hits"] if h["name"].upper() == target.upper()),
                    default=1.0,
                )
                for L in LETTERS
            }
        )
    if tool == "splice":
        return _unique_best({L: float(record_by_seq[L]["class"] == target) for L in LETTERS})
    if tool == "expert":
        return _unique_best(
            {
                L: next((v["vote_share"] for v in record_by_seq[L].get("votes", []) if v["label"] == target), 0.0)
                for L in LETTERS
            }
        )
    if tool == "homology":
        return _unique_best(
            {
                L: (record_by_seq[L].get("consensus_share") or 0.0)
                if record_by_seq[L].get("consensus") == target
                else 0.0
                for L in LETTERS
            }
        )
    raise ValueError(f"no rule for tool {tool!r}")


def answerability(questions, library, progress: bool = False) -> pd.DataFrame:
    """Percent of questions each tool's rule answers correctly, by family (rows) and tool
    (columns); NaN where the tool's rule does not address the family."""
    from tqdm import tqdm

    rows = []
    for q in tqdm(questions, disable=not progress, desc="answerability", leave=False):
        evs = library.run(q.tool_input(), key=q.id)
        for ev in evs:
            fams = RULE_FAMILIES.get(ev.tool)
            if fams is not None and q.family not in fams:
                continue
            rows.append(
                {
                    "family": q.family,
                    "shape": q.shape,
                    "tool": ev.tool,
                    "correct": tool_choice(q, ev.tool, ev.records) == q.answer,
                }
            )
    df = pd.DataFrame(rows)
    table = df.pivot_table(index="family", columns="tool", values="correct", aggfunc="mean") * 100
    return table.reindex(columns=[t for t in library.names if t in table.columns])


def text_baselines(questions, seed: int = 0) -> pd.DataFrame:
    """Percent correct, by family, of three text-only rules that never look at DNA; ties
    are broken uniformly at random (seeded)."""
    rng = np.random.default_rng(seed)

    def words(t):
        return set(re.findall(r"[a-z]+", t.lower())) - {"a", "an", "the", "of", "and", "this", "is", "which"}

    def pick(scores):
        best = max(scores.values())
        return str(rng.choice([k for k, v in scores.items() if v == best]))

    rows = []
    for q in questions:
        qw = words(q.question.split("Sequence:")[0])
        rows.append(
            {
                "family": q.family,
                "always A": q.answer == "A",
                "longest option": pick({L: len(q.options[L]) for L in LETTERS}) == q.answer,
                "word overlap": pick({L: len(qw & words(q.options[L])) for L in LETTERS}) == q.answer,
            }
        )
    df = pd.DataFrame(rows)
    out = df.groupby("family").mean() * 100
    out.loc["all"] = df.drop(columns="family").mean() * 100
    return out
