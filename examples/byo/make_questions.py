"""Questions of one's own, in schema v1: is a fragment of a bacterial genome coding, and on which strand?

Genes are called with pyrodigal on a genome that the ``pyrodigal`` package ships; 300-bp
fragments are cut inside genes (read on the gene's strand or on the opposite one) or between
genes, from the first 60% of the genome for training, the next 10% for dev and the last 30%
for test, so no split shares DNA. Run::

    python examples/byo/make_questions.py --out my_questions --n-train 120 --n-dev 40 --n-test 120
"""
import argparse
import json
from pathlib import Path

import numpy as np

from fgpo_core.genomics.benchmarks.sources import gene_calls
from fgpo_core.genomics.data import genome

ORGANISM = "Corynebacterium diphtheriae"
LENGTH = 300
OPTIONS = ["a protein-coding gene on the given strand",
           "a protein-coding gene on the opposite strand",
           "no gene: intergenic DNA",
           "a ribosomal RNA gene"]
SPLITS = {"train": (0.0, 0.6), "dev": (0.6, 0.7), "test": (0.7, 1.0)}
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def fragments(split: str, n: int, rng) -> list[tuple[str, int]]:
    """``n`` (sequence, class) pairs of one split: class 0 and 1 inside a gene (read on its
    strand or the other), class 2 between genes; in equal numbers."""
    g = genome(ORGANISM)
    lo, hi = (int(f * len(g)) for f in SPLITS[split])
    genes = [(b - 1, e, s) for b, e, s in gene_calls(ORGANISM) if lo <= b - 1 and e <= hi and e - b + 1 >= LENGTH + 60]
    covered = np.zeros(len(g), dtype=bool)
    for b, e, _ in gene_calls(ORGANISM):
        covered[b - 1:e] = True
    out = []
    while len(out) < n:
        cls = len(out) % 3
        if cls < 2:
            b, e, strand = genes[rng.integers(len(genes))]
            start = int(rng.integers(b + 30, e - LENGTH - 30))
            seq = g[start:start + LENGTH]
            if strand < 0:
                seq = seq.translate(COMPLEMENT)[::-1]  # the gene's own strand
            if cls == 1:
                seq = seq.translate(COMPLEMENT)[::-1]  # the other strand
        else:
            start = int(rng.integers(lo, hi - LENGTH))
            if covered[start:start + LENGTH].any():
                continue
            seq = g[start:start + LENGTH]
        if set(seq) <= set("ACGT"):
            out.append((seq, cls))
    return out


def question(i: int, split: str, seq: str, cls: int, rng) -> dict:
    order = rng.permutation(4)
    options = {L: OPTIONS[k] for L, k in zip("ABCD", order)}
    answer = "ABCD"[int(np.flatnonzero(order == cls)[0])]
    text = (f"A {LENGTH}-bp fragment of a bacterial genome, read 5' to 3': {seq}\n"
            "Which best describes it?")
    return {"id": f"strand-{split}-{i:04d}", "suite": "strand", "split": split, "family": "strand",
            "shape": "describe", "question": text, "options": options, "answer": answer,
            "sequences": {"": seq}, "provenance": {"package": "pyrodigal", "organism": ORGANISM}, "schema": 1}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-train", type=int, default=120)
    ap.add_argument("--n-dev", type=int, default=40)
    ap.add_argument("--n-test", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for split, n in (("train", a.n_train), ("dev", a.n_dev), ("test", a.n_test)):
        rows = [question(i, split, s, c, rng) for i, (s, c) in enumerate(fragments(split, n, rng))]
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        print(f"{out / f'{split}.jsonl'}: {len(rows)} questions")


if __name__ == "__main__":
    main()
