"""Small labelled sets built from shipped genomes and repeats, for examples, benchmarks and tests.

These are demonstrations of the tools on real sequences, not benchmark suites:
the benchmarks build their own reference sets from their training splits.
"""

from __future__ import annotations

import numpy as np

from .. import data
from .expert import KmerSpectrumEncoder, ReferenceSet
from .homology import HomologyDatabase

__all__ = [
    "TAXA",
    "genome_fragments",
    "taxonomy_references",
    "mutate",
    "repeat_database",
    "expert_accuracy",
    "homology_curve",
]

TAXA = ("Escherichia coli", "Corynebacterium diphtheriae", "Bacillus amyloliquefaciens", "Kutzneria sp. 744")


def genome_fragments(n_per_taxon: int, length: int, rng: np.random.Generator, taxa=TAXA):
    """Random fragments (no N) of the shipped bacterial genomes: (sequences, labels)."""
    seqs, labels = [], []
    for org in taxa:
        g = data.genome(org)
        got = 0
        while got < n_per_taxon:
            p = int(rng.integers(0, len(g) - length))
            frag = g[p : p + length]
            if "N" not in frag:
                seqs.append(frag)
                labels.append(org)
                got += 1
    return seqs, labels


def taxonomy_references(n_per_taxon: int = 100, length: int = 300, seed: int = 0, encoder=None) -> ReferenceSet:
    """A 'taxonomy' reference set of genome fragments (for demonstrations)."""
    rng = np.random.default_rng(seed)
    seqs, labels = genome_fragments(n_per_taxon, length, rng)
    return ReferenceSet.build(
        "taxonomy", [f"ref{i}" for i in range(len(seqs))], seqs, labels, encoder or KmerSpectrumEncoder()
    )


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


def repeat_database(
    families=("ALU", "MIR", "L1", "THE1", "MLT1", "LTR"), min_length: int = 150, max_length: int = 1000, seed: int = 0
) -> HomologyDatabase:
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


def expert_accuracy(
    lengths=(100, 200, 500, 1000),
    n_queries: int = 25,
    n_references: int = 100,
    ref_length: int = 300,
    seed: int = 0,
    encoder=None,
):
    """Top-vote accuracy of the genomic expert on fresh genome fragments of several lengths
    against a taxonomy reference set of ``n_references`` fragments per taxon."""
    import pandas as pd

    from .expert import GenomicExpert

    ref = taxonomy_references(n_references, ref_length, seed, encoder)
    expert = GenomicExpert({"taxonomy": ref}, encoder)
    rng = np.random.default_rng(seed + 1)
    rows = []
    for L in lengths:
        seqs, labels = genome_fragments(n_queries, L, rng)
        for s, lab in zip(seqs, labels):
            votes = expert.vote(s, "taxonomy")["votes"]
            share = next((v["vote_share"] for v in votes if v["label"] == lab), 0.0)
            rows.append({"length": L, "taxon": lab, "correct": votes[0]["label"] == lab, "true_label_share": share})
    return pd.DataFrame(rows)


def homology_curve(
    rates=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5), n: int = 20, fragment: int = 250, seed: int = 0, family: str = "ALU"
):
    """Divergence against detection: fragments of ``family`` consensus sequences mutated at
    each substitution rate (plus 1% indels), searched against the repeat database (which
    holds the consensus itself, as a repeat library does)."""
    import pandas as pd

    from .homology import HomologySearch

    db = repeat_database(seed=seed)
    tool = HomologySearch(db)
    rng = np.random.default_rng(seed)
    members = [i for i, lab in enumerate(db.labels) if lab == family]
    rows = []
    for rate in rates:
        for _ in range(n):
            i = members[int(rng.integers(len(members)))]
            src = db.seqs[i]
            start = int(rng.integers(0, max(1, len(src) - fragment)))
            q = mutate(src[start : start + fragment], rate, rng, indel_rate=0.01)
            r = tool.search(q)
            top = r["hits"][0] if r["hits"] else None
            rows.append(
                {
                    "substitution_rate": rate,
                    "found_family": r["consensus"] == family,
                    "identity": top["identity"] if top else np.nan,
                    "coverage": top["coverage"] if top else np.nan,
                }
            )
    return pd.DataFrame(rows)
