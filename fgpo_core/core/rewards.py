"""Rewards of a (question, subset) pair.

* Eq. 1, the reward FGPO optimises::

      r(s, a) = (2 * 1[y_hat(s, a) = y*] - 1) + lambda * (1 - 2 |a| / n)

  Correctness moves the reward by 2 and parsimony by at most ``2 * lambda``
  (0.2 at the paper's lambda = 0.10), so correctness always dominates and,
  among subsets that agree on correctness, fewer tools score higher. The
  binary arm of the paper is lambda = 0.

* The differential reward of the paper's GRPO arm::

      r_diff = 1[correct with a] - 1[correct with no tools]   in {-1, 0, +1}
      r_grpo = 0.95 * r_diff + 0.05 * r_fmt,   r_fmt = 1 for a parseable completion
"""

from __future__ import annotations

import numpy as np

__all__ = ["LAMBDA", "eq1_reward", "differential_reward"]

LAMBDA = 0.10
"""The paper's parsimony weight lambda."""


def _as_bool(correct, name: str = "correct") -> np.ndarray:
    arr = np.asarray(correct)
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0/1 or booleans")
        arr = arr.astype(bool)
    return arr


def eq1_reward(correct, sizes, n_tools: int, lam: float = LAMBDA) -> np.ndarray:
    """Eq. 1: correctness in {-1, +1} plus ``lam * (1 - 2|a|/n)``.

    ``correct`` and ``sizes`` (|a|) broadcast against each other; the result
    lies in ``[-1 - lam, 1 + lam]``.
    """
    correct = _as_bool(correct)
    sizes = np.asarray(sizes)
    if n_tools < 1:
        raise ValueError(f"n_tools must be >= 1, got {n_tools}")
    if (sizes < 0).any() or (sizes > n_tools).any():
        raise ValueError(f"|a| must lie in 0..{n_tools}")
    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam}")
    return (2.0 * correct - 1.0) + lam * (1.0 - 2.0 * sizes / n_tools)


def differential_reward(correct, correct_empty, parsed=True, w_diff: float = 0.95, w_fmt: float = 0.05) -> np.ndarray:
    """The GRPO arm's reward ``w_diff * r_diff + w_fmt * r_fmt``.

    ``r_diff = 1[correct] - 1[correct_empty]`` compares a subset with the
    empty subset on the same question; a completion that did not parse
    (``parsed`` False) gets ``r_fmt = 0`` and counts as incorrect.
    """
    correct = _as_bool(correct)
    correct_empty = _as_bool(correct_empty, "correct_empty")
    parsed = _as_bool(parsed, "parsed")
    r_diff = (correct & parsed).astype(float) - correct_empty.astype(float)
    return w_diff * r_diff + w_fmt * parsed.astype(float)
