"""T6, gene calling: Prodigal's gene finder (pyrodigal) in metagenomic mode on the sequence
itself, with its pre-trained models, so a fragment needs no training on its genome.

It reports each call's strand relative to the sequence as given, whether the call's start
and stop codons lie inside the sequence (a gene cut by the fragment's ends runs off it), its
start codon and Prodigal's score. Nothing is trained here; the models ship with pyrodigal.
"""

from __future__ import annotations

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, validate_sequence

__all__ = ["GeneCalls", "gene_records", "MIN_GENE"]

MIN_GENE = 90
"""Calls shorter than this many bp are dropped (Prodigal's own minimum on a closed gene)."""


def gene_records(seq: str, finder=None) -> list[dict]:
    """The genes pyrodigal calls on one validated sequence, best score first: 1-based
    ``begin``/``end`` on the given strand, ``strand`` (+1 given, -1 opposite), whether the
    ``start`` and ``stop`` lie inside the sequence, the start codon and the score."""
    import pyrodigal

    finder = finder or pyrodigal.GeneFinder(meta=True)
    out = []
    for g in finder.find_genes(seq.encode()):
        if g.end - g.begin + 1 < MIN_GENE:
            continue
        out.append(
            {
                "begin": int(g.begin),
                "end": int(g.end),
                "strand": int(g.strand),
                "start_inside": not g.partial_begin if g.strand > 0 else not g.partial_end,
                "stop_inside": not g.partial_end if g.strand > 0 else not g.partial_begin,
                "start_codon": g.start_type,
                "score": round(float(g.score), 1),
            }
        )
    return sorted(out, key=lambda r: (-r["score"], r["begin"]))


class GeneCalls:
    """T6: genes called by pyrodigal (metagenomic mode) on each sequence."""

    name = "genes"
    title = "Gene calls (Prodigal, metagenomic mode)"

    def __init__(self, max_length: int = MAX_LENGTH):
        import pyrodigal

        self.max_length = max_length
        self.finder = pyrodigal.GeneFinder(meta=True)
        self.version = f"pyrodigal-{pyrodigal.__version__}"

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            genes = gene_records(seq, self.finder)
            records[label] = {"genes": genes}
            if not genes:
                lines[label] = [f"No gene of {MIN_GENE} bp or more called on either strand"]
                continue
            ls = []
            for g in genes[:2]:
                ends = {
                    (True, True): "start and stop inside",
                    (True, False): "start inside, runs off at the stop end",
                    (False, True): "stop inside, runs off at the start end",
                    (False, False): "runs off both ends",
                }[(g["start_inside"], g["stop_inside"])]
                ls.append(
                    f"Gene on the {'given' if g['strand'] > 0 else 'opposite'} strand, bases {g['begin']}-{g['end']}"
                    f" ({ends}; start {g['start_codon'] if g['start_inside'] else 'n/a'}); score {g['score']:.1f}"
                )
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
