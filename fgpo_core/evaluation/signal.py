"""What one sampled visit tells the policy, at a given policy: dead groups and gradient signal-to-noise.

At a policy ``q(.|s)`` over the ``A`` subsets of one question, a sampled estimator's single-visit
ascent direction on the logits, ``g_hat``, is a random vector (the draw of ``G`` subsets decides
it). Exact FGPO's direction is the fixed vector ``g = q (r - J)`` (Eq. 8), so its noise is zero.
For a sampled estimator this module measures, per question:

* the **dead-group probability**: the chance that all ``G`` draws give one reward, so that the
  visit's direction is zero (Eq. 7, :func:`fgpo_core.core.dead_groups.dead_group_probability`);
* the **signal-to-noise ratio** ``SNR = ||E g_hat||^2 / E ||g_hat - E g_hat||^2``: the squared length
  of the mean direction over the total variance of one visit's direction (the trace of its
  covariance). With ``D`` independent visits, ``||mean||^2 - tr(S)/D`` is unbiased for the numerator
  (``S``: the visits' sample covariance) and ``tr(S)`` for the denominator (:func:`signal_to_noise`).
  ``SNR = 1`` means one visit's noise is as large as its signal; averaging ``m`` visits multiplies
  the SNR by ``m``.

Only the reward's part of the direction is measured: a regularizer's gradient is exact under the
current q for every estimator (:func:`fgpo_core.core.registry.visit_loss`), so it adds no noise.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

__all__ = ["visit_directions", "signal_to_noise", "policy_signal"]


def visit_directions(probs, rewards, method: str, n_draws: int = 64, seed: int = 0, settings=None) -> np.ndarray:
    """``[n_draws, N, A]``: ``n_draws`` independent single-visit ascent directions on the logits of the
    registry's estimator ``method`` (any method name, e.g. ``grpo``, ``rloo-G16``) at the policy
    ``probs [N, A]`` with rewards ``rewards [N, A]`` (the estimator's own reward kind), its loss
    differentiated by autograd with no regularizer."""
    import torch

    from ..algorithms.bandit import BANDIT_SETTINGS
    from ..algorithms.methods import context, resolve_method, visit_gradient

    p = np.asarray(probs, dtype=float)
    r = torch.as_tensor(np.asarray(rewards, dtype=float))
    if p.ndim != 2 or p.shape != tuple(r.shape):
        raise ValueError(f"probs and rewards must both be [N, A], got {p.shape} and {tuple(r.shape)}")
    if n_draws < 2:
        raise ValueError(f"n_draws must be at least 2, got {n_draws}")
    est, s, _ = resolve_method(method, replace(settings or BANDIT_SETTINGS, regularizer="none"))
    if est.kind != "sampled":
        raise ValueError(f"{method} is not a sampled estimator")
    N, A = p.shape
    logp = torch.as_tensor(np.log(np.clip(p, 1e-300, None)))
    ctx = context(est, s, r)
    rows = torch.arange(N).repeat(n_draws)
    gen = torch.Generator().manual_seed(seed)
    g, _ = visit_gradient(est, logp[rows], r[rows], gen, replace(ctx, idx=rows, optimal=ctx.optimal[rows]))
    return g.numpy().reshape(n_draws, N, A)


def signal_to_noise(directions) -> np.ndarray:
    """``[N]``: the SNR of each question's visits ``directions [D, N, A]`` (module docstring): the
    unbiased squared length of the mean over the trace of the covariance (0 where the mean's length
    does not exceed its noise; NaN where every visit gives the same direction, e.g. all dead)."""
    d = np.asarray(directions, dtype=float)
    D = d.shape[0]
    mean = d.mean(0)
    trace = ((d - mean) ** 2).sum(-1).sum(0) / (D - 1)
    signal = np.maximum((mean**2).sum(-1) - trace / D, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(trace > 0, signal / trace, np.nan)


def policy_signal(probs, rewards, method: str, G: int, n_draws: int = 64, seed: int = 0) -> pd.DataFrame:
    """Per question at the policy ``probs``: the dead-group probability of ``G`` draws (Eq. 7) and the
    SNR of ``method``'s single visit (its ``G`` set to ``G``)."""
    from ..core.dead_groups import dead_group_probability
    from ..core.settings import EstimatorSettings

    directions = visit_directions(probs, rewards, method, n_draws, seed, EstimatorSettings(G=G))
    return pd.DataFrame(
        {
            "dead": dead_group_probability(np.asarray(probs, dtype=float), np.asarray(rewards, dtype=float), G),
            "snr": signal_to_noise(directions),
        }
    )
