"""T5, homology search (the five-tool stress test): k-mer seeding, then
Smith-Waterman local alignment (Biopython's PairwiseAligner) against a local
labelled database built from training and development sequences only.

For each query strand, database sequences sharing at least ``min_seeds`` k-mers
(``HomologyDatabase.k``, 10 by default) are ranked by seed count; the best ``max_candidates`` are aligned.
Self-hits (same id) and near-duplicates (identity above 99.5% over at least
half the query) are dropped; a hit counts when identity >= 60% and query
coverage >= 30%. The evidence lists the best hits and a consensus label
(alignment-score weighted).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, encode, reverse_complement, validate_sequence

__all__ = ["HomologyDatabase", "HomologySearch"]

MIN_IDENTITY = 60.0
MIN_COVERAGE = 30.0
MAX_IDENTITY = 99.5


def _aligner():
    from Bio.Align import PairwiseAligner

    al = PairwiseAligner()
    al.mode = "local"
    al.match_score, al.mismatch_score = 2.0, -3.0
    al.open_gap_score, al.extend_gap_score = -5.0, -2.0
    return al


@dataclass
class HomologyDatabase:
    """Labelled sequences with a k-mer seed index (k-mer -> database sequence and position)."""

    ids: list[str]
    seqs: list[str]
    labels: list[str]
    k: int = 10
    band: int = 32
    index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not (len(self.ids) == len(self.seqs) == len(self.labels)):
            raise ValueError("ids, seqs and labels must have equal lengths")
        self.seqs = [s.upper() for s in self.seqs]
        self._powers = 4 ** np.arange(self.k - 1, -1, -1)
        index = defaultdict(list)
        for i, s in enumerate(self.seqs):
            pos, hashes = self._kmers(s)
            for p, h in zip(pos.tolist(), hashes.tolist()):
                index[h].append((i, p))
        self.index = {h: np.array(v, dtype=np.int64) for h, v in index.items()}

    def _kmers(self, seq: str) -> tuple[np.ndarray, np.ndarray]:
        """Start positions and integer hashes of the k-mers of ``seq`` that contain no N."""
        codes = encode(seq)
        if len(codes) < self.k:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        win = np.lib.stride_tricks.sliding_window_view(codes, self.k)
        ok = np.flatnonzero((win < 4).all(1))
        return ok, win[ok] @ self._powers

    def diagonal_seeds(self, seq: str) -> tuple[np.ndarray, np.ndarray]:
        """Per database sequence, the most seeds that fall in one diagonal band
        (``band`` wide) and that band's diagonal offset (database minus query position).
        Homologous sequences pile their seeds on one diagonal; chance matches scatter."""
        best = np.zeros(len(self.seqs), dtype=np.int64)
        offset = np.zeros(len(self.seqs), dtype=np.int64)
        pos, hashes = self._kmers(seq)
        found = [(self.index[h], p) for p, h in zip(pos.tolist(), hashes.tolist()) if h in self.index]
        if not found:
            return best, offset
        seq_idx = np.concatenate([m[:, 0] for m, _ in found])
        diag = np.concatenate([m[:, 1] - p for m, p in found])
        key = seq_idx * (1 << 32) + (diag // self.band + (1 << 20))
        keys, counts = np.unique(key, return_counts=True)
        order = np.lexsort((-counts, keys >> 32))
        first = np.unique(keys[order] >> 32, return_index=True)[1]
        sel = order[first]
        idx = keys[sel] >> 32
        best[idx] = counts[sel]
        offset[idx] = ((keys[sel] & ((1 << 32) - 1)) - (1 << 20)) * self.band
        return best, offset


class HomologySearch:
    """T5: k-mer seeding + Smith-Waterman against a labelled train/dev database."""

    name = "homology"
    title = "Homology search (local alignment to labelled sequences)"
    version = "1"

    def __init__(self, database: HomologyDatabase, top: int = 3, max_candidates: int = 3, min_seeds: int = 3,
                 max_length: int = MAX_LENGTH):
        self.db = database
        self.top, self.max_candidates, self.min_seeds = top, max_candidates, min_seeds
        self.max_length = max_length
        self.aligner = _aligner()

    def search(self, seq: str, exclude_id: str | None = None) -> dict:
        hits, cands = [], []
        for strand, q in (("+", seq), ("-", reverse_complement(seq))):
            counts, offset = self.db.diagonal_seeds(q)
            if exclude_id is not None:
                counts[[i for i, x in enumerate(self.db.ids) if x == exclude_id]] = 0
            cands += [(int(counts[i]), strand, q, i, int(offset[i])) for i in np.flatnonzero(counts >= self.min_seeds)]
        cands.sort(key=lambda c: (-c[0], c[1], c[3]))
        for n_seeds, strand, q, i, off in cands[:self.max_candidates]:
            target = self.db.seqs[i]
            # align against the stretch of the database sequence around the seeded diagonal
            lo = max(0, off - self.db.band - 20)
            hi = min(len(target), off + len(q) + 2 * self.db.band + 20)
            aln = self.aligner.align(q, target[lo:hi])[0]
            c = aln.counts()
            cols = c.identities + c.mismatches + c.gaps
            identity = 100.0 * float(c.identities) / max(cols, 1)
            qspan = aln.aligned[0]
            coverage = 100.0 * float(qspan[-1][1] - qspan[0][0]) / len(q) if len(qspan) else 0.0
            if identity > MAX_IDENTITY and coverage >= 50.0:
                continue  # the query itself, or a duplicate of it
            hits.append({"id": self.db.ids[i], "label": self.db.labels[i], "strand": strand,
                         "identity": round(identity, 1), "coverage": round(coverage, 1),
                         "score": float(aln.score), "seeds": n_seeds})
        hits.sort(key=lambda h: (-h["score"], h["id"]))
        kept = [h for h in hits if h["identity"] >= MIN_IDENTITY and h["coverage"] >= MIN_COVERAGE]
        best = {}
        for h in kept:  # best hit per database sequence (either strand)
            best.setdefault(h["id"], h)
        kept = list(best.values())
        weights = defaultdict(float)
        for h in kept:
            weights[h["label"]] += h["score"]
        total = sum(weights.values())
        consensus = max(weights, key=weights.get) if weights else None
        return {"hits": kept[:self.top], "n_hits": len(kept), "consensus": consensus,
                "consensus_share": round(weights[consensus] / total, 3) if consensus else None}

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            r = self.search(seq, inp.question_id)
            records[label] = r
            if not r["hits"]:
                lines[label] = [f"No hit with identity >= {MIN_IDENTITY:g}% and coverage >= {MIN_COVERAGE:g}%."]
                continue
            ls = [f"{r['n_hits']} hits; consensus label {r['consensus']} (score share {r['consensus_share']:.2f})"]
            ls += [f"{h['label']}: identity {h['identity']:.1f}%, query coverage {h['coverage']:.1f}% ({h['strand']})"
                   for h in r["hits"]]
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
