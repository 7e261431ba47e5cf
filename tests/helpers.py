"""Questions for the tests: small, valid schema-v1 questions built in one place."""

import hashlib

from fgpo_core.genomics.benchmarks.schema import LETTERS, validate_question
from fgpo_core.reasoners.base import ReasonerOutput, letter_from_logprobs

CPG_OPTIONS = {"A": "island-like", "B": "GC-rich", "C": "AT-rich", "D": "other"}


def question(
    i: int = 0,
    split: str = "test",
    seq: str = "ACGTTGCA" * 12,
    text: str | None = None,
    family: str = "cpg",
    options: dict | None = None,
    answer: str = "A",
):
    """A valid describe question ``q{i}`` about ``seq`` (default: a CpG question with answer A)."""
    text = text or "How would you characterise this human sequence?"
    return validate_question(
        {
            "id": f"q{i}",
            "suite": "s",
            "split": split,
            "family": family,
            "shape": "describe",
            "question": f"{text}\nSequence: {seq}",
            "options": options or CPG_OPTIONS,
            "answer": answer,
            "sequences": {"": seq},
        }
    )


class HashReasoner:
    """A deterministic stand-in reasoner: its letter log-probabilities are a hash of the
    prompt, so different evidence gives different (but repeatable) answers."""

    id = "hash-reasoner"
    fingerprint = "v1"

    def answer(self, batch):
        outs = []
        for q, ev in batch:
            h = hashlib.sha256((q.id + ev).encode()).digest()
            lp = {L: -float(h[i]) / 64 for i, L in enumerate(LETTERS)}
            outs.append(ReasonerOutput(letter_from_logprobs(lp), lp, len(ev) // 4 + 50, letter_from_logprobs(lp)))
        return outs


class HashFusionReader:
    """A stand-in late-fusion reader (:mod:`fgpo_core.table.fusion`): each (question, block,
    letter) scores a hash, a subset's logit is their sum, tokens are whitespace words."""

    id = "hash-fusion-reader"
    fingerprint = "v1"

    def pair_scores(self, q, evidence):
        import numpy as np

        from fgpo_core.reasoners.reader import split_blocks

        blocks = [""] + split_blocks(evidence)
        return np.array(
            [[hashlib.sha256(f"{q.id}|{L}|{b}".encode()).digest()[0] / 64 for b in blocks] for L in LETTERS]
        )

    def prompt_tokens(self, q, evidence):
        from fgpo_core.reasoners.prompt import user_message

        return len(user_message(q.question, q.options_block(), evidence).split())


class HashEncoder:
    """A stand-in prompt encoder: features from a hash of the prompt (no model needed)."""

    fingerprint = "fake"

    def __call__(self, texts):
        import numpy as np

        return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts])


def toy_study_inputs(bench, tmp_path, sizes: dict) -> dict:
    """Reward tables (a hash reasoner) under ``tmp_path/tables`` and features under
    ``tmp_path/feat`` for the first ``sizes[suite]`` questions of each suite of ``bench``;
    returns the benchmark's suites."""
    import fgpo_core.selectors.features as features
    from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
    from fgpo_core.table.build import build_table, merge_table

    _, suites = load_benchmark(bench)
    lib = tool_library_for(bench)
    for s, n in sizes.items():
        build_table(suites[s][:n], lib, HashReasoner(), tmp_path / "tables" / s, progress=False)
        merge_table(tmp_path / "tables" / s)
    features.build_features(
        {s: suites[s][:n] for s, n in sizes.items()}, tmp_path / "feat", "minilm", progress=False, model=HashEncoder()
    )
    return suites
