"""T10, genomic signature: Karlin's relative dinucleotide abundances of the sequence against
those of reference genomes (Karlin and Burge, 1995).

For a sequence and its reverse complement together, ``rho*_XY = f_XY / (f_X f_Y)`` for each of
the 16 dinucleotides, and the distance of two signatures is ``delta* = (1/16) sum |rho*_XY(f) -
rho*_XY(g)|``, reported in thousandths as Karlin's tables do. Closely related genomes lie
within about 50; unrelated ones beyond 100. The references are whole DNA strings given by
name (by default the shipped genomes' training shares and human training exons, see
:func:`fgpo_core.genomics.tools.registry.default_signature_references`).
"""

from __future__ import annotations

from itertools import product
from typing import Mapping

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, reverse_complement, validate_sequence

__all__ = ["GenomicSignature", "rho_star", "delta_star"]

DINUCS = ["".join(p) for p in product("ACGT", repeat=2)]


def rho_star(seq: str) -> np.ndarray:
    """The 16 symmetrised relative dinucleotide abundances of ``seq`` (ACGT order; N ignored)."""
    both = seq + "N" + reverse_complement(seq)
    mono = np.array([both.count(b) for b in "ACGT"], dtype=float)
    di = np.array([_count_fast(both, d) for d in DINUCS], dtype=float)
    f1 = mono / max(mono.sum(), 1)
    f2 = di / max(di.sum(), 1)
    expected = np.outer(f1, f1).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, f2 / expected, 0.0)


def _count_fast(s: str, d: str) -> int:
    """Overlapping occurrences of a dinucleotide (str.count does not overlap)."""
    arr = np.frombuffer(s.encode(), dtype=np.uint8)
    return int(((arr[:-1] == ord(d[0])) & (arr[1:] == ord(d[1]))).sum())


def delta_star(a: np.ndarray, b: np.ndarray) -> float:
    """Karlin's delta* of two signatures, in thousandths."""
    return float(1000 * np.abs(a - b).mean())


class GenomicSignature:
    """T10: distance of the dinucleotide signature to each reference genome's."""

    name = "signature"
    title = "Genomic signature (Karlin's dinucleotide relative abundance)"
    version = "1"

    def __init__(self, references: Mapping[str, str], max_length: int = MAX_LENGTH):
        self.max_length = max_length
        self.references = {name: rho_star(seq) for name, seq in references.items()}

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            sig = rho_star(seq)
            dist = sorted(((delta_star(sig, ref), name) for name, ref in self.references.items()))
            records[label] = {
                "delta_star": {name: round(d, 1) for d, name in dist},
                "rho_star": {d: round(float(v), 3) for d, v in zip(DINUCS, sig)},
            }
            ls = ["CpG rho* {:.2f}, TpA rho* {:.2f}".format(sig[DINUCS.index("CG")], sig[DINUCS.index("TA")])]
            if dist:
                ls.append("Nearest genomes by delta* (x1000): " + ", ".join(f"{n} {d:.0f}" for d, n in dist[:3]))
            else:
                ls.append("No reference genomes")
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
