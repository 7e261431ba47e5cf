"""T1, sequence composition: base content, CpG observed/expected, GC skew, top
3-mers and codon statistics. Nothing is trained; every number is a count."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, encode, reverse_complement, validate_sequence

__all__ = ["Composition", "composition_record", "CODON_TABLES"]

CODON_TABLES = {"E. coli": "e_coli_316407", "B. subtilis": "b_subtilis_1423", "H. sapiens": "h_sapiens_9606"}
"""Organisms whose codon usage (python-codon-tables, from Kazusa) the codon statistics compare with."""

STOPS = ("TAA", "TAG", "TGA")
MIN_ORF = 90


@lru_cache(maxsize=None)
def _relative_adaptiveness() -> dict[str, dict[str, float]]:
    """Per organism, each codon's frequency over the most used synonymous codon (CAI weights)."""
    import python_codon_tables as pct

    out = {}
    for org, key in CODON_TABLES.items():
        table = pct.get_codons_table(key)
        w = {}
        for aa, codons in table.items():
            if aa == "*":
                continue
            top = max(codons.values())
            for codon, f in codons.items():
                w[codon] = max(f, 1e-3) / top
        out[org] = w
    return out


def _longest_orf(seq: str) -> tuple[str, str]:
    """Longest stretch of codons without a stop over the six frames (no start codon
    required: fragments cut genes anywhere). Returns (orf, frame label)."""
    best, label = "", ""
    for strand, s in (("+", seq), ("-", reverse_complement(seq))):
        for f in range(3):
            run_start = f
            for i in range(f, len(s) - 2, 3):
                if s[i:i + 3] in STOPS:
                    if i - run_start > len(best):
                        best, label = s[run_start:i], f"{strand}{f + 1}"
                    run_start = i + 3
            end = f + (len(s) - f) // 3 * 3
            if end - run_start > len(best):
                best, label = s[run_start:end], f"{strand}{f + 1}"
    return best, label


def composition_record(seq: str) -> dict:
    """All T1 statistics of one validated, upper-case sequence."""
    L = len(seq)
    codes = encode(seq)
    counts = np.bincount(codes, minlength=5)
    a, c, g, t, n = (int(x) for x in counts)
    acgt = max(a + c + g + t, 1)
    cpg = seq.count("CG")
    exp_cpg = c * g / L if L else 0.0
    kmers = Counter(seq[i:i + 3] for i in range(L - 2) if "N" not in seq[i:i + 3])
    top = sorted(kmers.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    orf, frame = _longest_orf(seq)
    if not orf.strip("N"):  # a run of unknown bases is no open frame
        orf, frame = "", ""
    stops = {}
    for strand, s in (("+", seq), ("-", reverse_complement(seq))):
        for f in range(3):
            cod = [s[i:i + 3] for i in range(f, len(s) - 2, 3)]
            stops[f"{strand}{f + 1}"] = round(100.0 * sum(x in STOPS for x in cod) / max(len(cod), 1), 1)
    rec = {
        "length": L,
        "gc_percent": round(100.0 * (g + c) / acgt, 2),
        "at_percent": round(100.0 * (a + t) / acgt, 2),
        "n_count": n,
        "cpg_observed_expected": round(cpg / exp_cpg, 3) if exp_cpg > 0 else None,
        "gc_skew": round((g - c) / (g + c), 3) if g + c else None,
        "top_3mers": [[k, v] for k, v in top],
        "longest_orf_bp": len(orf),
        "longest_orf_frame": frame,
        "stops_per_100_codons": stops,
        "codon_adaptation": None,
    }
    codons = [orf[i:i + 3] for i in range(0, len(orf) - 2, 3) if "N" not in orf[i:i + 3]]
    if len(orf) >= MIN_ORF and codons:  # no unambiguous codon: no adaptation to report (not NaN)
        rec["codon_adaptation"] = {
            org: round(float(np.exp(np.mean([np.log(w.get(cd, 1e-3)) for cd in codons]))), 3)
            for org, w in _relative_adaptiveness().items()
        }
    return rec


class Composition:
    """T1: base composition, CpG observed/expected, GC skew, top 3-mers, codon statistics."""

    name = "composition"
    title = "Sequence composition"
    version = "1"

    def __init__(self, max_length: int = MAX_LENGTH):
        self.max_length = max_length

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            r = composition_record(seq)
            records[label] = r
            ls = [f"Length {r['length']} bp; GC {r['gc_percent']:.1f}%, AT {r['at_percent']:.1f}%"
                  + (f"; {r['n_count']} N" if r["n_count"] else "")]
            cpg = "n/a" if r["cpg_observed_expected"] is None else f"{r['cpg_observed_expected']:.2f}"
            skew = "n/a" if r["gc_skew"] is None else f"{r['gc_skew']:+.2f}"
            ls.append(f"CpG observed/expected {cpg}; GC skew {skew}")
            ls.append("Top 3-mers: " + ", ".join(f"{k} ({v})" for k, v in r["top_3mers"]))
            ls.append(f"Longest open frame {r['longest_orf_bp']} bp ({r['longest_orf_frame'] or 'none'}); "
                      "stops per 100 codons " + " ".join(f"{k}:{v:g}" for k, v in r["stops_per_100_codons"].items()))
            if r["codon_adaptation"]:
                ls.append("Codon adaptation of that frame: "
                          + ", ".join(f"{org} {v:.2f}" for org, v in r["codon_adaptation"].items()))
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
