"""One number, one value, on every page: the cross-page check of the executed chapters.

A chapter states a result by gluing it (:func:`fgpo_core.book.claims.glue_number`). Two rules keep
the pages from disagreeing:

- a glue name used by two chapters names one quantity, so its text must be the same in both
  (a chapter's own counts take a prefix of the chapter, ``yo_n_test``, so they never collide);
- a quantity two chapters compute under their own names is listed in :data:`SAME_QUANTITY`
  with every ``chapter:name`` that states it, and those texts must be the same.

:func:`inconsistencies` reads the glued values of a folder of executed notebooks and lists every
disagreement; ``fgpo book`` runs it after executing and the tests run it on the committed book.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["SAME_QUANTITY", "glued_values", "inconsistencies"]

SAME_QUANTITY: dict[str, tuple[str, ...]] = {
    "the entropy bonus's lift of FGPO in the fair test (points)": (
        "intro:reg_fgpo",
        "head_study:reg_fgpo",
        "appendix:ap_ent_fgpo",
    ),
    "the same lift in domain (points)": ("head_study:reg_fgpo_id", "appendix:ap_ent_fgpo_id"),
    "the same lift out of domain (points)": ("head_study:reg_fgpo_ood", "appendix:ap_ent_fgpo_ood"),
    "RLOO's lift from its best regularizer in the fair test (points)": ("head_study:reg_rloo", "appendix:ap_reg_rloo"),
    "the entropy bonus's lift of GRPO in the fair test (points)": ("intro:reg_grpo", "head_study:reg_grpo"),
    "the margin inside which two methods are called level (points)": (
        "intro:margin",
        "head_study:margin",
        "post_training:pt_margin",
    ),
    "the fair test's seeds for the cells the first page quotes": ("intro:seeds10", "head_study:seeds10"),
    "the first pool's training questions": ("head_study:first_n_train", "fgpo_vs_grpo:first_pool_n"),
    "the share of core questions whose best subset is the empty one (%)": (
        "head_study:def_empty_opt",
        "appendix:ap_empty_opt",
    ),
    "the paper's grid: its cells": ("intro:paper_cells", "five_reasoners:g_paper_cells"),
    "the paper's grid: cells where FGPO leads GRPO": ("intro:paper_wins", "five_reasoners:g_paper_wins"),
    "the paper's grid: cells where FGPO leads the best fixed subset": (
        "intro:paper_beats_best",
        "five_reasoners:g_paper_fixed",
    ),
}
"""Quantities stated on more than one page: a description -> the ``chapter:name`` glues stating it."""

_RECORD = "application/papermill.record/"


def glued_values(folder: str | Path, chapters: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
    """Every glued value of the executed notebooks ``folder/*.ipynb`` (or only ``chapters``):
    glue name -> chapter -> the value's text as glued (plain text, else Markdown)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    paths = sorted(Path(folder).glob("*.ipynb"))
    for path in paths:
        chapter = path.stem
        if chapters is not None and chapter not in chapters:
            continue
        nb = json.loads(path.read_text())
        for cell in nb.get("cells", []):
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if not record:
                    continue
                data = output.get("data", {})
                text = data.get(_RECORD + "text/plain", data.get(_RECORD + "text/markdown"))
                if text is not None:
                    out[record["name"]][chapter] = text if isinstance(text, str) else "".join(text)
    return dict(out)


def inconsistencies(
    folder: str | Path,
    same: Mapping[str, Sequence[str]] = SAME_QUANTITY,
    chapters: Sequence[str] | None = None,
) -> list[str]:
    """One line per disagreement between the pages of ``folder``: a glue name whose text differs
    between chapters, or a quantity of ``same`` whose ``chapter:name`` glues differ. A listed
    glue that no executed chapter holds is a disagreement too (the list went stale), unless its
    chapter is not in ``folder`` (a partial build)."""
    values = glued_values(folder, chapters)
    present = {p.stem for p in Path(folder).glob("*.ipynb")}
    problems = []
    for name, by_chapter in sorted(values.items()):
        if len(set(by_chapter.values())) > 1:
            said = "; ".join(f"{ch}: {v}" for ch, v in sorted(by_chapter.items()))
            problems.append(f"the glue {name!r} differs between chapters ({said})")
    for what, refs in same.items():
        seen = {}
        for ref in refs:
            chapter, _, name = ref.partition(":")
            if chapter not in present or (chapters is not None and chapter not in chapters):
                continue
            if chapter not in values.get(name, {}):
                problems.append(f"{what}: {ref} is glued by no executed chapter")
                continue
            seen[ref] = values[name][chapter]
        if len(set(seen.values())) > 1:
            said = "; ".join(f"{ref}: {v}" for ref, v in seen.items())
            problems.append(f"{what} differs between pages ({said})")
    return problems
