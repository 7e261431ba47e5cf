"""The Reasoner protocol: a batch of (question, evidence) pairs in, one answer each out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ..genomics.benchmarks.schema import LETTERS, Question

__all__ = ["ReasonerOutput", "Reasoner", "letter_from_logprobs", "tie_break"]


@dataclass
class ReasonerOutput:
    """One answer. ``letter`` is the highest-probability option letter (greedy, deterministic);
    ``logprobs`` the log-probability of each letter; ``prompt_tokens`` the prompt's length;
    ``generated`` what free generation's first token would have been and ``is_letter``
    whether that was an option letter."""

    letter: str
    logprobs: dict
    prompt_tokens: int
    generated: str = ""
    is_letter: bool = True
    extra: dict = field(default_factory=dict)


def letter_from_logprobs(logprobs: dict) -> str:
    """Argmax over A-D; ties go to the earliest letter."""
    return max(LETTERS, key=lambda L: (logprobs[L], -LETTERS.index(L)))


@runtime_checkable
class Reasoner(Protocol):
    """A frozen reasoner. ``id`` names it (and its weights) in reward-table manifests."""

    id: str

    def answer(self, batch: Sequence[tuple[Question, str]]) -> list[ReasonerOutput]: ...


def tie_break(question_id: str, scale: float):
    """A deterministic, question-specific jitter of size ``scale`` (far below any real score
    difference): options a reader cannot separate are guessed evenly over A-D, not always 'A'.
    Returns a float array of 4."""
    import hashlib

    import numpy as np

    h = hashlib.sha256(question_id.encode()).digest()
    return np.array([h[i] for i in range(4)], dtype=float) * scale
