"""Synthetic reward tables for teaching: shaped like the paper's GenomeQA table (no-tool
accuracy, oracle, the share of questions whose best subset is empty, the outcome-degenerate
share), built from a seed in milliseconds. A stand-in for the model-free chapters, not data."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..core.subsets import ActionSpace
from .reward_table import RewardTable

__all__ = ["SyntheticTableConfig", "make_synthetic_table"]


@dataclass
class SyntheticTableConfig:
    """A latent-logit model of a frozen reasoner's correctness.

    ``correct[s, a] = 1[b_s + sum_{t in a} (E[f(s), t] + u_{s,t})
    - crowding * max(|a| - 1, 0) + eps_{s,a} > 0]``: a question's base ability
    ``b_s``, per-family tool effects (each family has one decisive tool), a
    question-specific tool utility ``u``, a penalty for crowded evidence and
    independent response noise ``eps``. Defaults were fitted so the table's
    ceilings resemble the paper's GenomeQA table (see the chapter).
    """

    n_questions: int = 1000
    """Number of questions."""
    n_tools: int = 4
    """Tools in the library (actions = 2**n_tools)."""
    n_families: int = 5
    """Question families; family f's decisive tool is slot f mod n_tools."""
    base_mean: float = -0.85
    """Mean of the base logit b_s (sets the no-tool accuracy)."""
    base_std: float = 3.15
    """Spread of b_s across questions (sets how many questions no tool can change)."""
    decisive_effect: float = 1.5
    """Logit added by the family's decisive tool."""
    side_effect: float = 0.4
    """Logit added by each non-decisive tool."""
    utility_std: float = 1.2
    """Question-specific spread of every tool's effect."""
    noise_std: float = 1.35
    """Independent noise per (question, subset): the reasoner's fickleness."""
    crowding: float = 0.7
    """Logit lost for each tool beyond the first (more evidence can hurt)."""


def make_synthetic_table(config: SyntheticTableConfig | None = None, seed: int = 0) -> RewardTable:
    """Draw a synthetic reward table; identical for identical ``(config, seed)``."""
    cfg = config or SyntheticTableConfig()
    if cfg.n_questions < 1 or cfg.n_families < 1:
        raise ValueError("n_questions and n_families must be >= 1")
    rng = np.random.default_rng(seed)
    space = ActionSpace(cfg.n_tools)
    family = rng.integers(0, cfg.n_families, cfg.n_questions)
    effects = np.full((cfg.n_families, cfg.n_tools), cfg.side_effect)
    effects[np.arange(cfg.n_families), np.arange(cfg.n_families) % cfg.n_tools] = cfg.decisive_effect
    base = rng.normal(cfg.base_mean, cfg.base_std, cfg.n_questions)
    tool_logit = effects[family] + rng.normal(0.0, cfg.utility_std, (cfg.n_questions, cfg.n_tools))
    logit = (
        base[:, None]
        + tool_logit @ space.membership.T.astype(float)
        - cfg.crowding * np.maximum(space.sizes - 1, 0)[None, :]
        + rng.normal(0.0, cfg.noise_std, (cfg.n_questions, space.n_actions))
    )
    return RewardTable(logit > 0, cfg.n_tools, family, manifest={"synthetic": asdict(cfg), "seed": seed})
