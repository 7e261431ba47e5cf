"""Questions for the tests: small, valid schema-v1 questions built in one place."""
from fgpo_core.genomics.benchmarks.schema import validate_question

CPG_OPTIONS = {"A": "island-like", "B": "GC-rich", "C": "AT-rich", "D": "other"}


def question(i: int = 0, split: str = "test", seq: str = "ACGTTGCA" * 12, text: str | None = None,
             family: str = "cpg", options: dict | None = None, answer: str = "A"):
    """A valid describe question ``q{i}`` about ``seq`` (default: a CpG question with answer A)."""
    text = text or "How would you characterise this human sequence?"
    return validate_question({"id": f"q{i}", "suite": "s", "split": split, "family": family, "shape": "describe",
                              "question": f"{text}\nSequence: {seq}", "options": options or CPG_OPTIONS,
                              "answer": answer, "sequences": {"": seq}})
