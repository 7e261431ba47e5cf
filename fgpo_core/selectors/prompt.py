"""The selector's prompt (paper, Appendix G.1): the question, its options and anonymous tool slots.

The policy never sees tool names or descriptions, only slots ``0: type1 (A)``,
``1: type2 (B)``, ...; it answers with slot indices in ``<answer></answer>`` tags
(an empty answer selects no tool). Long sequences may be shortened to head and
tail for the CPU profile, which the chapter states.
"""

from __future__ import annotations

import re

from ..genomics.benchmarks.schema import Question

__all__ = [
    "SELECTOR_SYSTEM",
    "TOOL_DESCRIPTIONS",
    "anonymous_slots",
    "described_slots",
    "shorten_sequences",
    "selector_messages",
]

SELECTOR_SYSTEM = (
    "You decide which analysis tools a genomics expert should run before answering a "
    "multiple-choice question about DNA. Tools are identified only by their slot number."
)

TOOL_DESCRIPTIONS = {
    "composition": "sequence composition: length, GC content, CpG observed/expected ratio, "
    "low-complexity and repeat fraction",
    "motif_scan": "transcription-factor motif scan: best JASPAR position-weight-matrix hits and their scores",
    "splice": "splice-site scorer: MaxEntScan scores of candidate donor and acceptor sites",
    "expert": "genomic expert: nearest labelled reference sequences and their label vote",
    "homology": "homology search: best local alignments against a labelled sequence database",
}
"""What the prompted baseline "Tools w/ Desc" (Appendix G.2) is told about each tool."""


def anonymous_slots(n_tools: int) -> list[str]:
    """What the policy is shown of an ``n_tools`` library (G.1): ``0: type1 (A)``, ``1: type2 (B)``, ..."""
    return [f"{i}: type{i + 1} ({chr(65 + i)})" for i in range(n_tools)]


def described_slots(names: list[str]) -> list[str]:
    """Slots with real tool names and descriptions, ``0: composition - sequence composition: ...``."""
    unknown = [n for n in names if n not in TOOL_DESCRIPTIONS]
    if unknown:
        raise ValueError(f"no description for tool(s) {unknown}; known: {sorted(TOOL_DESCRIPTIONS)}")
    return [f"{i}: {n} - {TOOL_DESCRIPTIONS[n]}" for i, n in enumerate(names)]


_DNA = re.compile(r"[ACGTN]{40,}")


def shorten_sequences(text: str, keep: int | None) -> str:
    """Replace every DNA run longer than ``2 * keep + 20`` bases by its head and tail and its length."""
    if not keep:
        return text

    def cut(m):
        s = m.group(0)
        if len(s) <= 2 * keep + 20:
            return s
        return f"{s[:keep]}...{s[-keep:]} ({len(s)} bp)"

    return _DNA.sub(cut, text)


def selector_messages(q: Question, slots: list[str], keep: int | None = None) -> list[dict]:
    body = (
        f"Question: {shorten_sequences(q.question, keep)}\nOptions:\n{shorten_sequences(q.options_block(), keep)}"
        "\n\nAvailable tools:\n"
        + "\n".join(slots)
        + "\n\nSelect the tools whose output would help answer the question. Reply with the tool numbers "
        "inside <answer></answer> tags, for example <answer>0,2</answer>; reply <answer></answer> to use "
        "no tool."
    )
    return [{"role": "system", "content": SELECTOR_SYSTEM}, {"role": "user", "content": body}]
