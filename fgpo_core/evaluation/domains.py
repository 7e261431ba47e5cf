"""The book's one rule for in-domain (ID) and out-of-domain (OOD) test questions.

For this book's selectors, a test question is **ID** when its family is one of the training
families and its suite is not the microbe suite; it is **OOD** when its family never appears in
training (core's and mosaic's taxonomy and TF-motif questions) or when it comes from the microbe
suite (other organisms, whatever the family). :func:`domain_of` is the one place this rule lives;
the post-training study's read-back (:mod:`fgpo_core.experiments.companion_report`), the LM
selector's post-training runs and the policy-head study's split comparisons
(:mod:`fgpo_core.experiments.domains`) all call it.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["OOD_SUITES", "domain_of"]

OOD_SUITES = ("microbe",)
"""Suites whose every question counts as out of domain (another source of sequences)."""


def domain_of(suite: str, family: str, training_families: Iterable[str]) -> str:
    """``"ID"`` or ``"OOD"`` for a question of ``family`` in ``suite``: OOD when ``suite`` is one of
    :data:`OOD_SUITES` or ``family`` is not among ``training_families``, else ID."""
    return "OOD" if suite in OOD_SUITES or family not in set(training_families) else "ID"
