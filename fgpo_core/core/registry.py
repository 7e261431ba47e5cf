"""The estimators the book compares, one object each: what a chapter, a palette, a preset and every
training loop (the policy head, the bandit, the LM selector) need to know about a method.

An :class:`Estimator` carries its base name, its display label and colour, its kind (``exact``:
every subset's reward; ``budgeted``: a chosen set of subsets per visit; ``sampled``: subsets drawn
from the policy; ``imitation``: targets read off the whole table), the reward it trains on (Eq. 1
or the paper's differential reward), its default regularizer (:mod:`fgpo_core.core.regularizers`)
and two functions, sampling apart from the loss:

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

from dataclasses import dataclass, field, fields
from typing import Callable

import torch

from .estimators import (BETA, clipped_policy_loss, coverage_mask, dead_group_mask, draw_groups, draw_live_groups,
                         exact_objective, grpo_advantages, policy_gradient_loss, rloo_advantages)
from .regularizers import Regularizer, regularizer
from .settings import EstimatorSettings
from .shortlists import shortlist_grow, shortlist_top

__all__ = ["Estimator", "Draw", "Visit", "VisitContext", "ESTIMATORS", "KINDS", "register", "estimator",
           "preset_methods", "resolve_regularizer", "visit_loss", "RLOO_KL", "exact_draw", "shortlist_draw",
           "group_draw", "imitation_draw", "exact_loss", "pg_loss", "clipped_loss", "gspo_loss", "sft_loss",
           "dpo_loss"]

KINDS = ("exact", "budgeted", "sampled", "imitation")
"""How an estimator reads the reward table."""

RLOO_KL = 0.05
"""The KL weight of the worked example ``rloo-kl`` (KL(q || uniform))."""


@dataclass
class VisitContext:
    """What a visit may read besides its scores and rewards, for the minibatch's questions."""

    idx: torch.Tensor
    """The questions of the minibatch (rows of the table)."""
    optimal: torch.Tensor
    """``[B, A]`` bool: each question's Eq. 1-optimal subsets (ties kept), for ``best_seen``."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What the estimator and its regularizer read (G, k, clip, updates, ...)."""
    candidates: torch.Tensor | None = None
    """``[B, A]`` bool: a shortlist's candidate subsets for the minibatch."""
    targets: torch.Tensor | None = None
    """``[N]``: each question's reward-optimal subset (SFT), indexed by ``idx``."""
    pairs: dict = field(default_factory=dict)
    """``{question: (chosen, rejected)}`` of DPO over the whole table."""
    reference: torch.Tensor | None = None
    """``[B, A]``: the reference policy's log-probabilities (the ``klr`` regularizer)."""
    lengths: torch.Tensor | None = None
    """``[B, A]`` or ``[A]``: each candidate's token length (GSPO's ratio; None: 1 per action)."""


@dataclass
class Draw:
    """What one visit sampled and paid for, apart from any loss."""

    paid: torch.Tensor
    """``[B, A]`` bool: the (question, subset) pairs whose reward the visit read."""
    telemetry: dict
    """Percentages: ``best_seen``, ``dead_observed``, ``dropped`` where the estimator has them."""
    n_reward: int
    """Reward evaluations the visit used (every draw counted, repeats included)."""
    actions: torch.Tensor | None = None
    """``[B, G]``: the drawn actions of a sampled estimator."""
    old_logp: torch.Tensor | None = None
    """``[B, G]``: their log-probabilities under the drawing policy (detached)."""
    mask: torch.Tensor | None = None
    """``[B, A]`` bool: a budgeted estimator's evaluated subsets (None: all of them)."""
    group_rewards: torch.Tensor | None = None
    """``[B, G]``: the drawn actions' rewards."""
    advantages: torch.Tensor | None = None
    """``[B, G]``: their advantages."""
    live: torch.Tensor | None = None
    """``[B]`` bool: dynamic sampling's groups kept (the others are dropped from the loss)."""


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


def visit_loss(est: Estimator, scores: torch.Tensor, rewards: torch.Tensor, draw: Draw,
               ctx: VisitContext) -> torch.Tensor:
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


def _rows(ctx: VisitContext, A: int) -> torch.Tensor:
    return torch.ones(len(ctx.idx), A, dtype=torch.bool)


def _best_seen(ctx: VisitContext, mask: torch.Tensor | None) -> float:
    return 100.0 if mask is None else 100.0 * float((mask & ctx.optimal).any(1).double().mean())


def exact_draw(scores, rewards, gen, ctx) -> Draw:
    """Every subset's reward, or the coverage dial's ``k`` uniform subsets per question (``settings.k``)."""
    A, k = scores.shape[-1], ctx.settings.k
    mask = None if k is None or k == A else coverage_mask(len(ctx.idx), A, k, gen)
    return Draw(_rows(ctx, A) if mask is None else mask, {"best_seen": _best_seen(ctx, mask)},
                len(ctx.idx) * (A if mask is None else k), mask=mask)


def shortlist_draw(scores, rewards, gen, ctx) -> Draw:
    """The shortlist's candidates (``ctx.candidates``, rebuilt by the loop every epoch)."""
    mask = ctx.candidates
    return Draw(mask, {"best_seen": _best_seen(ctx, mask)}, len(ctx.idx) * ctx.settings.k, mask=mask)


def exact_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """``-(1/|B|) sum_s [sum_a q r - w R(s)]`` over the draw's mask (Eq. 2, 5; the regularizer folded in)."""
    reg, w = penalty
    return -exact_objective(scores, rewards, draw.mask, reg.penalty, w, ctx.reference).mean()


def _sample(scores, rewards, gen, ctx, dynamic=False):
    with torch.no_grad():
        probs = torch.softmax(scores, -1)
    st = ctx.settings
    if dynamic:
        draws, live, n_draws = draw_live_groups(probs, rewards, st.G, st.max_draws, gen)
        n = int(n_draws.sum()) * st.G
    else:
        draws, live = draw_groups(probs, st.G, gen), None
        n = draws.numel()
    group_r = rewards.gather(1, draws)
    paid = torch.zeros(scores.shape, dtype=torch.bool).scatter_(1, draws, True)
    tele = {"best_seen": 100.0 * float(ctx.optimal.gather(1, draws).any(1).double().mean()),
            "dead_observed": 100.0 * float(dead_group_mask(group_r).double().mean())}
    with torch.no_grad():
        old = torch.log_softmax(scores, -1).gather(1, draws)
    return Draw(paid, tele, n, actions=draws, old_logp=old, group_rewards=group_r, live=live)


def group_draw(advantages: Callable[[torch.Tensor, VisitContext], torch.Tensor], dynamic: bool = False) -> Callable:
    """The draw of a group-sampled estimator: ``G`` actions per question from q (dynamic sampling:
    dead groups drawn again, :func:`draw_live_groups`), their rewards and ``advantages(group_r, ctx)``."""
    def draw(scores, rewards, gen, ctx) -> Draw:
        d = _sample(scores, rewards, gen, ctx, dynamic)
        d.advantages = advantages(d.group_rewards, ctx)
        if dynamic:
            d.telemetry["dropped"] = 100.0 * float((~d.live).double().mean())
        return d
    return draw


def pg_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """The on-policy surrogate ``-(1/(B G)) sum A_i log q(a_i)`` (GRPO, RLOO; Eq. 3 at ratio 1);
    dynamic sampling's dropped groups left out."""
    if draw.live is None:
        return policy_gradient_loss(scores, draw.actions, draw.advantages)
    live = draw.live
    return policy_gradient_loss(scores[live], draw.actions[live], draw.advantages[live]) if live.any() \
        else scores.sum() * 0.0


def _token_lengths(ctx: VisitContext, actions: torch.Tensor, dtype) -> torch.Tensor | None:
    if ctx.lengths is None:
        return None
    lengths = torch.as_tensor(ctx.lengths, dtype=dtype)
    lengths = lengths.expand(len(actions), lengths.shape[-1]) if lengths.ndim == 1 else lengths
    return lengths.gather(1, actions)


def clipped_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """GRPO with PPO's clip (:func:`clipped_policy_loss`): the ratio of each drawn action's current
    q to its q when drawn, clipped at ``settings.clip``; on the policy head one action is one token."""
    logp = torch.log_softmax(scores, -1).gather(1, draw.actions)
    return clipped_policy_loss(logp, draw.old_logp, draw.advantages, ctx.settings.clip)


def gspo_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """GSPO: the clipped surrogate on the sequence-level, length-normalised ratio
    ``exp((log q(y) - log q_old(y)) / |y|)`` of each drawn candidate. ``ctx.lengths`` gives the
    candidates' token lengths (the LM selector's action strings); without them every action counts
    as one token and GSPO's ratio is GRPO-clip's, so on the policy head the two train alike (GSPO
    then differs only by its clip range). ``log q`` is the selector's listwise log-probability of
    the candidate (Eq. 4 on the LM selector), standing in for the sequence log-likelihood."""
    logp = torch.log_softmax(scores, -1).gather(1, draw.actions)
    return clipped_policy_loss(logp, draw.old_logp, draw.advantages, ctx.settings.clip,
                               _token_lengths(ctx, draw.actions, logp.dtype))


def imitation_draw(scores, rewards, gen, ctx) -> Draw:
    """Imitation reads its targets off the whole table (paid for up front); a visit draws nothing."""
    return Draw(_rows(ctx, scores.shape[-1]), {}, 0)


def sft_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """Cross-entropy to each question's reward-optimal subset."""
    return torch.nn.functional.cross_entropy(scores, ctx.targets[ctx.idx])


def dpo_loss(scores, rewards, draw, ctx, penalty) -> torch.Tensor:
    """DPO on (reward-optimal, worst) pairs at ``settings.dpo_beta``, the uniform initial head as reference."""
    rows = [j for j, i in enumerate(ctx.idx.tolist()) if i in ctx.pairs]
    if not rows:
        return scores.sum() * 0.0
    c = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][0] for j in rows])
    rj = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][1] for j in rows])
    logq = torch.log_softmax(scores[rows], -1)
    # the reference is the initial head: uniform, so its log-ratio terms cancel
    margin = logq.gather(1, c[:, None]) - logq.gather(1, rj[:, None])
    return -torch.nn.functional.logsigmoid(ctx.settings.dpo_beta * margin).mean()


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
register(Estimator("grpo-eq1", "GRPO (Eq. 1)", "#6b1a10", "sampled", "eq1", group_draw(_grpo_adv), pg_loss,
                   reads=_GRPO))
register(Estimator("rloo", "RLOO", "#f2a33a", "sampled", "differential", group_draw(_rloo_adv), pg_loss, reads=("G",)))
register(Estimator("dapo", "GRPO + dynamic sampling", "#66a61e", "sampled", "differential",
                   group_draw(_dapo_adv, dynamic=True), pg_loss, reads=("G", "max_draws")))
register(Estimator("sft", "SFT", "#9c6fb6", "imitation", "eq1", imitation_draw, sft_loss))
register(Estimator("dpo", "DPO", "#3b6ea5", "imitation", "eq1", imitation_draw, dpo_loss, reads=("dpo_beta",)))
register(Estimator("fgpo-k", "FGPO k={}", "Blues", "budgeted", "eq1", exact_draw, exact_loss, "ent", BETA,
                   reads=("k",), dial="fgpo-k", family="fgpo", examples=("fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8")))
register(Estimator("shortlist-top", "Shortlist (top) K={}", "Greens", "budgeted", "eq1", shortlist_draw, exact_loss,
                   "ent", BETA, reads=("k",), dial="shortlist-top", candidates=_shortlist_top,
                   presets=(), examples=("shortlist-top16",)))
register(Estimator("shortlist-grow", "Shortlist (grow) K={}", "Purples", "budgeted", "eq1", shortlist_draw,
                   exact_loss, "ent", BETA, reads=("k",), dial="shortlist-grow", candidates=_shortlist_grow,
                   presets=(), examples=("shortlist-grow16",)))
register(Estimator("rloo-kl", "RLOO + KL to uniform", "#8e0152", "sampled", "differential", group_draw(_rloo_adv),
                   pg_loss, "klu", RLOO_KL, reads=("G",), in_study=False, presets=(), composes="rloo"))
register(Estimator("grpo-clip", "GRPO (clipped ratio)", "#e7298a", "sampled", "differential", group_draw(_grpo_adv),
                   clipped_loss, reads=_GRPO + ("clip",), in_study=False, presets=(),
                   examples=("grpo-clip", "grpo-clip-u4")))
register(Estimator("gspo", "GSPO", "#555555", "sampled", "differential", group_draw(_grpo_adv), gspo_loss,
                   reads=_GRPO + ("clip",), in_study=False, presets=(), examples=("gspo-u4",)))
