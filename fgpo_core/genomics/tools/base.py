"""What every tool returns, and how evidence is rendered: the single place evidence text is made."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

__all__ = ["Evidence", "Tool", "ToolInput", "render_block", "check_evidence"]


@dataclass(frozen=True)
class ToolInput:
    """What a tool sees of a question: its sequence(s) and the task it belongs to.

    ``sequences`` maps a label to a sequence: ``{"": seq}`` for a question about
    one sequence, ``{"A": ..., "B": ..., "C": ..., "D": ...}`` when the options
    are sequences. ``task`` names the labelled task (for the genomic expert's
    reference set); ``question_id`` lets tools drop self-hits.
    """

    sequences: Mapping[str, str]
    task: str | None = None
    question_id: str | None = None

    @classmethod
    def single(cls, seq: str, task: str | None = None, question_id: str | None = None) -> "ToolInput":
        return cls({"": seq}, task, question_id)


@dataclass
class Evidence:
    """One tool's output for one question.

    ``records`` maps each sequence label to a JSON-serialisable dict (for
    analysis); ``lines`` maps it to the text lines the reasoner reads. Render
    with :func:`render_block`.
    """

    tool: str
    title: str
    records: dict[str, dict]
    lines: dict[str, list[str]]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"tool": self.tool, "title": self.title, "records": self.records}, sort_keys=True)

    @property
    def text(self) -> str:
        return render_block(self)


def render_block(ev: Evidence) -> str:
    """The titled text block of one tool. Per-sequence sections ("Sequence A:") when
    the question's options are sequences; identical for every method and table row."""
    out = [f"[{ev.title}]"]
    for label, lines in ev.lines.items():
        if label:
            out.append(f"Sequence {label}:")
            out.extend("  " + ln for ln in lines)
        else:
            out.extend(lines)
    return "\n".join(out)


def check_evidence(ev, tool: str, labels) -> None:
    """Refuse what a tool (a plugin's, say) returned unless it is evidence the renderer can read:
    an :class:`Evidence` whose ``lines`` map labels of the question's own sequences (``labels``)
    to lists of strings (a bare string would be rendered one character per line)."""
    if not isinstance(ev, Evidence):
        raise ValueError(f"tool {tool!r} returned {type(ev).__name__}, not an Evidence")
    if not isinstance(ev.lines, dict):
        raise ValueError(
            f"tool {tool!r}: Evidence.lines must map each sequence label to a list of lines, "
            f"got {type(ev.lines).__name__}"
        )
    extra = [k for k in ev.lines if k not in labels]
    if extra:
        raise ValueError(
            f"tool {tool!r} gave evidence for sequence {extra[0]!r}, which the question lacks "
            f"(its sequences: {', '.join(repr(k) for k in labels)})"
        )
    for label, lines in ev.lines.items():
        if not isinstance(lines, (list, tuple)) or not all(isinstance(x, str) for x in lines):
            raise ValueError(
                f"tool {tool!r}: the lines of sequence {label!r} must be a list of strings, got {type(lines).__name__}"
            )
    if not isinstance(ev.records, dict):
        raise ValueError(f"tool {tool!r}: Evidence.records must map sequence labels to records")


@runtime_checkable
class Tool(Protocol):
    """A genomic analysis tool: a name, a title and one call per question."""

    name: str
    title: str
    version: str

    def run(self, inp: ToolInput) -> Evidence: ...
