"""The regularizers any estimator composes with, one object each: regularization is its own axis.

A regularizer is a per-question penalty ``R(s)`` on the policy ``q = softmax(l)`` of a question's
candidate scores ``l`` ``[B, A]``, added with a weight ``w`` to the estimator's loss (smaller is
better; :func:`~fgpo_core.core.registry.visit_loss` composes them):

* ``none``: no penalty;
* ``ent``: the entropy bonus of Eq. 5, ``R = -H(q) = sum_a q_a log q_a`` (FGPO's beta, the paper's 0.03);
* ``klu``: ``R = KL(q || uniform) = sum_a q_a (log q_a + log A)`` (``= log A - H(q)``);
* ``klr``: ``R = KL(q || q_ref) = sum_a q_a (log q_a - log q_ref,a)``, the reference being the
  policy at the start of training (the initial head, or the frozen earlier stage of post-training),
  given as its log-probabilities ``[B, A]``.

With a mask ``[B, A]`` (a budgeted estimator's evaluated subsets) q is renormalised over the kept
actions and is exactly zero elsewhere, as the exact loss renormalises it (``A`` becomes each row's
count of kept actions; the reference is renormalised over the same actions).

The penalties read ``(q, logq)`` already computed, so an exact estimator folds ``w * R`` into its
per-question objective on the same ``log_softmax`` (:func:`~fgpo_core.core.estimators.exact_objective`)
and a sampled one adds ``w * mean_s R(s)`` to its surrogate; either is exact (it reads no reward).
A new regularizer is one penalty function and one :func:`register_regularizer` call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .settings import PAPER_BETA

__all__ = [
    "Regularizer",
    "REGULARIZERS",
    "register_regularizer",
    "regularizer",
    "log_policy",
    "negative_entropy",
    "kl_uniform",
    "kl_reference",
]


def log_policy(scores: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, log q)`` of candidate scores ``[B, A]``; with ``mask`` q is renormalised over the kept
    actions, zero elsewhere, and ``log q`` is set to 0 there (so ``q log q`` adds 0, without NaN)."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    logq = torch.log_softmax(scores, dim=-1)
    q = logq.exp()
    if mask is not None:
        logq = logq.masked_fill(~mask, 0.0)
    return q, logq


def negative_entropy(
    q: torch.Tensor, logq: torch.Tensor, mask: torch.Tensor | None = None, reference: torch.Tensor | None = None
) -> torch.Tensor:
    """``-H(q) = sum_a q_a log q_a`` per question (Eq. 5's bonus, as a penalty)."""
    return (q * logq).sum(-1)


def kl_uniform(
    q: torch.Tensor, logq: torch.Tensor, mask: torch.Tensor | None = None, reference: torch.Tensor | None = None
) -> torch.Tensor:
    """``KL(q || uniform) = sum_a q_a (log q_a + log A)`` per question (``A``: the kept actions)."""
    if mask is None:
        return (q * (logq + math.log(q.shape[-1]))).sum(-1)
    return (q * (logq + torch.log(mask.sum(-1, keepdim=True).to(logq.dtype)))).sum(-1)


def kl_reference(
    q: torch.Tensor, logq: torch.Tensor, mask: torch.Tensor | None = None, reference: torch.Tensor | None = None
) -> torch.Tensor:
    """``KL(q || q_ref) = sum_a q_a (log q_a - log q_ref,a)`` per question; ``reference``: the
    reference policy's log-probabilities ``[B, A]`` (renormalised over ``mask`` when given)."""
    if reference is None:
        raise ValueError("the klr regularizer needs the reference policy's log-probabilities")
    ref = torch.as_tensor(reference, dtype=logq.dtype).detach()
    if mask is not None:
        ref = torch.log_softmax(ref.masked_fill(~mask, float("-inf")), -1).masked_fill(~mask, 0.0)
    return (q * (logq - ref)).sum(-1)


@dataclass(frozen=True)
class Regularizer:
    """One regularizer of :data:`REGULARIZERS`."""

    name: str
    """Its name in a method name (``grpo-ent0.03``) and in ``EstimatorSettings.regularizer``."""
    label: str
    """How the chapters name it."""
    weight: float
    """Its default weight (an estimator may declare its own)."""
    penalty: Callable[..., torch.Tensor] | None
    """``(q, logq, mask=None, reference=None) -> [B]``, to be minimised (None: no penalty)."""
    needs_reference: bool = False
    """Whether it reads the reference policy (``VisitContext.reference``)."""

    def __call__(
        self, scores: torch.Tensor, mask: torch.Tensor | None = None, reference: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The penalty ``[B]`` of candidate scores ``[B, A]`` (zeros for ``none``)."""
        q, logq = log_policy(scores, mask)
        if self.penalty is None:
            return torch.zeros(scores.shape[:-1], dtype=scores.dtype)
        return self.penalty(q, logq, mask, reference)


REGULARIZERS: dict[str, Regularizer] = {}
"""Every regularizer by name."""


def register_regularizer(reg: Regularizer) -> Regularizer:
    """Add ``reg`` to :data:`REGULARIZERS` (a name may be registered once)."""
    if reg.name in REGULARIZERS:
        raise ValueError(f"regularizer {reg.name!r} is already registered")
    REGULARIZERS[reg.name] = reg
    return reg


def regularizer(name: str) -> Regularizer:
    """The regularizer of a name; an unknown one raises ValueError."""
    try:
        return REGULARIZERS[name]
    except KeyError:
        raise ValueError(f"unknown regularizer {name!r}; use one of {', '.join(REGULARIZERS)}") from None


register_regularizer(Regularizer("none", "no regularizer", 0.0, None))
register_regularizer(Regularizer("ent", "entropy bonus", PAPER_BETA, negative_entropy))
register_regularizer(Regularizer("klu", "KL to uniform", 0.05, kl_uniform))
register_regularizer(Regularizer("klr", "KL to the reference policy", 0.05, kl_reference, needs_reference=True))
