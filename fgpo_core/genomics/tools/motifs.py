"""T2, motif scan: every JASPAR 2024 CORE vertebrate matrix (from pyjaspar, no
download) scanned on both strands with FIMO-style log-odds scores and exact p-values.

Scores are log2 odds against a uniform background with FIMO's pseudocount
(0.1, spread by the background), rounded to 0.01 bit. The p-value of a score is
computed exactly from the distribution of the rounded score under the
background, by convolving the matrix's columns, so short matrices (7 bp or
less) get correct, non-zero p-values. Hits with ``p < 1e-4`` are reported.

The matrices and their score distributions are computed once and cached on
disk (``FGPO_CACHE``, default ``~/.cache/fgpo_core``), so a new process pays a
file read, not the JASPAR query and the convolutions.
"""
from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...io import atomic_file
from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, encode, validate_sequence

__all__ = ["MotifDatabase", "MotifScan", "load_motifs", "scan", "cache_dir", "motif_pvalue_distribution",
           "single_matrix_factors", "best_hit_by_factor"]

P_THRESHOLD = 1e-4
PSEUDOCOUNT = 0.1
SCALE = 100  # score units per bit
_N_PENALTY = -10 ** 6


def cache_dir() -> Path:
    d = Path(os.environ.get("FGPO_CACHE", Path.home() / ".cache" / "fgpo_core"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def motif_pvalue_distribution(int_pssm: np.ndarray) -> tuple[int, np.ndarray]:
    """Exact survival function of an integer PSSM's score under a uniform background.

    ``int_pssm`` is ``[w, 4]``. Returns ``(min_score, sf)`` with
    ``sf[k] = P(score >= min_score + k)``.
    """
    lo = 0
    dist = np.ones(1)
    for col in int_pssm:
        cmin, cmax = int(col.min()), int(col.max())
        new = np.zeros(len(dist) + cmax - cmin)
        for v in col:
            s = int(v) - cmin
            new[s:s + len(dist)] += 0.25 * dist
        dist, lo = new, lo + cmin
    sf = np.cumsum(dist[::-1])[::-1]
    return lo, np.minimum(sf, 1.0)


@dataclass
class MotifDatabase:
    """Integer PSSMs of a JASPAR collection, padded to a common width, with the score
    threshold for ``p < 1e-4`` and the survival function above it for each matrix."""

    ids: np.ndarray
    names: np.ndarray
    widths: np.ndarray
    pssm: np.ndarray          # [M, W, 5] int32; column 4 (N) is a large penalty
    thresholds: np.ndarray    # [M] smallest integer score with p < P_THRESHOLD
    tail_offsets: np.ndarray  # [M + 1] into tail
    tail: np.ndarray          # concatenated sf[threshold .. max] per matrix
    release: str

    def __post_init__(self) -> None:
        # [W * 5, M] float32 for one matrix product per strand; integer scores stay exact
        self.flat = np.ascontiguousarray(self.pssm.reshape(len(self.ids), -1).T.astype(np.float32))

    @property
    def n_motifs(self) -> int:
        return len(self.ids)

    def pvalue(self, m: int, score: int) -> float:
        k = int(score) - int(self.thresholds[m])
        seg = self.tail[self.tail_offsets[m]:self.tail_offsets[m + 1]]
        if k < 0 or len(seg) == 0:
            return 1.0
        return float(seg[min(k, len(seg) - 1)])

    def site_score(self, m: int, site: str) -> int:
        """Integer score (0.01-bit units) of a site of the matrix's width."""
        codes = encode(site.upper())
        w = int(self.widths[m])
        if len(codes) != w:
            raise ValueError(f"matrix {self.ids[m]} is {w} bp wide, the site has {len(codes)} bases")
        return int(self.pssm[m, np.arange(w), codes].sum())

    def site_pvalue(self, m: int, site: str) -> float:
        """Exact p-value of a site's score under matrix ``m`` (any score, not only hits)."""
        w = int(self.widths[m])
        lo, sf = motif_pvalue_distribution(self.pssm[m, :w, :4])
        k = self.site_score(m, site) - lo
        return float(sf[min(max(k, 0), len(sf) - 1)]) if k < len(sf) else 0.0

    def index_of(self, name_or_id: str) -> int:
        for arr in (self.ids, self.names):
            hit = np.flatnonzero(arr == name_or_id)
            if len(hit):
                return int(hit[0])
        raise KeyError(f"no JASPAR matrix named {name_or_id!r}")

    def probabilities(self, m: int) -> np.ndarray:
        """Position probability matrix ``[w, 4]`` implied by the integer log-odds (for plotting)."""
        w = int(self.widths[m])
        p = 0.25 * 2.0 ** (self.pssm[m, :w, :4] / SCALE)
        return p / p.sum(1, keepdims=True)


def _fetch(release: str, collection: str, tax_group: str):
    from pyjaspar import jaspardb

    return jaspardb(release=release).fetch_motifs(collection=collection, tax_group=[tax_group])


def _build(release: str, collection: str, tax_group: str) -> dict:
    motifs = _fetch(release, collection, tax_group)
    W = max(m.length for m in motifs)
    M = len(motifs)
    pssm = np.zeros((M, W, 5), dtype=np.int32)  # padding columns score 0 for every base and N
    thresholds = np.zeros(M, dtype=np.int64)
    tails, offsets = [], [0]
    for i, m in enumerate(motifs):
        counts = np.array([m.counts[b] for b in "ACGT"], dtype=float).T  # [w, 4]
        n = counts.sum(1, keepdims=True)
        freq = (counts + PSEUDOCOUNT * 0.25) / (n + PSEUDOCOUNT)
        ip = np.rint(np.log2(freq / 0.25) * SCALE).astype(np.int32)
        pssm[i, :m.length, :4] = ip
        pssm[i, :m.length, 4] = _N_PENALTY
        lo, sf = motif_pvalue_distribution(ip)
        k = int(np.argmax(sf < P_THRESHOLD)) if (sf < P_THRESHOLD).any() else len(sf)
        thresholds[i] = lo + k
        tails.append(sf[k:].astype(np.float64))
        offsets.append(offsets[-1] + len(sf) - k)
    return dict(ids=np.array([m.matrix_id for m in motifs]), names=np.array([m.name for m in motifs]),
                widths=np.array([m.length for m in motifs]), pssm=pssm, thresholds=thresholds,
                tail_offsets=np.array(offsets), tail=np.concatenate(tails) if tails else np.zeros(0))


@lru_cache(maxsize=4)
def load_motifs(release: str = "JASPAR2024", collection: str = "CORE", tax_group: str = "vertebrates") -> MotifDatabase:
    """The motif database, from the disk cache when present (built and cached otherwise)."""
    key = hashlib.sha256(f"{release}|{collection}|{tax_group}|{PSEUDOCOUNT}|{SCALE}|{P_THRESHOLD}|v1".encode()).hexdigest()[:12]
    name = f"motifs_{release}_{tax_group}_{key}.npz"
    data = None
    try:
        path = cache_dir() / name
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
            MotifDatabase(release=release, **data)  # every field there
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        data = None  # a torn or foreign cache file, or no cache folder to read: built again
    if data is None:
        data = _build(release, collection, tax_group)
        try:
            with atomic_file(cache_dir() / name) as fh:
                np.savez_compressed(fh, **data)
        except OSError as exc:  # a read-only or full cache folder: the database is used uncached
            print(f"warning: the motif database is not cached ({exc.strerror or exc}); set FGPO_CACHE to a "
                  "writable folder to keep it", file=sys.stderr)
    return MotifDatabase(release=release, **data)


def scan(db: MotifDatabase, seq: str) -> list[dict]:
    """All hits with ``p < 1e-4`` on both strands of one validated sequence."""
    L = len(seq)
    W = db.pssm.shape[1]
    hits = []
    if L == 0:
        return hits
    codes = encode(seq)
    rc_codes = np.where(codes < 4, 3 - codes, 4)[::-1]
    for strand, cds in (("+", codes), ("-", rc_codes)):
        X = np.zeros((L + W, 5), dtype=np.float32)
        X[np.arange(L), cds] = 1.0
        X[L:, 4] = 1.0  # padding reads as N: windows past the end never hit
        windows = np.lib.stride_tricks.sliding_window_view(X, (W, 5))[:L, 0].reshape(L, W * 5)
        S = windows @ db.flat  # integer scores, exact in float32 below 2**24
        # a matrix shorter than W only reads its own width: padding columns are zero except N
        valid = (np.arange(L)[:, None] + db.widths[None, :]) <= L
        S = np.where(valid, S, -np.inf)
        pos, mot = np.nonzero(S >= db.thresholds[None, :])
        for p, m in zip(pos.tolist(), mot.tolist()):
            score = int(round(float(S[p, m])))
            w = int(db.widths[m])
            start = p if strand == "+" else L - p - w
            hits.append({"matrix_id": str(db.ids[m]), "name": str(db.names[m]), "start": start + 1,
                         "end": start + w, "strand": strand, "score": score / SCALE,
                         "p_value": db.pvalue(m, score)})
    hits.sort(key=lambda h: (h["p_value"], -h["score"], h["start"], h["matrix_id"]))
    return hits


class MotifScan:
    """T2: JASPAR motif scan with exact p-values; reports hits with p < 1e-4."""

    name = "motif_scan"
    title = "Motif scan (JASPAR 2024 CORE vertebrates)"
    version = "1"

    def __init__(self, release: str = "JASPAR2024", top: int = 5, max_length: int = MAX_LENGTH):
        self.release = release
        self.top = top
        self.max_length = max_length
        self.db = load_motifs(release)

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            hits = scan(self.db, seq)
            best: dict[str, dict] = {}
            for h in hits:  # sorted by p-value: the first hit of a factor is its best
                best.setdefault(h["name"], h)
            top = list(best.values())[:self.top]
            records[label] = {"n_hits": len(hits), "n_factors": len(best), "top_hits": top}
            ls = [f"{len(hits)} hits with p < 1e-4 from {len(best)} factors (both strands)"]
            if top:
                ls.append("Strongest, one per factor:")
                ls.extend(f"{h['name']} ({h['matrix_id']}) at {h['start']}-{h['end']} ({h['strand']}), "
                          f"score {h['score']:.1f} bits, p = {h['p_value']:.1e}" for h in top)
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)


def single_matrix_factors(min_width: int = 10) -> dict[str, int]:
    """JASPAR factors (upper-case names) with exactly one matrix, at least ``min_width`` wide and
    not a dimer (``A::B``), mapped to that matrix: the factors a question can name unambiguously."""
    db = load_motifs()
    names: dict[str, list[int]] = {}
    for m in range(db.n_motifs):
        nm = str(db.names[m])
        if "::" in nm or db.widths[m] < min_width:
            continue
        names.setdefault(nm.upper(), []).append(m)
    return {k: v[0] for k, v in sorted(names.items()) if len(v) == 1}


def best_hit_by_factor(seq: str) -> dict[str, float]:
    """The best (smallest) p-value of each factor's hits in ``seq``, by upper-case name."""
    best: dict[str, float] = {}
    for h in scan(load_motifs(), seq):
        best.setdefault(h["name"].upper(), h["p_value"])
    return best
