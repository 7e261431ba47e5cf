"""T4, the genomic expert: cosine k-nearest neighbours (k = 15) over embeddings
of a labelled reference set drawn from the training split of the question's own
task. It reports the similarity-weighted vote share and the raw neighbour count
of every label.

The default encoder is a k-mer spectrum (k = 4, both strands, Hellinger
normalisation; see :class:`KmerSpectrumEncoder`). Any object with an
``encode(list[str]) -> ndarray`` method can replace it, for example
:class:`HFEncoder` over a frozen DNA language model already on disk.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, encode, validate_sequence

SELF_HIT_SIMILARITY = 0.9999
"""References at least this similar to the query are treated as the query itself and dropped."""

__all__ = ["Encoder", "KmerSpectrumEncoder", "HFEncoder", "ReferenceSet", "GenomicExpert"]


@runtime_checkable
class Encoder(Protocol):
    name: str

    def encode(self, seqs: Sequence[str]) -> np.ndarray: ...


class KmerSpectrumEncoder:
    """k-mer spectrum embedding.

    Counts every k-mer (default k = 4, 256 dimensions; k = 4 beat k = 2, 3, 5
    and 6 at telling bacterial genomes apart from 200-1,000 bp fragments) on the sequence and on
    its reverse complement (so a sequence and its reverse complement embed
    identically), skips k-mers containing N, turns counts into frequencies and
    takes their square root. The vectors have unit L2 norm, and their dot
    product is the Bhattacharyya coefficient of the two k-mer distributions:
    cosine similarity compares composition at the k-mer level, independent of
    length.
    """

    def __init__(self, k: int = 4):
        if not 1 <= k <= 8:
            raise ValueError("k must lie in 1..8")
        self.k = k
        self.name = f"kmer{k}"
        self._powers = 4 ** np.arange(k - 1, -1, -1)

    @property
    def dim(self) -> int:
        return 4 ** self.k

    def _counts(self, codes: np.ndarray) -> np.ndarray:
        if len(codes) < self.k:
            return np.zeros(self.dim)
        win = np.lib.stride_tricks.sliding_window_view(codes, self.k)
        ok = (win < 4).all(1)
        return np.bincount(win[ok] @ self._powers, minlength=self.dim).astype(float)

    def encode(self, seqs: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(seqs), self.dim))
        for i, s in enumerate(seqs):
            codes = encode(s.upper())
            rc = np.where(codes < 4, 3 - codes, 4)[::-1]
            c = self._counts(codes) + self._counts(rc)
            total = c.sum()
            if total > 0:
                out[i] = np.sqrt(c / total)
        return out


class HFEncoder:
    """Mean-pooled last hidden states of a frozen Hugging Face encoder read from a local
    directory (e.g. a nucleotide-transformer checkpoint already on disk); nothing is downloaded."""

    def __init__(self, path: str, batch_size: int = 16, device: str = "cpu", max_length: int = 512):
        from transformers import AutoModel, AutoTokenizer

        self.name = f"hf:{path}"
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).to(device).eval()
        self.batch_size, self.device, self.max_length = batch_size, device, max_length

    def encode(self, seqs: Sequence[str]) -> np.ndarray:
        import torch

        from ...hf import mean_pool

        outs = []
        with torch.no_grad():
            for i in range(0, len(seqs), self.batch_size):
                batch = self.tokenizer(list(seqs[i:i + self.batch_size]), return_tensors="pt", padding=True,
                                       truncation=True, max_length=self.max_length).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                outs.append(mean_pool(hidden, batch["attention_mask"]).float().cpu().numpy())
        return np.concatenate(outs) if outs else np.zeros((0, 0))


@dataclass
class ReferenceSet:
    """Labelled reference embeddings of one task (from its training split only)."""

    task: str
    ids: np.ndarray
    labels: np.ndarray
    embeddings: np.ndarray  # [n, d], rows with unit norm

    @classmethod
    def build(cls, task: str, ids: Sequence[str], seqs: Sequence[str], labels: Sequence[str],
              encoder: Encoder) -> "ReferenceSet":
        if not (len(ids) == len(seqs) == len(labels)) or len(ids) == 0:
            raise ValueError("a reference set needs equally many ids, sequences and labels, at least one")
        emb = np.asarray(encoder.encode(list(seqs)), dtype=float)
        norm = np.linalg.norm(emb, axis=1, keepdims=True)
        return cls(task, np.asarray(ids, dtype=str), np.asarray(labels, dtype=str), emb / np.maximum(norm, 1e-12))

    def neighbours(self, query: np.ndarray, k: int = 15, exclude_id: str | None = None,
                   max_similarity: float = SELF_HIT_SIMILARITY) -> tuple[np.ndarray, np.ndarray]:
        """Indices and cosine similarities of the ``k`` nearest references (most similar
        first). References with id ``exclude_id`` or similarity above ``max_similarity``
        (the query itself, or a duplicate of it) are dropped."""
        q = query / max(np.linalg.norm(query), 1e-12)
        sims = self.embeddings @ q
        drop = sims > max_similarity
        if exclude_id is not None:
            drop |= self.ids == exclude_id
        sims = np.where(drop, -np.inf, sims)
        k = min(k, int(np.isfinite(sims).sum()))
        idx = np.argpartition(-sims, k - 1)[:k] if k > 0 else np.zeros(0, dtype=int)
        idx = idx[np.lexsort((idx, -sims[idx]))]
        return idx, sims[idx]


class GenomicExpert:
    """T4: cosine kNN over a task's labelled reference set; reports vote shares and counts."""

    name = "expert"
    title = "Genomic expert (nearest labelled sequences)"
    version = "1"

    def __init__(self, references: Mapping[str, ReferenceSet], encoder: Encoder | None = None, k: int = 15,
                 max_length: int = MAX_LENGTH):
        self.references = dict(references)
        self.encoder = encoder or KmerSpectrumEncoder()
        self.k = k
        self.max_length = max_length

    def vote(self, seq: str, task: str, exclude_id: str | None = None) -> dict:
        ref = self.references[task]
        idx, sims = ref.neighbours(self.encoder.encode([seq])[0], self.k, exclude_id)
        labels = ref.labels[idx]
        w = np.clip(sims, 0.0, None)
        total = w.sum()
        out = []
        for lab in sorted(set(labels.tolist())):
            sel = labels == lab
            out.append({"label": lab, "count": int(sel.sum()),
                        "vote_share": round(float(w[sel].sum() / total) if total > 0 else float(sel.mean()), 3)})
        out.sort(key=lambda x: (-x["vote_share"], -x["count"], x["label"]))
        return {"task": task, "k": int(len(idx)), "votes": out,
                "mean_similarity": round(float(sims.mean()), 3) if len(sims) else None}

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            if inp.task is None or inp.task not in self.references:
                records[label] = {"task": inp.task, "k": 0, "votes": []}
                lines[label] = [f"No labelled reference set for task {inp.task!r}."]
                continue
            r = self.vote(seq, inp.task, inp.question_id)
            records[label] = r
            ls = [f"{r['k']} nearest labelled sequences (cosine, k-mer spectrum) for task '{r['task']}':"]
            ls += [f"{v['label']}: {v['count']} neighbours, vote share {v['vote_share']:.2f}" for v in r["votes"]]
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines, meta={"encoder": self.encoder.name})
