"""How many motif-scan hits chance alone gives: what a reader must know before reading a scan.

The motif scan (:mod:`fgpo_core.genomics.tools.motifs`) reports every window whose score has
``p < 1e-4`` under each of its matrices, on both strands. With hundreds of matrices a random
sequence collects dozens of such hits; :func:`expected_chance_hits` gives their exact expected
number under the scan's own background (uniform, independent bases).
"""

from __future__ import annotations

import numpy as np

__all__ = ["threshold_pvalues", "expected_chance_hits"]


def threshold_pvalues(db) -> np.ndarray:
    """Per matrix of ``db`` (a :class:`~fgpo_core.genomics.tools.motifs.MotifDatabase`), the exact
    probability that one window of a random sequence reaches its reporting threshold: the survival
    function at the threshold (0 for a matrix that cannot reach ``p < 1e-4``, whose tail is empty)."""
    out = np.zeros(db.n_motifs)
    for m in range(db.n_motifs):
        lo, hi = int(db.tail_offsets[m]), int(db.tail_offsets[m + 1])
        out[m] = float(db.tail[lo]) if hi > lo else 0.0
    return out


def expected_chance_hits(db, length: int) -> float:
    """The expected number of hits the scan reports on a random sequence of ``length`` bases (both
    strands, uniform background): ``sum_m 2 (L - w_m + 1) P_m``, with ``P_m`` the chance that one
    window reaches matrix ``m``'s threshold (:func:`threshold_pvalues`) and a matrix wider than the
    sequence contributing nothing. Linearity of expectation: overlapping windows need no care."""
    if length < 0:
        raise ValueError(f"a sequence length is at least 0, got {length}")
    windows = np.clip(length - np.asarray(db.widths, dtype=np.int64) + 1, 0, None)
    return float(2 * (windows * threshold_pvalues(db)).sum())
