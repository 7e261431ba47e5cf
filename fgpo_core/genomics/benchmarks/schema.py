"""Question schema v1: one JSON object per line.

Fields
------
``id`` (str, unique), ``suite`` (str), ``split`` ("train" | "dev" | "test"),
``family`` (str; also names the task whose labelled training sequences the
genomic expert consults), ``shape`` ("describe": one sequence, four label
options; "select": four sequences as options A-D), ``question`` (the text; a
describe question includes its sequence), ``options`` (A-D -> text),
``answer`` (a letter), ``sequences`` (what the tools run on: ``{"": seq}`` for
describe, ``{"A": ..., "D": ...}`` for select), ``provenance`` (source package,
coordinates or identifiers, what was planted where), ``schema`` (1).

Any file in this schema, ours or external, loads with :func:`read_questions`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Iterable

from ...io import atomic_path
from ..tools.base import ToolInput
from ..tools.validate import MAX_LENGTH, SequenceError, validate_sequence

__all__ = [
    "SCHEMA_VERSION",
    "LETTERS",
    "Question",
    "QuestionError",
    "validate_question",
    "read_questions",
    "write_questions",
    "unique_keys",
]

SCHEMA_VERSION = 1
LETTERS = ("A", "B", "C", "D")
SPLITS = ("train", "dev", "test")
SHAPES = ("describe", "select")


class QuestionError(ValueError):
    """A malformed question; the message names the line (when reading a file) and the field."""


@dataclass
class Question:
    id: str
    suite: str
    split: str
    family: str
    shape: str
    question: str
    options: dict
    answer: str
    sequences: dict
    provenance: dict = field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    def tool_input(self) -> ToolInput:
        """What the tools see: the sequences, the family as the task, the id for self-hit removal."""
        return ToolInput(self.sequences, task=self.family, question_id=self.id)

    def options_block(self) -> str:
        return "\n".join(f"{k}. {self.options[k]}" for k in LETTERS)


def unique_keys(pairs) -> dict:
    """``json.loads``'s ``object_pairs_hook`` that refuses an object naming one key twice (plain
    ``json.loads`` keeps the last silently: two "answer" keys would be one answer, unseen)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} appears twice in one object")
        out[k] = v
    return out


def _err(msg: str, line: int | None) -> QuestionError:
    return QuestionError(f"line {line}: {msg}" if line is not None else msg)


def validate_question(obj, line: int | None = None, max_length: int = MAX_LENGTH) -> Question:
    """Check one decoded JSON object against schema v1 and return a :class:`Question`."""
    if not isinstance(obj, dict):
        raise _err(f"a question must be a JSON object, got {type(obj).__name__}", line)
    required = ("id", "suite", "split", "family", "shape", "question", "options", "answer", "sequences")
    for key in required:
        if key not in obj:
            raise _err(f"field '{key}' is missing", line)
    for key in ("id", "suite", "family", "question"):
        if not isinstance(obj[key], str) or not obj[key].strip():
            raise _err(f"field '{key}' must be a non-empty string", line)
    schema = obj.get("schema", SCHEMA_VERSION)
    if type(schema) is not int or schema != SCHEMA_VERSION:  # True == 1 in Python: refuse it explicitly
        raise _err(f"field 'schema' is {obj.get('schema')!r}; this reader knows version {SCHEMA_VERSION}", line)
    if obj["split"] not in SPLITS:
        raise _err(f"field 'split' must be one of {', '.join(SPLITS)}, got {obj['split']!r}", line)
    if obj["shape"] not in SHAPES:
        raise _err(f"field 'shape' must be 'describe' or 'select', got {obj['shape']!r}", line)
    opts = obj["options"]
    if not isinstance(opts, dict) or sorted(opts) != list(LETTERS):
        got = sorted(opts) if isinstance(opts, dict) else type(opts).__name__
        raise _err(f"field 'options' must map exactly the letters A-D to texts, got {got}", line)
    if any(not isinstance(v, str) or not v.strip() for v in opts.values()):
        raise _err("field 'options': every option needs a non-empty text", line)
    if len(set(opts.values())) != 4:
        raise _err("field 'options': the four options must differ", line)
    if obj["answer"] not in LETTERS:
        raise _err(f"field 'answer' must be one of A-D, got {obj['answer']!r}", line)
    seqs = obj["sequences"]
    if not isinstance(seqs, dict) or not seqs:
        raise _err("field 'sequences' must be a non-empty object", line)
    want = [""] if obj["shape"] == "describe" else list(LETTERS)
    if sorted(seqs) != want:
        raise _err(f"field 'sequences' of a {obj['shape']} question must have keys {want}, got {sorted(seqs)}", line)
    for k, s in seqs.items():
        try:
            validate_sequence(s, max_length, name=f"sequence {k}".strip())
        except SequenceError as exc:
            raise _err(f"field 'sequences': {exc}", line) from None
    if obj["shape"] == "describe" and seqs[""].upper() not in obj["question"].upper():
        raise _err("field 'question': a describe question must contain its sequence", line)
    # the answer must not be recoverable from the text alone
    q = obj["question"].lower()
    mentioned = [k for k, v in opts.items() if v.lower() in q]
    if obj["answer"] in mentioned and len(mentioned) < 4:
        raise _err("field 'question' names the answer's option text but not all options': the answer leaks", line)
    prov = obj.get("provenance", {})
    if not isinstance(prov, dict):
        raise _err("field 'provenance' must be an object", line)
    return Question(
        obj["id"],
        obj["suite"],
        obj["split"],
        obj["family"],
        obj["shape"],
        obj["question"],
        dict(opts),
        obj["answer"],
        dict(seqs),
        prov,
    )


def read_questions(path, max_length: int = MAX_LENGTH) -> list[Question]:
    """Read and validate a JSONL file; errors name the line and the field. Ids must be unique."""
    out, seen = [], {}
    with open(path, "rb") as fh:
        for i, raw_bytes in enumerate(fh, 1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise QuestionError(f"line {i}: not UTF-8 text (byte {exc.start}); schema v1 files are UTF-8") from None
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw, object_pairs_hook=unique_keys)
            except json.JSONDecodeError as exc:
                raise QuestionError(f"line {i}: not valid JSON ({exc.msg})") from None
            except ValueError as exc:
                raise QuestionError(f"line {i}: {exc}") from None
            except RecursionError:
                raise QuestionError(f"line {i}: not a question (JSON nested too deeply)") from None
            q = validate_question(obj, i, max_length)
            if q.id in seen:
                raise QuestionError(f"line {i}: field 'id' {q.id!r} repeats line {seen[q.id]}")
            seen[q.id] = i
            out.append(q)
    return out


def write_questions(questions: Iterable[Question], path) -> None:
    """Write JSONL atomically (a temporary file renamed into place)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(q.to_json() + "\n")
