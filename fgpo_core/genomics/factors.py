"""The JASPAR 2024 factors each part of the project names, drawn so the three sets are disjoint.

The benchmark's TF-motif family (:func:`motif_factors`), the reader's curriculum
(:func:`curriculum_factors`) and the benchmark's regulator family (:func:`regulator_factors`)
each draw transcription factors with a single matrix of width >= ``min_width``, each with a seed
of its own; the curriculum leaves out the motif family's factors and the regulator family leaves
out both, so the reader is never taught a factor a benchmark asks about.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .tools.motifs import single_matrix_factors

__all__ = ["motif_factors", "curriculum_factors", "regulator_factors"]


def _draw(seed: int, n: int, min_width: int, exclude=()) -> tuple:
    single = single_matrix_factors(min_width)
    free = sorted(k for k in single if k not in set(exclude))
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(free, size=min(n, len(free)), replace=False).tolist())
    return tuple((p, single[p]) for p in pick)


@lru_cache(maxsize=1)
def motif_factors(n: int = 40, min_width: int = 10) -> tuple:
    """Transcription factors with a single, long enough JASPAR 2024 matrix (no dimers): the label
    space of the benchmark's ``tf_motif`` family."""
    return _draw(2024, n, min_width)


@lru_cache(maxsize=1)
def curriculum_factors(n: int = 60, min_width: int = 10) -> tuple:
    """Factors with a single matrix of width >= ``min_width`` that the benchmark's TF-motif family
    does not use: the reader's curriculum's ``recognition`` skill."""
    return _draw(11, n, min_width, {name for name, _ in motif_factors()})


@lru_cache(maxsize=1)
def regulator_factors(n: int = 40, min_width: int = 10) -> tuple:
    """Factors that neither the TF-motif family nor the reader's curriculum uses, drawn with a seed
    of their own: the label space of the benchmark's ``regulator`` family."""
    used = {name for name, _ in motif_factors()} | {name for name, _ in curriculum_factors()}
    return _draw(2026, n, min_width, used)
