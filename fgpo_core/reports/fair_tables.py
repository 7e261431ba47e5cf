"""Small tables of the fair test for a page: the accuracy of the cells a page quotes, pooled and
split in and out of domain, and the short name of a cell's estimator (:mod:`fgpo_core.reports.fair`)."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from ..experiments.factorial import parse_cell

__all__ = ["cell_accuracies", "estimator_of"]


def estimator_of(method: str) -> str:
    """The display name of a fair-test method's estimator alone, its regularizer and fixed rate
    dropped: ``rloo-ent0.1-lr0.03`` reads "RLOO", ``dapo-noreg`` "GRPO + dynamic sampling"."""
    from .fair import estimator_label

    base = method.rsplit("-lr", 1)[0] if "-lr" in method else method
    return estimator_label(parse_cell(base)[0])


def cell_accuracies(ft, methods: Mapping[str, str]) -> pd.DataFrame:
    """One row per method of ``methods`` (method name -> its label, in that order) of a
    :class:`~fgpo_core.reports.fair.FairTest`: accuracy (%) pooled, in domain and out of domain,
    each the mean over seeds and questions, and the number of seeds."""
    rows = []
    for m, lab in methods.items():
        if m not in ft.correct:
            raise ValueError(f"the fair test holds no method {m!r}")
        rows.append(
            {
                "method": lab,
                "pooled (%)": ft.accuracy(m),
                "in domain (%)": ft.accuracy(m, ft.in_domain),
                "out of domain (%)": ft.accuracy(m, ~ft.in_domain),
                "seeds": int(ft.correct[m].shape[0]),
            }
        )
    return pd.DataFrame(rows)
