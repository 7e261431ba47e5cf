"""The post-training study read back: in-domain (ID) and out-of-domain (OOD) accuracy of every
method, seed and checkpoint of a study run with ``--methods companion --keep last``.

The split, for this book's selectors: a test question is **ID** when its family is one of the
training families and its suite is not the microbe suite; it is **OOD** when its family never
appears in training (core's and mosaic's taxonomy and TF-motif questions) or when it comes
from the microbe suite (other organisms, whatever the family). :func:`domain_of` is the one
place this rule lives.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ..evaluation.picks import correct_of
from ..table import RewardTable
from .study import Study

__all__ = ["OOD_SUITES", "domain_of", "domain_split", "id_ood_scores", "id_ood_checkpoints", "id_ood_summary"]

OOD_SUITES = ("microbe",)
"""Suites whose every question counts as out of domain (another source of sequences)."""


def domain_of(suite: str, family: str, training_families: Iterable[str]) -> str:
    """``"ID"`` or ``"OOD"`` for a question of ``family`` in ``suite`` (see the module docstring)."""
    return "OOD" if suite in OOD_SUITES or family not in set(training_families) else "ID"


def domain_split(tables: Mapping[str, RewardTable], training_families: Iterable[str]) -> pd.DataFrame:
    """Questions per suite, family and domain: columns ``suite, family, n, domain``."""
    fams = set(training_families)
    rows = []
    for s, t in tables.items():
        for f, n in pd.Series(np.asarray(t.family)).value_counts().sort_index().items():
            rows.append({"suite": s, "family": f, "n": int(n), "domain": domain_of(s, f, fams)})
    return pd.DataFrame(rows)


def id_ood_scores(study: Study, tables: Mapping[str, RewardTable], training_families: Iterable[str]) -> pd.DataFrame:
    """Per (method, seed): ID and OOD accuracy (%) over every question of the test suites, pooled
    question by question, with the number of questions in each domain."""
    fams = set(training_families)
    rows = []
    for (m, seed), f in study.picks.groupby(["method", "seed"], sort=False):
        right = {"ID": [], "OOD": []}
        for s, g in f.groupby("suite"):
            if s not in tables:
                continue
            t = tables[s].select(g.question_id.tolist())
            ok = correct_of(g["mask"].to_numpy(), t.correct)
            dom = np.array([domain_of(s, fam, fams) for fam in np.asarray(t.family)])
            for d in right:
                right[d].append(ok[dom == d])
        row = {"method": m, "seed": seed}
        for d, parts in right.items():
            v = np.concatenate(parts) if parts else np.array([])
            row[d], row[f"n {d}"] = (100.0 * float(v.mean()) if len(v) else np.nan), int(len(v))
        rows.append(row)
    return pd.DataFrame(rows)


def id_ood_checkpoints(study: Study, training_families: Iterable[str]) -> pd.DataFrame:
    """Per (method, seed, stage, epoch): ID and OOD accuracy (%) of each checkpoint, pooled over the
    per-family rows of every test suite (a study run with ``--checkpoints``)."""
    c = study.checkpoints
    if c is None or "family" not in c:
        raise ValueError("this study has no per-family checkpoints: run it with `fgpo study --checkpoints N`")
    fams = set(training_families)
    c = c[c.family != "all"].copy()
    c["domain"] = [domain_of(s, f, fams) for s, f in zip(c.suite, c.family)]
    c["right"] = c.accuracy * c.n / 100.0
    if "stage" not in c:
        c["stage"] = 0
    c["stage"] = c["stage"].fillna(0).astype(int)
    g = c.groupby(["method", "seed", "stage", "epoch", "domain"])[["right", "n"]].sum()
    acc = (100.0 * g.right / g.n).unstack("domain")
    return acc.reset_index()


def id_ood_summary(scores: pd.DataFrame, methods: Iterable[str]) -> pd.DataFrame:
    """Mean and sd over seeds of ID and OOD accuracy, for ``methods`` in order (those present)."""
    from .study_report import label

    g = scores.groupby("method")
    out = pd.DataFrame({"ID": g.ID.mean(), "ID sd": g.ID.std(ddof=1), "OOD": g.OOD.mean(),
                        "OOD sd": g.OOD.std(ddof=1), "seeds": g.seed.nunique()})
    return out.reindex([m for m in methods if m in out.index]).rename(index=label)
