"""Past enumeration read back: what a larger library does to the reader, what each method pays
in reasoner calls, and what it buys.

Every method of a larger-library study (``fgpo study --methods larger``) is charged the distinct
(question, subset) pairs whose reward it read (``reward_calls``: what a reasoner that reads the
whole prompt bills, each pair once, with a shared cache). :func:`budget_table` puts those calls
beside test accuracy over seeds; :func:`library_rows` shows the tables themselves as the library
grows (the reference points and the exhaustive table's cost); :func:`seen_by_epoch` how often a
method's evaluated subsets held one of a question's best subsets, epoch by epoch.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..table import RewardTable
from .study import Study
from .study_report import label

__all__ = ["library_rows", "budget_table", "seen_by_epoch", "method_family"]


def method_family(method: str) -> str:
    """The curve a method belongs to: ``fgpo`` (exact), ``dial``, ``shortlist-top``,
    ``shortlist-grow`` or ``grpo`` (every epoch count)."""
    from ..algorithms.head import parse_method

    spec = parse_method(method)
    if spec.base == "fgpo":
        return "fgpo" if spec.k is None else "dial"
    return spec.base


def library_rows(tables: Mapping[int, RewardTable], n_train: int) -> pd.DataFrame:
    """One row per library size ``n`` (``tables``: n -> the test suite's table): No-Tool,
    All-Tools, the best fixed subset, the oracle (all %), the subsets per question and the
    reasoner calls of the exhaustive training table (``2**n`` per training question)."""
    rows = []
    for n, t in sorted(tables.items()):
        c = t.ceilings()
        rows.append({"tools": n, "subsets": t.n_actions, "no_tool": c["no_tool"], "all_tools": c["all_tools"],
                     "best_fixed": c["best_fixed"], "oracle": c["oracle"],
                     "table_calls": t.n_actions * n_train})
    return pd.DataFrame(rows).set_index("tools")


def budget_table(study: Study, scores: pd.DataFrame, suite: str = "core") -> pd.DataFrame:
    """Per method of ``study`` (at its chosen learning rate): the reasoner calls its training
    read (mean over seeds; per training question), and its accuracy and tools on ``suite``
    (mean and standard deviation over seeds; ``scores`` from
    :func:`~fgpo_core.experiments.study_report.study_scores`)."""
    chosen = study.manifest["chosen_lr"]
    n_train = study.manifest["n_questions"]["train"]
    sw = study.sweep
    rows = []
    for m in chosen:
        g = sw[(sw.method == m) & (sw.lr == chosen[m])]
        s = scores[(scores.method == m) & (scores.suite == suite)]
        if g.empty or s.empty:
            continue
        calls = float(g.reward_calls.mean()) if "reward_calls" in g else float("nan")
        rows.append({"method": m, "label": label(m), "family": method_family(m), "reward_calls": calls,
                     "calls_per_question": calls / n_train, "accuracy": s.accuracy.mean(),
                     "accuracy_sd": s.accuracy.std(ddof=1) if len(s) > 1 else 0.0, "tools": s.tools.mean(),
                     "seeds": len(s)})
    return pd.DataFrame(rows).set_index("method")


def seen_by_epoch(study: Study) -> pd.DataFrame:
    """Per method and epoch, the share (%) of training visits whose evaluated subsets held one of
    the question's Eq. 1-optimal subsets (mean over the epoch's steps and the seeds): 100 for
    exact FGPO, what the shortlist sees for the shortlists."""
    c = study.curves
    if "best_seen" not in c or "visits" not in c:
        return pd.DataFrame()
    n_train = study.manifest["n_questions"]["train"]
    c = c.assign(epoch=np.ceil(c.visits / n_train).astype(int))
    return c.groupby(["method", "epoch"]).best_seen.mean().unstack("method")
