"""Disjointness of the suites: no evaluation question shares a k-mer (either strand) with the
training side (the tools' labelled references and every training question)."""

from __future__ import annotations

from ..tools.validate import reverse_complement

__all__ = ["LEAK_K", "LeakError", "kmer_set", "shares_kmer", "training_kmers", "find_leaks"]

LEAK_K = 32
"""The k-mer length of the disjointness check."""


class LeakError(ValueError):
    """An evaluation question shares DNA with the training side."""


def kmer_set(seqs, k: int = LEAK_K) -> set:
    """All k-mers of the sequences and of their reverse complements."""
    out = set()
    for s in seqs:
        for t in (s, reverse_complement(s)):
            out.update(t[i : i + k] for i in range(len(t) - k + 1))
    return out


def shares_kmer(seq: str, kmers: set, k: int = LEAK_K) -> bool:
    """Whether ``seq`` holds any k-mer of ``kmers``."""
    return any(seq[i : i + k] in kmers for i in range(len(seq) - k + 1))


def training_kmers(references, train_questions, k: int = LEAK_K) -> set:
    """The k-mers (both strands) of the training side: the tools' labelled reference sequences
    and every training question's sequences. No evaluation question may share one."""
    return kmer_set([r["seq"] for r in references] + [s for q in train_questions for s in q.sequences.values()], k)


def find_leaks(training_kmers: set, questions, k: int = LEAK_K) -> list[str]:
    """Ids of questions any of whose sequences shares a k-mer with the training side."""
    return [q.id for q in questions if any(shares_kmer(s, training_kmers, k) for s in q.sequences.values())]
