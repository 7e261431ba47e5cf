"""Compact candidate sets of subsets per question, for exact optimisation past enumeration (the
paper's future work for large libraries): the policy's top candidates, or greedy growth through
the subset lattice. Both are rebuilt from the current policy once per epoch."""

from __future__ import annotations

import numpy as np

__all__ = ["shortlist_top", "shortlist_grow"]


def shortlist_top(q: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """The policy's top candidates plus a few uniform draws: per question the ``K - u`` subsets
    of highest q and ``u = K // 4`` (at least one when ``K > 1``) drawn uniformly from the
    rest, so the set keeps exploring; boolean ``[N, A]``."""
    N, A = q.shape
    if not 1 <= K <= A:
        raise ValueError(f"K must lie in 1..{A}, got {K}")
    u = max(1, K // 4) if 1 < K < A else 0
    out = np.zeros((N, A), dtype=bool)
    top = np.argsort(-q, axis=1, kind="stable")[:, : K - u]
    out[np.arange(N)[:, None], top] = True
    for i in range(N):
        if u:
            out[i, rng.choice(np.flatnonzero(~out[i]), u, replace=False)] = True
    return out


def shortlist_grow(
    prev: np.ndarray | None,
    q: np.ndarray,
    rewards: np.ndarray,
    n_tools: int,
    K: int,
    keep: int = 2,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Greedy growth through the subset lattice: per question, the ``keep`` best subsets of the
    previous shortlist by their (already paid) reward, ties broken by q, and every subset one
    tool away from them (one tool added or removed), the most likely under q first, up to ``K``.
    The first shortlist (``prev=None``) is the empty subset and the single tools, by q.
    Remaining ties (as under a uniform policy) are broken at random with ``rng``; without it,
    by the lower mask.
    Boolean ``[N, A]``; only rewards inside ``prev`` are read."""
    N, A = q.shape
    if not 1 <= K <= A:
        raise ValueError(f"K must lie in 1..{A}, got {K}")
    flips = 1 << np.arange(n_tools)
    out = np.zeros((N, A), dtype=bool)
    for i in range(N):
        jitter = rng.random(A) if rng is not None else np.zeros(A)
        if prev is None:
            cands = np.concatenate([[0], flips])
            best = np.array([], dtype=int)
        else:
            inside = np.flatnonzero(prev[i])
            order = np.lexsort((jitter[inside], -q[i, inside], -rewards[i, inside]))  # reward, then q
            best = inside[order[:keep]]
            cands = np.unique(np.concatenate([best, (best[:, None] ^ flips[None, :]).ravel()]))
        rest = np.setdiff1d(cands, best)
        rest = rest[np.lexsort((jitter[rest], -q[i, rest]))]
        chosen = np.concatenate([best, rest])[:K]
        if len(chosen) < K:  # a small neighbourhood: fill with the policy's next most likely subsets
            taken = set(chosen.tolist())
            extra = [a for a in np.lexsort((jitter, -q[i])) if a not in taken]
            chosen = np.concatenate([chosen, extra[: K - len(chosen)]])
        out[i, chosen.astype(int)] = True
    return out
