"""Questions of one's own, in schema v1, of two kinds about 300-bp fragments of bacterial genomes.

* ``strand``: is a fragment of *Corynebacterium diphtheriae* coding, and on which strand? Genes
  are called with pyrodigal on the genome the ``pyrodigal`` package ships; fragments are cut
  inside genes (read on the gene's strand or on the opposite one) or between genes.
* ``origin``: which of four genomes that pyrodigal and pyhmmer ship is a fragment from?

Each genome gives its first 60% to training, the next 10% to dev and the last 30% to test
(``origin`` keeps to N-free stretches), so no split shares DNA. The two kinds alternate. Beside
the questions, ``references.jsonl`` holds the genomic expert's labelled sequences: each training
question's fragment labelled with its correct option, and ``--n-references`` more fragments of
each genome's training part labelled with its name. Run::

    python examples/byo/make_questions.py --out my_questions --n-train 120 --n-dev 40 --n-test 120
"""
import argparse
import json
from pathlib import Path

import numpy as np

from fgpo_core.genomics.benchmarks.sources import gene_calls, genome_region
from fgpo_core.genomics.data import GENOMES, genome

ORGANISM = "Corynebacterium diphtheriae"
ORIGINS = ["Corynebacterium diphtheriae", "Kutzneria sp. 744", "Bacillus amyloliquefaciens", "metagenome contig"]
LENGTH = 300
KINDS = {
    "strand": (["a protein-coding gene on the given strand", "a protein-coding gene on the opposite strand",
                "no gene: intergenic DNA", "a ribosomal RNA gene"], "Which best describes it?"),
    "origin": (ORIGINS, "Which genome is it from?"),
}
"""Each kind's four options (the class of a fragment is its option's index) and its question."""
SPLITS = {"train": (0.0, 0.6), "dev": (0.6, 0.7), "test": (0.7, 1.0)}
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def strand_fragments(split: str, n: int, rng) -> list[tuple[str, int]]:
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


def origin_fragments(split: str, n: int, rng) -> list[tuple[str, int]]:
    """``n`` (sequence, class) pairs of one split: class k a fragment of ``ORIGINS[k]``, each
    organism in turn."""
    out = []
    while len(out) < n:
        cls = len(out) % len(ORIGINS)
        start = genome_region(ORIGINS[cls], split).sample_start(LENGTH, rng)
        seq = genome(ORIGINS[cls])[start:start + LENGTH].upper()
        if set(seq) <= set("ACGT"):
            out.append((seq, cls))
    return out


def question(i: int, split: str, kind: str, seq: str, cls: int, rng) -> dict:
    options, ask = KINDS[kind]
    order = rng.permutation(4)
    answer = "ABCD"[int(np.flatnonzero(order == cls)[0])]
    text = f"A {LENGTH}-bp fragment of a bacterial genome, read 5' to 3': {seq}\n{ask}"
    organism = ORIGINS[cls] if kind == "origin" else ORGANISM
    return {"id": f"{kind}-{split}-{i:04d}", "suite": "own", "split": split, "family": kind, "shape": "describe",
            "question": text, "options": {L: options[k] for L, k in zip("ABCD", order)}, "answer": answer,
            "sequences": {"": seq}, "provenance": {"package": GENOMES[organism][0], "organism": organism}, "schema": 1}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-train", type=int, default=120)
    ap.add_argument("--n-dev", type=int, default=40)
    ap.add_argument("--n-test", type=int, default=120)
    ap.add_argument("--n-references", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for split, n in (("train", a.n_train), ("dev", a.n_dev), ("test", a.n_test)):
        kinds = {"strand": strand_fragments(split, n - n // 2, rng), "origin": origin_fragments(split, n // 2, rng)}
        strand, origin = ([question(i, split, k, s, c, rng) for i, (s, c) in enumerate(f)] for k, f in kinds.items())
        rows = [r for pair in zip(strand, origin) for r in pair] + strand[len(origin):]
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        print(f"{out / f'{split}.jsonl'}: {len(rows)} questions")
        if split == "train":
            labelled = [{"id": r["id"], "family": r["family"], "seq": r["sequences"][""],
                         "label": r["options"][r["answer"]]} for r in rows]
            labelled += [{"id": f"origin-reference-{i:04d}", "family": "origin", "seq": seq, "label": ORIGINS[cls]}
                         for i, (seq, cls) in enumerate(origin_fragments("train", a.n_references * len(ORIGINS), rng))]
            with open(out / "references.jsonl", "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in labelled)
            print(f"{out / 'references.jsonl'}: {len(labelled)} labelled sequences")


if __name__ == "__main__":
    main()
