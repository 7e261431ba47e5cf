"""The reasoner prompt of the paper (Appendix G.4), built in exactly one place.

System message: a genomics expert, warned that tool outputs may be incomplete or
noisy, told to use only relevant evidence and to answer with one letter. User
message: the question, an "Options:" block, then, only when a subset selected
at least one tool, "Analysis tool output for the sequence above:" and the
evidence blocks, and finally "Answer with a single letter."
"""

from __future__ import annotations

import hashlib

__all__ = [
    "SYSTEM",
    "EVIDENCE_HEADER",
    "FINAL_INSTRUCTION",
    "user_message",
    "split_user_message",
    "messages",
    "template_hash",
]

SYSTEM = (
    "You are a genomics expert answering multiple-choice questions about DNA sequences. "
    "Analysis tool outputs may be incomplete or noisy: use only the evidence that is relevant "
    "to the question. Answer with a single letter: A, B, C or D."
)
EVIDENCE_HEADER = "Analysis tool output for the sequence above:"
FINAL_INSTRUCTION = "Answer with a single letter."


def split_user_message(question: str, options_block: str, evidence: str) -> tuple[str, str]:
    """The user message as (prefix shared by every subset of a question, subset-specific suffix)."""
    prefix = f"{question}\nOptions:\n{options_block}\n\n"
    suffix = (f"{EVIDENCE_HEADER}\n{evidence}\n\n" if evidence else "") + FINAL_INSTRUCTION
    return prefix, suffix


def user_message(question: str, options_block: str, evidence: str) -> str:
    return "".join(split_user_message(question, options_block, evidence))


def messages(question: str, options_block: str, evidence: str) -> list[dict]:
    """Chat messages for one (question, evidence) pair."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_message(question, options_block, evidence)},
    ]


def template_hash() -> str:
    """Hash of the template's fixed text: part of every reward table's manifest."""
    probe = user_message("{question}", "{options}", "{evidence}") + "|" + SYSTEM
    return hashlib.sha256(probe.encode()).hexdigest()[:16]
