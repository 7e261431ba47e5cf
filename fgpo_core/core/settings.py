"""One settings object for every estimator, read by every loop (policy head, bandit, LM selector).

:class:`EstimatorSettings` carries what an estimator and its regularizer may read besides scores
and rewards: the group size ``G``, the coverage dial's ``k``, the clip range of a clipped
(PPO/GSPO) ratio, the optimiser updates per draw (TRL's ``num_iterations``), dynamic sampling's
cap on draws, DPO's beta, the reward trained on and the regularizer with its weight. Every config
of the library (HeadConfig, StudyConfig, BanditConfig, the LM selector's configs) embeds one, and a
method-name modifier declares which field it sets (:mod:`fgpo_core.core.method_names`).
:func:`with_flat_keys` reads the flat keys older configs and study manifests carry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["EstimatorSettings", "with_flat_keys", "PAPER_BETA"]


@dataclass(frozen=True)
class EstimatorSettings:
    """The settings an estimator and its regularizer read (None: the estimator's own default)."""

    G: int = 6
    """Group size of the sampled estimators (the paper: 6)."""
    k: int | None = None
    """Subsets per visit of a budgeted estimator (None: all of them)."""
    clip: float = 0.2
    """Clip range epsilon of a clipped importance ratio (PPO's, GSPO's)."""
    updates: int = 1
    """Optimiser steps taken on one draw (TRL's ``num_iterations``); above 1 the ratio moves off 1."""
    max_draws: int = 4
    """Dynamic sampling's cap on groups drawn per question."""
    dpo_beta: float = 0.3
    """DPO's beta (the paper: 0.3)."""
    reward: str | None = None
    """The reward trained on, ``eq1`` or ``differential`` (None: the estimator's own)."""
    regularizer: str | None = None
    """A name of the regularizer registry (None: the estimator's default)."""
    weight: float | None = None
    """The regularizer's weight (None: its default for this estimator)."""
    grpo_variant: str = "trl"
    """The standard deviation of GRPO's advantages (``trl`` as TRL computes it, or ``paper``)."""


PAPER_BETA = 0.03
"""The paper's entropy-bonus weight (:data:`fgpo_core.core.estimators.BETA`), every exact estimator's default."""


def with_flat_keys(
    settings: EstimatorSettings,
    beta: float | None = None,
    G: int | None = None,
    max_draws: int | None = None,
    dpo_beta: float | None = None,
) -> EstimatorSettings:
    """``settings`` with the flat keys of older configs and study manifests: ``G``, ``max_draws``,
    ``dpo_beta`` and ``beta``, the entropy bonus's weight. ``beta`` at the paper's 0.03 (every
    committed study) changes nothing, since it is every exact estimator's default; another weight
    selects the ``ent`` regularizer at that weight, as the modifier ``-beta`` does."""
    flat = {k: v for k, v in (("G", G), ("max_draws", max_draws), ("dpo_beta", dpo_beta)) if v is not None}
    settings = replace(settings, **flat)
    if beta is not None and float(beta) != PAPER_BETA:
        settings = replace(settings, regularizer="ent", weight=float(beta))
    return settings
