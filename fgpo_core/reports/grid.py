"""The grid of reasoners by test suites, read back for the chapter "Five reasoners, three suites".

``make grid`` trains, on each reasoner's reward tables, exact FGPO, the best sampled estimator and
GRPO at the fair test's settings (:func:`fgpo_core.experiments.fair_seeds.grid_methods`), one study
per reasoner under ``runs/cpu/grid/<reasoner>``, every choice read on that reasoner's in-domain dev.
A study keeps each run's pick on every test question, and every reasoner's tables hold the same
questions, so a selector trained on one reasoner's table is scored in another's by looking its picks
up there: the paper's transfer "without adaptation".

A *cell* is (trained on, scored on, suite): the accuracies of the three methods and of two fixed
subsets of the scored reasoner (the best on its training table, and the best on these test questions,
chosen with hindsight as the paper's BestFixed*), and FGPO's gap to each with the book's two-level
paired bootstrap interval (:func:`fgpo_core.evaluation.bootstrap.paired_bootstrap`, questions drawn
within family, seeds drawn).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.bootstrap import paired_bootstrap, strata_codes

__all__ = [
    "GRID_LABELS",
    "ROLES",
    "POOLED_ROWS",
    "Grid",
    "load_grid",
    "role_of",
    "grid_cells",
    "cell_counts",
    "margin_frame",
    "transfer_matrix",
    "reasoner_profile",
    "GRID_ABOUT",
    "cell_table",
    "gap_text",
    "transfer_table",
    "build_cost",
]

GRID_LABELS = {
    "reader": "evidence reader",
    "reader-epoch1": "reader, one pass",
    "reader-fifth": "reader, a fifth of lessons",
    "minilm": "zero-shot MiniLM",
    "smollm2": "SmolLM2-135M",
}
"""What the chapter calls each reasoner's tables (``data/tables/cpu/<name>``)."""

ROLES = ("fgpo", "sampled", "grpo", "grpo_plain")
"""The grid's four methods, in the order ``grid_methods`` names them: exact FGPO and the best sampled
estimator at their best regularizers, GRPO at its best regularizer, GRPO without one (the paper's)."""

POOLED_ROWS = ("pooled", "in domain", "out of domain")
"""The rows of :func:`grid_cells` that pool the suites."""

_GAPS = {
    "grpo": "vs_grpo",
    "grpo_plain": "vs_grpo_plain",
    "sampled": "vs_sampled",
    "fixed": "vs_fixed",
    "hindsight": "vs_hindsight",
}


def role_of(method: str) -> str:
    """``fgpo`` or ``grpo`` by the estimator a method name starts with (``grpo_plain`` for GRPO
    without a regularizer, ``-noreg``), else ``sampled``."""
    head = method.split("-", 1)[0]
    if head == "grpo" and "-noreg" in method:
        return "grpo_plain"
    return head if head in ("fgpo", "grpo") else "sampled"


@dataclass
class Grid:
    """Each reasoner's study and tables: ``studies[r]`` the study trained on ``r``'s table,
    ``tables[r][suite]`` its tables (``train`` and the test suites), ``methods[r][role]`` the
    study's method of each role, ``suites`` the test suites."""

    reasoners: list
    studies: dict
    tables: dict
    methods: dict
    suites: list
    table_root: str = ""

    def label(self, reasoner: str) -> str:
        return GRID_LABELS.get(reasoner, reasoner)


def load_grid(grid_dir, table_root, reasoners: Sequence[str], suites: Sequence[str] = ("core", "microbe", "mosaic")):
    """Read the grid: for each reasoner, ``<grid_dir>/<reasoner>`` (a study) and
    ``<table_root>/<reasoner>/<suite>`` (its tables). A reasoner whose study or tables are missing
    raises, naming what is missing."""
    from ..experiments.study_results import load_study
    from ..table import load_tables

    studies, tables, methods = {}, {}, {}
    for r in reasoners:
        sdir = Path(grid_dir) / r
        if not (sdir / "manifest.json").exists():
            raise ValueError(f"no grid study for {r} in {grid_dir} (run `make grid`)")
        studies[r] = load_study(sdir)
        names = [m for m in studies[r].manifest["config"]["methods"].split(",") if m]
        roles = {role_of(m): m for m in names}
        if set(roles) != set(ROLES):
            raise ValueError(f"the grid study of {r} holds {', '.join(names)}, not one method per role")
        methods[r] = roles
        missing = [s for s in ("train", *suites) if not (Path(table_root) / r / s).exists()]
        if missing:
            raise ValueError(f"{r} has no reward table for {', '.join(missing)} in {table_root}")
        tables[r] = load_tables({r: str(Path(table_root) / r)}, ["train", *suites])[r]
    return Grid(list(reasoners), studies, tables, methods, list(suites), str(table_root))


def _correct(study, suite: str, table, method: str, ids) -> np.ndarray:
    """``[seeds, Q]`` bool: whether each seed's pick on ``suite`` is right on ``ids`` in ``table``."""
    all_ids, picks = study.pick_matrix(suite, method)
    pos = pd.Index(all_ids).get_indexer(ids)
    c = table.select(ids).correct
    return np.stack([c[np.arange(len(ids)), p[pos]] for p in picks]).astype(bool)


def _best_fixed(correct: np.ndarray) -> int:
    """The subset of highest accuracy (lowest mask on ties)."""
    return int(np.argmax(correct.mean(0)))


def grid_cells(
    grid: Grid,
    pairs: Sequence[tuple[str, str]] | None = None,
    domains: Mapping[str, Mapping[str, str]] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (trained, scored, suite) of ``pairs`` (default every trained x scored), and a
    ``pooled`` row over the suites: accuracies (%) of the three methods and the two fixed subsets,
    and FGPO's gap to each as an :class:`~fgpo_core.evaluation.bootstrap.Interval` (module docstring).
    With ``domains`` (``{suite: {question id: "ID" | "OOD"}}``, the book's rule) also rows ``in domain``
    and ``out of domain``, pooled over the suites."""
    pairs = list(pairs) if pairs is not None else [(a, b) for a in grid.reasoners for b in grid.reasoners]
    rows = []
    for trained, scored in pairs:
        study, tabs, roles = grid.studies[trained], grid.tables[scored], grid.methods[trained]
        fixed = _best_fixed(tabs["train"].correct)
        parts = []
        for suite in grid.suites:
            ids = np.asarray(study.pick_matrix(suite, roles["fgpo"])[0])
            t = tabs[suite]
            ids = ids[t.contains(ids)]
            acc = {role: _correct(study, suite, t, roles[role], ids) for role in ROLES}
            tc = t.select(ids).correct.astype(bool)
            acc["fixed"], acc["hindsight"] = tc[None, :, fixed], tc[None, :, _best_fixed(tc)]
            dom = np.array([domains[suite][q] for q in ids]) if domains is not None else np.array(["ID"] * len(ids))
            parts.append((suite, acc, np.array([suite] * len(ids)), np.asarray(t.select(ids).family), dom))
        pooled = {k: np.concatenate([p[1][k] for p in parts], axis=1) for k in parts[0][1]}
        suites_all, fams, doms = (np.concatenate([p[i] for p in parts]) for i in (2, 3, 4))
        parts.append(("pooled", pooled, suites_all, fams, doms))
        if domains is not None:
            for name, code in (("in domain", "ID"), ("out of domain", "OOD")):
                keep = doms == code
                if keep.any():
                    parts.append((name, {k: v[:, keep] for k, v in pooled.items()}, suites_all[keep], fams[keep], None))
        for suite, acc, suites, families, _ in parts:
            strata = strata_codes(suites, families)
            row = {"trained": trained, "scored": scored, "suite": suite, "questions": int(acc["fgpo"].shape[1])}
            row.update({k: 100.0 * float(v.mean()) for k, v in acc.items()})
            for other, col in _GAPS.items():
                row[col] = paired_bootstrap(acc["fgpo"], acc[other], strata, resamples=resamples, seed=seed)
            rows.append(row)
    return pd.DataFrame(rows)


def cell_counts(cells: pd.DataFrame) -> pd.DataFrame:
    """Per comparison (FGPO minus GRPO, the best sampled estimator, the fixed subsets), over the
    per-suite cells given (the pooled and domain rows left out): how many cells, how many FGPO is ahead in, and
    in how many the interval says a difference either way."""
    c = cells[~cells["suite"].isin(POOLED_ROWS)]
    rows = []
    for other, col in _GAPS.items():
        ivs = list(c[col])
        rows.append(
            {
                "comparison": other,
                "cells": len(ivs),
                "ahead": sum(iv.gap > 0 for iv in ivs),
                "ahead, a difference": sum(iv.a_better for iv in ivs),
                "behind, a difference": sum(iv.b_better for iv in ivs),
            }
        )
    return pd.DataFrame(rows).set_index("comparison")


def margin_frame(cells: pd.DataFrame, col: str = "vs_grpo") -> pd.DataFrame:
    """The cells' gaps as numbers: trained, scored, suite, gap, low, high, difference."""
    return cells[["trained", "scored", "suite"]].assign(
        gap=[iv.gap for iv in cells[col]],
        low=[iv.low for iv in cells[col]],
        high=[iv.high for iv in cells[col]],
        difference=[iv.is_difference for iv in cells[col]],
    )


def transfer_matrix(cells: pd.DataFrame, suite: str, value: str = "fgpo") -> pd.DataFrame:
    """Trained on (rows) by scored on (columns): ``value`` (an accuracy column, or a gap column read
    as its gap) on ``suite``."""
    c = cells[cells["suite"] == suite]
    v = c[value].map(lambda x: x.gap if hasattr(x, "gap") else x)
    return c.assign(v=v).pivot(index="trained", columns="scored", values="v")


def reasoner_profile(grid: Grid, suite: str = "core") -> pd.DataFrame:
    """What each reasoner is and how strong: on ``suite``, accuracy with no tool, every tool, the
    best fixed subset (hindsight) and the oracle, and its tables' recorded build cost (reasoner calls
    per second over every table of its folder whose manifest records one; NaN when none does)."""
    rows = []
    for r in grid.reasoners:
        b = grid.tables[r][suite].baselines()
        calls = seconds = 0.0
        for m in sorted((Path(grid.table_root) / r).glob("*/manifest.json")):
            build = json.loads(m.read_text()).get("build") or {}
            calls += build.get("reasoner_calls", 0)
            seconds += build.get("seconds", 0.0)
        rows.append(
            {
                "reasoner": grid.label(r),
                "no tool": float(b.loc["No-Tool", "accuracy"]),
                "every tool": float(b.loc["All-Tools", "accuracy"]),
                "best fixed": float(b.loc["BestFixed*", "accuracy"]),
                "oracle": float(b.loc["Oracle", "accuracy"]),
                "calls per second": calls / seconds if seconds else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index("reasoner")


GRID_ABOUT = {
    "reader": "MiniLM-L6 with a LoRA adapter and an answer head, trained on the book's lessons in reading tool "
    "evidence (two passes)",
    "reader-epoch1": "the same recipe, stopped after one pass",
    "reader-fifth": "the same recipe on a fifth of the lessons (two passes)",
    "minilm": "MiniLM-L6 untrained: the option nearest the question and evidence in embedding space",
    "smollm2": "a 135M causal language model scored by option likelihood with the paper's prompt",
}
"""What each reasoner is, in a phrase (the reward-table chapter describes them in full)."""


def gap_text(iv, stars: bool = True) -> str:
    """``+1.6 [+0.4, +3.0]`` of an interval, starred when it excludes zero."""
    from .fair import interval_text

    return interval_text(iv.gap, iv.low, iv.high) + ("*" if stars and iv.is_difference else "")


def cell_table(cells: pd.DataFrame, grid: Grid, suites: Sequence[str] | None = None):
    """The cells as a reader sees them, two frames: the methods' accuracies (%) by scored reasoner
    and suite, and FGPO's gaps with their intervals (a star: the interval excludes zero)."""
    keep = cells["suite"].isin(suites) if suites is not None else ~cells["suite"].isin(POOLED_ROWS)
    c = cells[keep]
    head = {"reasoner": [grid.label(r) for r in c["scored"]], "suite": list(c["suite"])}
    acc = pd.DataFrame(
        {
            **head,
            "FGPO": list(c["fgpo"]),
            "GRPO + bonus": list(c["grpo"]),
            "GRPO": list(c["grpo_plain"]),
            "best sampled": list(c["sampled"]),
            "best fixed": list(c["fixed"]),
            "best fixed, hindsight": list(c["hindsight"]),
        }
    )
    gaps = pd.DataFrame(
        {
            **head,
            "− (GRPO + bonus)": [gap_text(iv) for iv in c["vs_grpo"]],
            "− GRPO": [gap_text(iv) for iv in c["vs_grpo_plain"]],
            "− best sampled": [gap_text(iv) for iv in c["vs_sampled"]],
            "− best fixed": [gap_text(iv) for iv in c["vs_fixed"]],
            "− hindsight": [gap_text(iv) for iv in c["vs_hindsight"]],
        }
    )
    return acc, gaps


def transfer_table(cells: pd.DataFrame, grid: Grid, value: str = "fgpo") -> pd.DataFrame:
    """Every suite's :func:`transfer_matrix` stacked: suite, trained on, then one column per scored
    reasoner (labels), in the grid's order."""
    frames = []
    for s in grid.suites:
        m = transfer_matrix(cells, s, value).reindex(index=grid.reasoners, columns=grid.reasoners)
        m.columns = [grid.label(r) for r in m.columns]
        frames.append(m.assign(suite=s, trained=[grid.label(r) for r in m.index]))
    out = pd.concat(frames, ignore_index=True)
    return out[["suite", "trained", *[grid.label(r) for r in grid.reasoners]]].rename(columns={"trained": "trained on"})


def build_cost(table_dir) -> dict | None:
    """A table's recorded build cost (its manifest's ``build``: reasoner calls, seconds, calls per
    second) and how many questions it holds; None when the manifest records none."""
    from ..table import load_table

    t = load_table(table_dir)
    b = t.manifest.get("build")
    return None if not b else {**b, "questions": int(t.n_questions)}
