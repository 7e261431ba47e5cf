"""The fair test of exact versus sampled: every estimator by every regularizer, one tuning budget.

A *cell* is one (estimator, regularizer) pair; a cell's *candidates* are its method names, one
per regularizer weight of the shared grid :data:`WEIGHTS` (``none`` has one, weight 0). Every
candidate is trained at every learning rate of the study's shared grid and over the same seeds,
and every choice (learning rate, weight, checkpoint) reads the in-domain dev only, by one rule:
the highest mean dev accuracy over seeds, ties to the higher dev J, then to the smaller rate and
weight. So each cell gets the same grid of (rate, weight) as every other cell with the same
regularizer, and the same selection rule.

The names are ordinary method names of the study's grammar
(:mod:`fgpo_core.core.method_names`): ``grpo-ent0.03`` is GRPO with an entropy bonus of 0.03,
``rloo-klu0.1`` RLOO with KL(q || uniform) of 0.1, ``fgpo-noreg`` exact FGPO with no regularizer,
``rloo-eq1`` RLOO trained on Eq. 1's reward instead of the differential one. The study writes
them (``fgpo study --methods fair``); :mod:`fgpo_core.reports.fair` reads them back.
"""

from __future__ import annotations

__all__ = ["ESTIMATORS", "SAMPLED", "REGULARIZERS", "WEIGHTS", "cell_name", "candidates", "fair_methods", "parse_cell"]

EXACT = ("fgpo", "fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8")
"""Exact FGPO and the coverage dial (k of 16 subsets per visit)."""
SAMPLED = ("grpo", "grpo-G16", "rloo", "dapo", "grpo-clip-u2")
"""Group-sampled estimators on the differential reward (GRPO at G = 6 and 16, RLOO, DAPO's dynamic
sampling, GRPO with PPO clipping and two updates per draw, so that its ratio moves off 1)."""
SAMPLED_EQ1 = ("grpo-eq1", "rloo-eq1", "dapo-eq1")
"""The same draws on Eq. 1's reward."""
ESTIMATORS = EXACT + SAMPLED + SAMPLED_EQ1
"""Every estimator of the factorial, in the order the chapters list them."""
REGULARIZERS = ("none", "ent", "klu")
"""No regularizer, the entropy bonus, KL(q || uniform)."""
WEIGHTS = (0.01, 0.03, 0.1)
"""The shared grid of regularizer weights (0.03 is the paper's beta)."""


def cell_name(estimator: str, regularizer: str, weight: float | None = None) -> str:
    """The method name of one candidate: ``<estimator>-noreg`` or ``<estimator>-<reg><weight>``."""
    if regularizer == "none":
        return f"{estimator}-noreg"
    if regularizer not in REGULARIZERS:
        raise ValueError(f"unknown regularizer {regularizer!r}; use one of {', '.join(REGULARIZERS)}")
    if weight is None or weight <= 0:
        raise ValueError(f"{regularizer} needs a positive weight, got {weight!r}")
    return f"{estimator}-{regularizer}{weight:g}"


def candidates(estimator: str, regularizer: str, weights=WEIGHTS) -> list[str]:
    """The method names of one cell: one per weight of the grid (one for ``none``)."""
    if regularizer == "none":
        return [cell_name(estimator, "none")]
    return [cell_name(estimator, regularizer, w) for w in weights]


def fair_methods(estimators=ESTIMATORS, regularizers=REGULARIZERS, weights=WEIGHTS) -> list[str]:
    """Every candidate of every cell, estimators in order (so a run cut short has whole estimators)."""
    return [m for e in estimators for r in regularizers for m in candidates(e, r, weights)]


def parse_cell(method: str) -> tuple[str, str, float]:
    """``(estimator, regularizer, weight)`` of a name made by :func:`cell_name`."""
    if method.endswith("-noreg"):
        return method[: -len("-noreg")], "none", 0.0
    head, _, last = method.rpartition("-")
    for reg in REGULARIZERS[1:]:
        if last.startswith(reg):
            try:
                return head, reg, float(last[len(reg) :])
            except ValueError:
                break
    raise ValueError(f"{method!r} is not a name of the fair test (<estimator>-noreg or <estimator>-<reg><weight>)")
