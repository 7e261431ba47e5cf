"""The estimators the book compares, one object each: what a chapter, a palette, a preset and every
training loop (the policy head, the bandit, the LM selector) need to know about a method.

An :class:`Estimator` carries its base name, its display label and colour, its kind (``exact``:
every subset's reward; ``budgeted``: a chosen set of subsets per visit; ``sampled``: subsets drawn
from the policy; ``imitation``: targets read off the whole table), the reward it trains on (Eq. 1
or the paper's differential reward), its default regularizer (:mod:`fgpo_core.core.regularizers`)
and two functions, sampling apart from the loss (:mod:`fgpo_core.core.visits` holds the book's):

* ``draw(scores, rewards, gen, ctx) -> Draw``: what a visit samples and pays for (the drawn actions
  and their log-probabilities under the drawing policy, a budgeted mask, group rewards,
  advantages, the (question, subset) pairs read, telemetry in percent, reward evaluations);
* ``loss(scores, rewards, draw, ctx, penalty) -> scalar``: the estimator's loss of the *current*
  scores on that draw (a ratio to the drawing policy moves off 1 after the first update).

API (what the loops call; scores ``[B, A]`` candidate scores of the minibatch's questions):

* ``d = est.draw(scores, rewards, gen, ctx)``, then per update ``loss = visit_loss(est, scores,
  rewards, d, ctx)``: the estimator's loss plus its regularizer (an exact or budgeted estimator
  folds ``w * R(s)`` into its per-question objective before the mean; any other adds
  ``w * mean_s R(s)``); the loop takes ``ctx.settings.updates`` optimiser steps per draw,
  recomputing the scores (:func:`fgpo_core.algorithms.loop.run_visits`);
* ``est.visit(scores, rewards, gen, ctx) -> Visit``: one draw and its loss (the one-update visit);
* ``ctx = VisitContext(idx, optimal, settings=EstimatorSettings(...), reference=..., lengths=...)``;
  ``resolve_regularizer(est, settings) -> (Regularizer, weight)``.

Adding a method is one loss (or draw) function, one :func:`register` call and its test; the
method-name grammar (:mod:`fgpo_core.core.method_names`), ``fgpo study --help``, the labels, the
palettes and the presets read :data:`ESTIMATORS`. ``rloo-kl`` is a composition: RLOO's functions
with the regularizer ``klu`` at ``RLOO_KL`` (the same training as ``rloo-klu0.05``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import torch

from .estimators import BETA, grpo_advantages, rloo_advantages
from .regularizers import Regularizer, regularizer
from .settings import EstimatorSettings
from .shortlists import shortlist_grow, shortlist_top
from .visits import (
    Draw,
    VisitContext,
    clipped_loss,
    dpo_loss,
    exact_draw,
    exact_loss,
    group_draw,
    gspo_loss,
    imitation_draw,
    pg_loss,
    sft_loss,
    shortlist_draw,
)

__all__ = [
    "Estimator",
    "Draw",
    "Visit",
    "VisitContext",
    "ESTIMATORS",
    "KINDS",
    "register",
    "estimator",
    "preset_methods",
    "resolve_regularizer",
    "visit_loss",
    "RLOO_KL",
    "exact_draw",
    "shortlist_draw",
    "group_draw",
    "imitation_draw",
    "exact_loss",
    "pg_loss",
    "clipped_loss",
    "gspo_loss",
    "sft_loss",
    "dpo_loss",
]

KINDS = ("exact", "budgeted", "sampled", "imitation")
"""How an estimator reads the reward table."""

RLOO_KL = 0.05
"""The KL weight of the worked example ``rloo-kl`` (KL(q || uniform))."""


@dataclass
class Visit:
    """One minibatch visit's result (one draw and its loss)."""

    loss: torch.Tensor
    paid: torch.Tensor
    """``[B, A]`` bool: the (question, subset) pairs whose reward the visit read."""
    telemetry: dict
    """Percentages: ``best_seen``, ``dead_observed``, ``dropped`` where the estimator has them."""
    n_reward: int
    """Reward evaluations the visit used (every draw counted, repeats included)."""


@dataclass(frozen=True)
class Estimator:
    """One method of the book."""

    name: str
    """Base name in a method name (``fgpo``, ``grpo-eq1``, ``shortlist-top``)."""
    label: str
    """How the chapters name it."""
    colour: str
    """Its colour in the study's plots (a seaborn palette name for a dial, shaded by its number)."""
    kind: str
    """One of :data:`KINDS`."""
    reward: str
    """The reward it trains on: ``eq1`` or ``differential``."""
    draw: Callable[[torch.Tensor, torch.Tensor, torch.Generator, VisitContext], Draw]
    """``(scores, rewards, gen, ctx) -> Draw``: what a visit samples and pays for."""
    loss: Callable[..., torch.Tensor]
    """``(scores, rewards, draw, ctx, penalty) -> scalar``: the loss of the current scores on a draw
    (``penalty``: ``(regularizer, weight)``, which an exact or budgeted estimator folds in itself)."""
    regularizer: str = "none"
    """Its default regularizer (:data:`~fgpo_core.core.regularizers.REGULARIZERS`)."""
    weight: float | None = None
    """Its default regularizer's weight (None: the regularizer's own default)."""
    reads: tuple = ()
    """The :class:`~fgpo_core.core.settings.EstimatorSettings` fields it reads beyond those every
    estimator reads (``updates``, ``reward``, ``regularizer``, ``weight``)."""
    dial: str | None = None
    """The prefix of a name that takes a number (``fgpo-k`` for ``fgpo-k4``): the budget per visit."""
    family: str | None = None
    """The family :func:`~fgpo_core.core.method_names.method_kind` reports (default: ``name``;
    ``fgpo`` for the coverage dial, which is FGPO on ``k`` subsets)."""
    candidates: Callable | None = None
    """For a shortlist: ``(prev, q, rewards, n_tools, K, rng) -> [N, A] bool``, rebuilt every epoch."""
    in_study: bool = True
    """Whether the committed studies include it (the worked example does not)."""
    presets: tuple = ("main",)
    """The presets of ``fgpo study`` whose method list includes its example names."""
    examples: tuple = ()
    """Method names that exercise it (default: its name); a dial lists the budgets of ``fgpo study``."""
    composes: str | None = None
    """For a named composition (``rloo-kl``): the estimator whose functions it reuses; its
    regularizer is part of its name."""

    @property
    def base(self) -> str:
        """The family name (see ``family``)."""
        return self.family or self.name

    @property
    def names(self) -> tuple:
        """Its example method names (:data:`fgpo_core.core.method_names.METHODS`)."""
        return self.examples or (self.name,)

    @property
    def folds_regularizer(self) -> bool:
        """Whether its loss folds the regularizer into each question's objective (exact, budgeted)."""
        return self.kind in ("exact", "budgeted")

    def visit(self, scores: torch.Tensor, rewards: torch.Tensor, gen: torch.Generator, ctx: VisitContext) -> Visit:
        """One draw and its loss (:func:`visit_loss`): the visit of one optimiser update per draw."""
        d = self.draw(scores, rewards, gen, ctx)
        return Visit(visit_loss(self, scores, rewards, d, ctx), d.paid, d.telemetry, d.n_reward)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.reward not in ("eq1", "differential"):
            raise ValueError(f"{self.name}: reward must be 'eq1' or 'differential', got {self.reward!r}")
        regularizer(self.regularizer)
        unknown = set(self.reads) - {f.name for f in fields(EstimatorSettings)}
        if unknown:
            raise ValueError(f"{self.name}: reads unknown settings {sorted(unknown)}")


def resolve_regularizer(est: Estimator, settings: EstimatorSettings) -> tuple[Regularizer, float]:
    """The regularizer and weight ``est`` trains with under ``settings`` (None fields: the
    estimator's defaults; a weight left None is the estimator's own for its default regularizer,
    else the regularizer's default)."""
    reg = regularizer(settings.regularizer or est.regularizer)
    if settings.weight is not None:
        return reg, float(settings.weight)
    if reg.name == est.regularizer and est.weight is not None:
        return reg, float(est.weight)
    return reg, float(reg.weight)


def visit_loss(
    est: Estimator, scores: torch.Tensor, rewards: torch.Tensor, draw: Draw, ctx: VisitContext
) -> torch.Tensor:
    """The loss of ``scores`` ``[B, A]`` on ``draw``: the estimator's loss and its regularizer
    (:func:`resolve_regularizer` of ``ctx.settings``). An exact or budgeted estimator folds
    ``w * R(s)`` into each question's objective before the mean (FGPO's
    ``-(1/|B|) sum_s (J_s + beta H_s)``); any other adds ``w * mean_s R(s)`` with ``R`` exact
    under the current q (``rloo-kl``: the surrogate ``+ 0.05 * KL(q || uniform)``)."""
    reg, w = resolve_regularizer(est, ctx.settings)
    loss = est.loss(scores, rewards, draw, ctx, (reg, w))
    if est.folds_regularizer or reg.penalty is None:
        return loss
    logq = torch.log_softmax(scores, -1)
    return loss + w * reg.penalty(logq.exp(), logq, None, ctx.reference).mean()


ESTIMATORS: dict[str, Estimator] = {}
"""Every estimator by base name, in the order the chapters list them."""


def register(est: Estimator) -> Estimator:
    """Add ``est`` to :data:`ESTIMATORS` (a name may be registered once)."""
    if est.name in ESTIMATORS:
        raise ValueError(f"estimator {est.name!r} is already registered")
    ESTIMATORS[est.name] = est
    return est


def estimator(base: str) -> Estimator:
    """The estimator of a base name (see :func:`fgpo_core.core.method_names.parse_method`)."""
    try:
        return ESTIMATORS[base]
    except KeyError:
        raise ValueError(f"unknown estimator {base!r}; use one of {', '.join(ESTIMATORS)}") from None


def preset_methods(preset: str) -> list[str]:
    """The example method names of every estimator in ``preset`` (``main``: the main comparison)."""
    return [n for e in ESTIMATORS.values() if preset in e.presets for n in e.names]


def _shortlist_top(prev, q, rewards, n_tools, K, rng):
    return shortlist_top(q, K, rng)


def _shortlist_grow(prev, q, rewards, n_tools, K, rng):
    return shortlist_grow(prev, q, rewards, n_tools, K, rng=rng)


def _grpo_adv(group_r, ctx):
    return grpo_advantages(group_r, ctx.settings.grpo_variant)


def _rloo_adv(group_r, ctx):
    return rloo_advantages(group_r)


def _dapo_adv(group_r, ctx):
    return grpo_advantages(group_r, "trl")


_GRPO = ("G", "grpo_variant")
register(Estimator("fgpo", "FGPO", "#1b7f79", "exact", "eq1", exact_draw, exact_loss, "ent", BETA))
register(Estimator("grpo", "GRPO", "#c8553d", "sampled", "differential", group_draw(_grpo_adv), pg_loss, reads=_GRPO))
register(
    Estimator("grpo-eq1", "GRPO (Eq. 1)", "#6b1a10", "sampled", "eq1", group_draw(_grpo_adv), pg_loss, reads=_GRPO)
)
register(Estimator("rloo", "RLOO", "#f2a33a", "sampled", "differential", group_draw(_rloo_adv), pg_loss, reads=("G",)))
register(
    Estimator(
        "dapo",
        "GRPO + dynamic sampling",
        "#66a61e",
        "sampled",
        "differential",
        group_draw(_dapo_adv, dynamic=True),
        pg_loss,
        reads=("G", "max_draws"),
    )
)
register(Estimator("sft", "SFT", "#9c6fb6", "imitation", "eq1", imitation_draw, sft_loss))
register(Estimator("dpo", "DPO", "#3b6ea5", "imitation", "eq1", imitation_draw, dpo_loss, reads=("dpo_beta",)))
register(
    Estimator(
        "fgpo-k",
        "FGPO k={}",
        "Blues",
        "budgeted",
        "eq1",
        exact_draw,
        exact_loss,
        "ent",
        BETA,
        reads=("k",),
        dial="fgpo-k",
        family="fgpo",
        examples=("fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8"),
    )
)
register(
    Estimator(
        "shortlist-top",
        "Shortlist (top) K={}",
        "Greens",
        "budgeted",
        "eq1",
        shortlist_draw,
        exact_loss,
        "ent",
        BETA,
        reads=("k",),
        dial="shortlist-top",
        candidates=_shortlist_top,
        presets=(),
        examples=("shortlist-top16",),
    )
)
register(
    Estimator(
        "shortlist-grow",
        "Shortlist (grow) K={}",
        "Purples",
        "budgeted",
        "eq1",
        shortlist_draw,
        exact_loss,
        "ent",
        BETA,
        reads=("k",),
        dial="shortlist-grow",
        candidates=_shortlist_grow,
        presets=(),
        examples=("shortlist-grow16",),
    )
)
register(
    Estimator(
        "rloo-kl",
        "RLOO + KL to uniform",
        "#8e0152",
        "sampled",
        "differential",
        group_draw(_rloo_adv),
        pg_loss,
        "klu",
        RLOO_KL,
        reads=("G",),
        in_study=False,
        presets=(),
        composes="rloo",
    )
)
register(
    Estimator(
        "grpo-clip",
        "GRPO (clipped ratio)",
        "#e7298a",
        "sampled",
        "differential",
        group_draw(_grpo_adv),
        clipped_loss,
        reads=_GRPO + ("clip",),
        in_study=False,
        presets=(),
        examples=("grpo-clip", "grpo-clip-u4"),
    )
)
register(
    Estimator(
        "gspo",
        "GSPO",
        "#555555",
        "sampled",
        "differential",
        group_draw(_grpo_adv),
        gspo_loss,
        reads=_GRPO + ("clip",),
        in_study=False,
        presets=(),
        examples=("gspo-u4",),
    )
)
