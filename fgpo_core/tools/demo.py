"""Small labelled sets built from shipped genomes and repeats, for examples, benchmarks and tests.

These are demonstrations of the tools on real sequences, not benchmark suites:
the benchmarks build their own reference sets from their training splits.
"""
from __future__ import annotations

import numpy as np

from .. import data
from .expert import KmerSpectrumEncoder, ReferenceSet
from .homology import HomologyDatabase

__all__ = ["TAXA", "genome_fragments", "taxonomy_references", "mutate", "repeat_database"]

TAXA = ("Escherichia coli", "Corynebacterium diphtheriae", "Bacillus amyloliquefaciens", "Kutzneria sp. 744")


def genome_fragments(n_per_taxon: int, length: int, rng: np.random.Generator, taxa=TAXA):
    """Random fragments (no N) of the shipped bacterial genomes: (sequences, labels)."""
    seqs, labels = [], []
    for org in taxa:
        g = data.genome(org)
        got = 0
        while got < n_per_taxon:
            p = int(rng.integers(0, len(g) - length))
            frag = g[p:p + length]
            if "N" not in frag:
                seqs.append(frag)
                labels.append(org)
                got += 1
    return seqs, labels


def taxonomy_references(n_per_taxon: int = 100, length: int = 300, seed: int = 0, encoder=None) -> ReferenceSet:
    """A 'taxonomy' reference set of genome fragments (for demonstrations)."""
    rng = np.random.default_rng(seed)
    seqs, labels = genome_fragments(n_per_taxon, length, rng)
    return ReferenceSet.build("taxonomy", [f"ref{i}" for i in range(len(seqs))], seqs, labels,
                              encoder or KmerSpectrumEncoder())


def mutate(seq: str, rate: float, rng: np.random.Generator, indel_rate: float = 0.0) -> str:
    """Substitute each base with probability ``rate`` (a different base) and insert or
    delete one with probability ``indel_rate``: a diverged copy."""
    out = []
    for c in seq:
        u = rng.random()
        if u < indel_rate / 2:
            continue
        if u < indel_rate:
            out.append(str(rng.choice(list("ACGT"))))
        out.append(str(rng.choice([b for b in "ACGT" if b != c])) if rng.random() < rate else c)
    return "".join(out)


def repeat_database(families=("ALU", "MIR", "L1", "THE1", "MLT1", "LTR"), min_length: int = 150,
                    max_length: int = 1000, seed: int = 0) -> HomologyDatabase:
    """A labelled database of primer3-py's repeat consensus sequences whose names start with
    one of ``families`` (label = that family), ambiguity codes resolved at random."""
    rng = np.random.default_rng(seed)
    ids, seqs, labels = [], [], []
    for name, s in data.repeat_consensus().items():
        fam = next((f for f in families if name.upper().startswith(f)), None)
        if fam is None or len(s) < min_length:
            continue
        ids.append(name)
        seqs.append(data.resolve_iupac(s, rng)[:max_length])
        labels.append(fam)
    return HomologyDatabase(ids, seqs, labels)
