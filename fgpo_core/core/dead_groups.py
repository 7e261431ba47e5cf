"""Dead groups: when every rollout of a GRPO group earns the same reward.

GRPO draws ``G`` actions from a policy ``p`` and normalises each reward by the
group's mean and spread (Eq. 3). If all ``G`` rewards are equal the group is
*dead*: every advantage is zero and the question contributes no gradient.

Partition the actions of a question into *reward classes*, one per distinct
reward value, and let ``w_v`` be the policy mass of class ``v``. The ``G``
draws are independent, so the group is dead exactly when all of them land in
one class (Eq. 7)::

    P_dead(p, G) = sum_v  w_v ** G

Proposition 1 of the paper follows from this form: merging classes (a coarser
reward) never lowers P_dead, moving mass toward a larger class raises it, and
P_dead is Schur-convex in the class masses (smallest at equal masses, 1 when
one class holds all the mass).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "TABLE15_GROUP_SIZES",
    "reward_classes",
    "class_masses",
    "action_class_mass",
    "dead_group_probability",
    "dead_group_probability_from_masses",
    "dead_group_probability_mc",
    "dead_group_grid",
    "proposition_violations",
]

TABLE15_GROUP_SIZES = (1, 2, 4, 6, 8, 16, 32)
"""Group sizes of the paper's Table 15."""

DEFAULT_ATOL = 1e-9


def _check_pair(probs, rewards, atol_sum: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=float)
    r = np.asarray(rewards, dtype=float)
    if p.ndim == 0 or r.ndim == 0:
        raise ValueError("probs and rewards need a last axis of actions, shape [..., A]")
    try:
        p, r = np.broadcast_arrays(p, r)
    except ValueError as exc:
        raise ValueError(f"probs {np.shape(probs)} and rewards {np.shape(rewards)} do not broadcast") from exc
    if not np.isfinite(p).all() or not np.isfinite(r).all():
        raise ValueError("probs and rewards must be finite")
    if (p < 0).any():
        raise ValueError("probs must be non-negative")
    s = p.sum(-1)
    if not np.allclose(s, 1.0, atol=atol_sum):
        raise ValueError(f"probs must sum to 1 over the last axis (found sums from {s.min():.6g} to {s.max():.6g})")
    return p, r


def _check_G(G) -> int:
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or G < 1:
        raise ValueError(f"group size G must be a positive int, got {G!r}")
    return int(G)


def reward_classes(rewards, atol: float = DEFAULT_ATOL) -> np.ndarray:
    """Class id of every action: actions whose rewards agree within ``atol``.

    Rewards of each row are sorted and a new class starts wherever the gap to
    the previous value exceeds ``atol``, so classes are well defined even when
    the comparison is not exact. Ids run from 0 in order of increasing reward.
    Shape ``[..., A]`` in, integer ``[..., A]`` out.
    """
    r = np.asarray(rewards, dtype=float)
    order = np.argsort(r, axis=-1, kind="stable")
    sorted_r = np.take_along_axis(r, order, -1)
    new = np.diff(sorted_r, axis=-1) > atol
    ids_sorted = np.concatenate([np.zeros(r.shape[:-1] + (1,), dtype=np.int64), np.cumsum(new, axis=-1)], axis=-1)
    ids = np.empty_like(ids_sorted)
    np.put_along_axis(ids, order, ids_sorted, -1)
    return ids


def class_masses(probs, rewards, atol: float = DEFAULT_ATOL) -> np.ndarray:
    """Policy mass of every reward class, ``w_v``; shape ``[..., A]``.

    Entry ``v`` holds the mass of class ``v`` (ids from :func:`reward_classes`);
    entries beyond the number of classes of that row are zero.
    """
    p, r = _check_pair(probs, rewards)
    ids = reward_classes(r, atol)
    A = p.shape[-1]
    rows = int(np.prod(p.shape[:-1], dtype=np.int64))
    flat = (ids.reshape(rows, A) + A * np.arange(rows)[:, None]).ravel()  # one bin per (row, class)
    return np.bincount(flat, weights=p.reshape(-1).astype(float), minlength=rows * A).reshape(p.shape)


def dead_group_probability_from_masses(masses, G: int) -> np.ndarray:
    """Eq. 7 from class masses: ``sum_v w_v ** G`` over the last axis."""
    G = _check_G(G)
    w = np.asarray(masses, dtype=float)
    if (w < 0).any():
        raise ValueError("class masses must be non-negative")
    return (w**G).sum(-1)


def action_class_mass(probs, rewards, atol: float = DEFAULT_ATOL) -> np.ndarray:
    """For every action, the mass of its reward class, ``w(a)``; shape ``[..., A]``."""
    p, r = _check_pair(probs, rewards)
    ids = reward_classes(r, atol)
    same = ids[..., :, None] == ids[..., None, :]
    return (same * p[..., None, :]).sum(-1)


def dead_group_probability(probs, rewards, G: int, atol: float = DEFAULT_ATOL, where=None) -> np.ndarray:
    """Eq. 7: probability that ``G`` i.i.d. draws from ``probs`` all share one reward.

    Parameters
    ----------
    probs : array ``[..., A]``
        Sampling distribution over the ``A`` actions of each question (for GRPO,
        the generation-induced distribution p_gen).
    rewards : array ``[..., A]``
        ``r(s, a)``; actions whose rewards agree within ``atol`` form one class.
    G : int
        Group size (the paper: 6).

    where : boolean array ``[..., A]``, optional
        Count only dead groups that land on actions where this is True (for
        example the wrong answers). Since ``sum_v w_v ** G = sum_a p_a w(a) ** (G-1)``,
        the restriction keeps the terms of the chosen actions.

    Returns the probability for every leading index, shape ``[...]``.
    """
    G = _check_G(G)
    if where is None:
        return dead_group_probability_from_masses(class_masses(probs, rewards, atol), G)
    p, r = _check_pair(probs, rewards)
    terms = p * action_class_mass(p, r, atol) ** (G - 1)
    return np.where(np.broadcast_to(np.asarray(where, dtype=bool), terms.shape), terms, 0.0).sum(-1)


def dead_group_probability_mc(
    probs, rewards, G: int, n_groups: int = 10_000, seed: int | None = 0, atol: float = DEFAULT_ATOL
) -> np.ndarray:
    """Monte Carlo estimate of Eq. 7: draw ``n_groups`` groups of ``G`` actions per row
    and count the groups whose rewards are all equal (within ``atol``)."""
    G = _check_G(G)
    p, r = _check_pair(probs, rewards)
    if n_groups < 1:
        raise ValueError("n_groups must be >= 1")
    rng = np.random.default_rng(seed)
    lead = p.shape[:-1]
    flat_p = p.reshape(-1, p.shape[-1])
    flat_r = r.reshape(-1, r.shape[-1])
    out = np.empty(flat_p.shape[0])
    cdf = np.cumsum(flat_p, -1)
    cdf[:, -1] = 1.0
    for i in range(flat_p.shape[0]):
        u = rng.random((n_groups, G))
        draws = np.searchsorted(cdf[i], u, side="right")
        rew = flat_r[i][draws]
        out[i] = np.mean(rew.max(1) - rew.min(1) <= atol)
    return out.reshape(lead)


def dead_group_grid(
    policies: Mapping[str, np.ndarray],
    rewards,
    group_sizes: Sequence[int] = TABLE15_GROUP_SIZES,
    atol: float = DEFAULT_ATOL,
) -> pd.DataFrame:
    """Mean dead-group probability (%) over questions, one row per policy and one
    column per ``G``: the shape of the paper's Table 15.

    ``policies`` maps a name to probabilities ``[N, A]``; ``rewards`` is ``[N, A]``.
    """
    rows = {}
    for name, probs in policies.items():
        w = class_masses(probs, rewards, atol)
        rows[name] = [100.0 * dead_group_probability_from_masses(w, G).mean() for G in group_sizes]
    return pd.DataFrame.from_dict(rows, orient="index", columns=[f"G={G}" for G in group_sizes])


def proposition_violations(
    n_trials: int, rng: np.random.Generator, probability=dead_group_probability_from_masses
) -> dict[str, int]:
    """Proposition 1 tested on ``n_trials`` random class masses (2-8 classes, G in 2..16):
    how often merging two classes lowers ``probability`` (``merge``), moving mass from a smaller
    to a larger class fails to raise it (``transfer``), and it falls below its minimum at equal
    masses, ``k ** (1 - G)`` (``uniform minimum``). Every count is 0 for Eq. 7; ``probability``
    can be replaced to see a wrong formula caught."""
    out = {"merge": 0, "transfer": 0, "uniform minimum": 0}
    for _ in range(n_trials):
        k = int(rng.integers(2, 9))
        G = int(rng.choice([2, 3, 4, 6, 8, 16]))
        w = rng.dirichlet(np.full(k, rng.choice([0.2, 1.0, 5.0])))
        P = probability(w, G)
        i, j = rng.choice(k, 2, replace=False)
        merged = np.r_[np.delete(w, [i, j]), w[i] + w[j]]
        out["merge"] += int(probability(merged, G) < P - 1e-12)
        big, small = (i, j) if w[i] >= w[j] else (j, i)
        delta = rng.uniform(0.05, 1) * w[small]
        # only the two classes involved change: compare their terms (the rest cancels, and could
        # swallow the difference in rounding)
        pair = np.array([w[big], w[small]])
        out["transfer"] += int(not probability(pair + [delta, -delta], G) > probability(pair, G))
        out["uniform minimum"] += int(P < k ** (1.0 - G) - 1e-12)
    return out
