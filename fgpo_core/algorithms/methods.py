"""A method name's estimator and settings, for the loops that are not the policy head's: the teaching
bandit (:mod:`.bandit`) and the LM selector's FGPO loop (:mod:`.fgpo`).

:func:`resolve_method` reads a method name of the registry (``fgpo``, ``fgpo-k4``, ``grpo-G16``,
``rloo``...) against a loop's :class:`~fgpo_core.core.settings.EstimatorSettings`; :func:`context`
turns the settings into what one visit reads; :func:`visit_gradient` is one visit's gradient with
respect to the candidate scores, by autograd through the estimator's own loss (the bandit's gradient
study). Nothing here computes an estimator: every loss is the registry's.
"""

from __future__ import annotations

from dataclasses import fields

import torch

from ..core.method_names import MODIFIERS, parse_method
from ..core.registry import ESTIMATORS, Estimator, VisitContext
from ..core.settings import EstimatorSettings
from .loop import visit_context

__all__ = ["resolve_method", "context", "visit_gradient", "method_of"]

_SETTINGS = {f.name for f in fields(EstimatorSettings)}
_REGULARIZER_KEYS = {m.field for m in MODIFIERS if m.regularizer}


def resolve_method(
    method: str, settings: EstimatorSettings, run_fields=()
) -> tuple[Estimator, EstimatorSettings, dict]:
    """The estimator of ``method``, ``settings`` with the name's modifiers applied (a dial's number is
    ``k``: ``fgpo-k4``; a bare dial prefix, ``fgpo-k``, reads ``settings.k``) and the values of the
    modifiers that set one of the loop's own ``run_fields`` (``lr``, ``epochs``). A modifier that sets
    nothing this loop reads raises ValueError, in one line."""
    bare = next((e for e in ESTIMATORS.values() if e.dial and method == e.dial), None)
    if bare is not None:
        return bare, settings, {}
    spec = parse_method(method)
    run = {}
    for name, value in spec.overrides.items():
        if name in _SETTINGS or name in _REGULARIZER_KEYS:
            continue
        if name not in run_fields:
            raise ValueError(
                f"{method!r}: modifier {name!r} has no meaning here; it sets none of "
                f"{', '.join(sorted(_SETTINGS | set(run_fields)))}"
            )
        run[name] = value
    if spec.n_train is not None or spec.drop_tool is not None:
        raise ValueError(f"{method!r}: -n and -noT choose a study's data, not an estimator's setting")
    return spec.estimator, spec.settings(settings), run


def context(est: Estimator, s: EstimatorSettings, r_eq1: torch.Tensor) -> VisitContext:
    """The whole table's :class:`~fgpo_core.core.registry.VisitContext` of ``est`` under ``s``
    (``r_eq1 [N, A]``: Eq. 1's rewards, for ``best_seen``, SFT's targets and DPO's pairs)."""
    return visit_context(est, r_eq1, settings=s)


def visit_gradient(
    est: Estimator, scores: torch.Tensor, rewards: torch.Tensor, gen: torch.Generator, ctx: VisitContext
) -> tuple[torch.Tensor, int]:
    """One visit of ``est`` to the rows of ``scores [B, A]``: the ascent direction ``-B dloss/dscores``
    (each row's share of the minibatch loss, by autograd) and the reward evaluations it used.
    ``ctx`` is the visit's context for these rows (``idx``: the questions of the rows)."""
    leaf = scores.detach().clone().requires_grad_(True)
    v = est.visit(leaf, rewards, gen, ctx)
    (grad,) = torch.autograd.grad(v.loss, leaf, allow_unused=True)
    if grad is None:
        grad = torch.zeros_like(leaf)
    return -grad * len(leaf), v.n_reward


def method_of(kind: str, size: int) -> str:
    """The method name of the gradient study's older spelling ``(kind, size)``: ``("grpo", G)`` or
    ``("fgpo-k", k)``."""
    if kind == "grpo":
        return f"grpo-G{size}"
    if kind == "fgpo-k":
        return f"fgpo-k{size}"
    if kind in ESTIMATORS:
        return f"{kind}-G{size}"
    raise ValueError(f"unknown estimator kind {kind!r}")
