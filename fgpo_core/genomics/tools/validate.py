"""Input validation shared by every tool: one place decides what a sequence may be."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["MAX_LENGTH", "SequenceError", "validate_sequence", "encode", "reverse_complement"]

MAX_LENGTH = 1000
"""Default ceiling on sequence length (bp): the benchmarks' centre-crop length."""

_BAD = re.compile(r"[^ACGTN]")
_CODE = np.full(256, 4, dtype=np.int8)
for _i, _b in enumerate("ACGT"):
    _CODE[ord(_b)] = _i
_COMP = str.maketrans("ACGTN", "TGCAN")


class SequenceError(ValueError):
    """A sequence a tool cannot accept; the message says what and where."""


def validate_sequence(seq, max_length: int = MAX_LENGTH, rna: str = "convert", name: str = "sequence") -> str:
    """Return ``seq`` upper-cased, or raise :class:`SequenceError`.

    Bases are A, C, G, T and N in any case. ``U`` is converted to ``T`` when
    ``rna="convert"`` (the default) and rejected when ``rna="reject"``. Any other
    character is rejected with its 1-based position. Empty sequences and
    sequences longer than ``max_length`` are rejected.
    """
    if not isinstance(seq, str):
        raise SequenceError(f"{name} must be a string, got {type(seq).__name__}")
    if rna not in ("convert", "reject"):
        raise ValueError("rna must be 'convert' or 'reject'")
    s = seq.strip().upper()
    if not s:
        raise SequenceError(f"{name} is empty")
    if "U" in s:
        if rna == "reject":
            pos = s.index("U") + 1
            raise SequenceError(f"{name} contains RNA base 'U' at position {pos}; pass DNA (T) or rna='convert'")
        s = s.replace("U", "T")
    m = _BAD.search(s)
    if m:
        ch = seq.strip()[m.start()]
        raise SequenceError(
            f"{name} has invalid character {ch!r} at position {m.start() + 1}; "
            "allowed bases are A, C, G, T, N (any case)"
        )
    if len(s) > max_length:
        raise SequenceError(f"{name} is {len(s)} bp, over the maximum of {max_length} bp")
    return s


def encode(seq: str) -> np.ndarray:
    """Integer codes A=0, C=1, G=2, T=3, N (or anything else)=4; ``seq`` must be upper case."""
    return _CODE[np.frombuffer(seq.encode("ascii"), dtype=np.uint8)]


def reverse_complement(seq: str) -> str:
    return seq.translate(_COMP)[::-1]
