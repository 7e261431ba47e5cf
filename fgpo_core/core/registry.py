"""The estimators the book compares, one object each: what a chapter, a palette, a preset and the
training loop need to know about a method.

An :class:`Estimator` carries its base name, its display label and colour, its kind (``exact``:
every subset's reward; ``budgeted``: a chosen set of subsets per visit; ``sampled``: subsets drawn
from the policy; ``imitation``: targets read off the whole table), the reward it trains on (Eq. 1
or the paper's differential reward) and its ``visit``: one minibatch of candidate scores and
rewards in, a :class:`Visit` out (the loss, the (question, subset) pairs whose reward it read, its
telemetry in percent and the reward evaluations it used). The training loop
(:mod:`fgpo_core.algorithms.loop`) knows nothing else about a method.

Adding a method is one :func:`register` call (and its test); the method-name grammar
(:mod:`fgpo_core.core.method_names`), the labels, the palettes and the presets read
:data:`ESTIMATORS`. ``rloo-kl`` is the worked example: RLOO with a KL penalty to the uniform policy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from .estimators import (coverage_mask, dead_group_mask, draw_groups, draw_live_groups, fgpo_loss, grpo_advantages,
                         policy_gradient_loss, rloo_advantages)
from .shortlists import shortlist_grow, shortlist_top

__all__ = ["Estimator", "Visit", "VisitContext", "ESTIMATORS", "KINDS", "register", "estimator", "estimators_of",
           "preset_methods", "RLOO_KL"]

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
    beta: float = 0.03
    """FGPO's entropy bonus."""
    G: int = 6
    """Group size of the sampled estimators."""
    k: int | None = None
    """Subsets per visit of a budgeted estimator (None: all of them)."""
    candidates: torch.Tensor | None = None
    """``[B, A]`` bool: a shortlist's candidate subsets for the minibatch."""
    max_draws: int = 4
    """Dynamic sampling's cap on groups per question."""
    dpo_beta: float = 0.3
    """DPO's beta."""
    grpo_variant: str = "trl"
    """The standard deviation of GRPO's advantages (``trl`` as TRL computes it, or ``paper``)."""
    targets: torch.Tensor | None = None
    """``[B]``: each question's reward-optimal subset (SFT)."""
    pairs: dict = field(default_factory=dict)
    """``{question: (chosen, rejected)}`` of DPO over the whole table."""


@dataclass
class Visit:
    """One minibatch visit's result."""

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
    visit: Callable[[torch.Tensor, torch.Tensor, torch.Generator, VisitContext], Visit]
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

    @property
    def base(self) -> str:
        """The family name (see ``family``)."""
        return self.family or self.name

    @property
    def names(self) -> tuple:
        """Its example method names (:data:`fgpo_core.core.method_names.METHODS`)."""
        return self.examples or (self.name,)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.reward not in ("eq1", "differential"):
            raise ValueError(f"{self.name}: reward must be 'eq1' or 'differential', got {self.reward!r}")


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


def estimators_of(kind: str) -> list[str]:
    """Base names of one kind, in registry order."""
    return [n for n, e in ESTIMATORS.items() if e.kind == kind]


def preset_methods(preset: str) -> list[str]:
    """The example method names of every estimator in ``preset`` (``main``: the main comparison)."""
    return [n for e in ESTIMATORS.values() if preset in e.presets for n in e.names]


def _rows(ctx: VisitContext, A: int) -> torch.Tensor:
    return torch.ones(len(ctx.idx), A, dtype=torch.bool)


def _best_seen(ctx: VisitContext, mask: torch.Tensor | None) -> float:
    return 100.0 if mask is None else 100.0 * float((mask & ctx.optimal).any(1).double().mean())


def _exact(scores, rewards, gen, ctx):
    A = scores.shape[-1]
    mask = None if ctx.k is None or ctx.k == A else coverage_mask(len(ctx.idx), A, ctx.k, gen)
    loss = fgpo_loss(scores, rewards, ctx.beta, mask)
    return Visit(loss, _rows(ctx, A) if mask is None else mask, {"best_seen": _best_seen(ctx, mask)},
                 len(ctx.idx) * (A if mask is None else ctx.k))


def _shortlist(scores, rewards, gen, ctx):
    mask = ctx.candidates
    return Visit(fgpo_loss(scores, rewards, ctx.beta, mask), mask, {"best_seen": _best_seen(ctx, mask)},
                 len(ctx.idx) * ctx.k)


def _draw(scores, rewards, gen, ctx, dynamic=False):
    with torch.no_grad():
        probs = torch.softmax(scores, -1)
    if dynamic:
        draws, live, n_draws = draw_live_groups(probs, rewards, ctx.G, ctx.max_draws, gen)
        n = int(n_draws.sum()) * ctx.G
    else:
        draws, live = draw_groups(probs, ctx.G, gen), None
        n = draws.numel()
    group_r = rewards.gather(1, draws)
    paid = torch.zeros(scores.shape, dtype=torch.bool).scatter_(1, draws, True)
    tele = {"best_seen": 100.0 * float(ctx.optimal.gather(1, draws).any(1).double().mean()),
            "dead_observed": 100.0 * float(dead_group_mask(group_r).double().mean())}
    return draws, live, group_r, paid, tele, n


def _group(advantages):
    def visit(scores, rewards, gen, ctx):
        draws, _, group_r, paid, tele, n = _draw(scores, rewards, gen, ctx)
        adv = advantages(group_r, ctx)
        return Visit(policy_gradient_loss(scores, draws, adv), paid, tele, n)
    return visit


def _dapo(scores, rewards, gen, ctx):
    draws, live, group_r, paid, tele, n = _draw(scores, rewards, gen, ctx, dynamic=True)
    adv = grpo_advantages(group_r, "trl")
    tele["dropped"] = 100.0 * float((~live).double().mean())
    loss = policy_gradient_loss(scores[live], draws[live], adv[live]) if live.any() else scores.sum() * 0.0
    return Visit(loss, paid, tele, n)


def _rloo_kl(scores, rewards, gen, ctx):
    """RLOO plus ``RLOO_KL * KL(q || uniform)``, the KL term exact (it needs no reward)."""
    draws, _, group_r, paid, tele, n = _draw(scores, rewards, gen, ctx)
    logq = torch.log_softmax(scores, -1)
    kl = (logq.exp() * (logq + math.log(scores.shape[-1]))).sum(-1).mean()
    return Visit(policy_gradient_loss(scores, draws, rloo_advantages(group_r)) + RLOO_KL * kl, paid, tele, n)


def _sft(scores, rewards, gen, ctx):
    return Visit(torch.nn.functional.cross_entropy(scores, ctx.targets[ctx.idx]), _rows(ctx, scores.shape[-1]), {}, 0)


def _dpo(scores, rewards, gen, ctx):
    rows = [j for j, i in enumerate(ctx.idx.tolist()) if i in ctx.pairs]
    if rows:
        c = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][0] for j in rows])
        rj = torch.as_tensor([ctx.pairs[int(ctx.idx[j])][1] for j in rows])
        logq = torch.log_softmax(scores[rows], -1)
        # the reference is the initial head: uniform, so its log-ratio terms cancel
        margin = logq.gather(1, c[:, None]) - logq.gather(1, rj[:, None])
        loss = -torch.nn.functional.logsigmoid(ctx.dpo_beta * margin).mean()
    else:
        loss = scores.sum() * 0.0
    return Visit(loss, _rows(ctx, scores.shape[-1]), {}, 0)


def _shortlist_top(prev, q, rewards, n_tools, K, rng):
    return shortlist_top(q, K, rng)


def _shortlist_grow(prev, q, rewards, n_tools, K, rng):
    return shortlist_grow(prev, q, rewards, n_tools, K, rng=rng)


def _grpo_adv(group_r, ctx):
    return grpo_advantages(group_r, ctx.grpo_variant)


register(Estimator("fgpo", "FGPO", "#1b7f79", "exact", "eq1", _exact))
register(Estimator("grpo", "GRPO", "#c8553d", "sampled", "differential", _group(_grpo_adv)))
register(Estimator("grpo-eq1", "GRPO (Eq. 1)", "#8c2d1c", "sampled", "eq1", _group(_grpo_adv)))
register(Estimator("rloo", "RLOO", "#e59a52", "sampled", "differential", _group(lambda g, ctx: rloo_advantages(g))))
register(Estimator("dapo", "GRPO + dynamic sampling", "#d4a017", "sampled", "differential", _dapo))
register(Estimator("sft", "SFT", "#9c6fb6", "imitation", "eq1", _sft))
register(Estimator("dpo", "DPO", "#3b6ea5", "imitation", "eq1", _dpo))
register(Estimator("fgpo-k", "FGPO k={}", "Blues", "budgeted", "eq1", _exact, dial="fgpo-k",
                   family="fgpo", examples=("fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8")))
register(Estimator("shortlist-top", "Shortlist (top) K={}", "Greens", "budgeted", "eq1", _shortlist,
                   dial="shortlist-top", candidates=_shortlist_top,
                   presets=(), examples=("shortlist-top16",)))
register(Estimator("shortlist-grow", "Shortlist (grow) K={}", "Purples", "budgeted", "eq1", _shortlist,
                   dial="shortlist-grow", candidates=_shortlist_grow,
                   presets=(), examples=("shortlist-grow16",)))
register(Estimator("rloo-kl", "RLOO + KL to uniform", "#7a4f2a", "sampled", "differential", _rloo_kl,
                   in_study=False, presets=()))
