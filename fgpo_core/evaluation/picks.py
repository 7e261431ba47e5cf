"""A selector's picks and what they score: free generation, controlled scoring, tools per question.

Accuracy is read from the reward table: a selector's choice for a question is a subset (its
mask), and the table holds the reasoner's correctness under every subset. A format failure
(:data:`~fgpo_core.core.subsets.FORMAT_FAILURE`, -1: a completion that does not parse) counts
as wrong and as zero tools.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ..core.estimators import entropy
from ..core.subsets import ActionSpace
from ..genomics.benchmarks.schema import Question

__all__ = [
    "Picks",
    "picks_from_generation",
    "evaluation_frame",
    "correct_of",
    "summarise_picks",
    "tool_rates_by_family",
    "p_gen_with_failures",
    "scoring_summary",
    "evaluate_scoring",
    "evaluate_generation",
    "evaluate_dev",
]

Picks = np.ndarray
"""One entry per question: the chosen subset's mask, or -1 for a format failure."""


def picks_from_generation(selector, questions: Sequence[Question], progress: bool = False) -> tuple[Picks, list]:
    """Greedy free generation for every question: the picks and the raw completions."""
    from tqdm.auto import tqdm

    picks, texts = [], []
    for question in tqdm(questions, desc="generate", disable=not progress):
        text, mask = selector.generate(question)
        texts.append(text)
        picks.append(int(mask))
    return np.array(picks, dtype=int), texts


def correct_of(picks: Picks, correct: np.ndarray) -> np.ndarray:
    """Boolean ``[N]``: whether each pick is correct in the table's ``correct [N, 2**n]``
    (a format failure never is)."""
    picks = np.asarray(picks)
    if len(picks) != len(correct):
        raise ValueError(f"{len(picks)} picks for {len(correct)} table rows")
    ok = np.zeros(len(picks), dtype=bool)
    valid = picks >= 0
    ok[valid] = correct[np.flatnonzero(valid), picks[valid]]
    return ok


def summarise_picks(picks: Picks, correct: np.ndarray, n_tools: int, tokens: np.ndarray | None = None) -> dict:
    """Accuracy (%), format failures (%), tools per question, the empty subset's rate (%) and,
    with the table's input tokens ``[N, 2**n]``, the mean input tokens (question + evidence)
    of the chosen prompts (a format failure's prompt carries no evidence)."""
    picks = np.asarray(picks)
    sizes = ActionSpace(n_tools).sizes
    valid = picks >= 0
    out = {
        "accuracy": 100.0 * correct_of(picks, correct).mean(),
        "format_failures": 100.0 * (~valid).mean(),
        "tools": float(np.where(valid, sizes[np.where(valid, picks, 0)], 0).mean()),
        "empty_rate": 100.0 * (picks == 0).mean(),
    }
    if tokens is not None:
        out["input_tokens"] = float(
            np.where(valid, tokens[np.arange(len(picks)), np.where(valid, picks, 0)], tokens[:, 0]).mean()
        )
    return out


def tool_rates_by_family(picks: Picks, families: Sequence[str], tool_names: Sequence[str]) -> pd.DataFrame:
    """Per family, the % of questions on which each tool is called (the paper's Figure 4)."""
    picks = np.asarray(picks)
    rows = {}
    fam = np.asarray(families)
    for f in sorted(set(fam.tolist())):
        p = picks[fam == f]
        rows[f] = {
            t: 100.0 * float(((p >= 0) & ((np.where(p >= 0, p, 0) >> i) & 1 == 1)).mean())
            for i, t in enumerate(tool_names)
        }
    return pd.DataFrame(rows).T


def p_gen_with_failures(p_gen: np.ndarray) -> np.ndarray:
    """``[N, 2**n + 1]``: p_gen of each canonical string and, last, the rest of the mass
    (other strings, counted as format failures)."""
    p_gen = np.asarray(p_gen, dtype=float)
    rest = np.clip(1.0 - p_gen.sum(-1, keepdims=True), 0.0, 1.0)
    return np.concatenate([p_gen, rest], -1)


def scoring_summary(scores: torch.Tensor, rewards: np.ndarray, correct: np.ndarray, n_tools: int) -> dict:
    """Controlled candidate scoring (Eq. 6) of Eq. 4 ``scores [N, 2**n]``: :func:`summarise_picks`
    of each question's argmax-score subset, the expected reward ``J`` under q, and the entropy of q."""
    scores = scores.double()
    q = torch.softmax(scores, -1)
    s = summarise_picks(scores.argmax(-1).numpy().astype(int), correct, n_tools)
    return {
        "accuracy": s["accuracy"],
        "J": float((q * torch.as_tensor(rewards)).sum(-1).mean()),
        "tools": s["tools"],
        "entropy": float(entropy(q).mean()),
        "empty_argmax": s["empty_rate"],
    }


def evaluate_scoring(
    selector, questions: Sequence[Question], rewards: np.ndarray, correct: np.ndarray, batch_size: int = 16
) -> dict:
    """Controlled candidate scoring (Eq. 6) of the selector on ``questions``: :func:`scoring_summary`."""
    with torch.no_grad():
        scores = torch.cat(
            [selector.candidate_scores(questions[i : i + batch_size]) for i in range(0, len(questions), batch_size)]
        )
    return scoring_summary(scores, rewards, correct, selector.space.n_tools)


def evaluate_generation(
    selector, questions: Sequence[Question], rewards: np.ndarray | None, correct: np.ndarray
) -> dict:
    """Greedy free generation: :func:`summarise_picks` of the generated picks."""
    picks, _ = picks_from_generation(selector, questions)
    return summarise_picks(picks, correct, selector.space.n_tools)


def evaluate_dev(selector, questions: Sequence[Question], rewards: np.ndarray, correct: np.ndarray) -> dict:
    """Both dev evaluations of the selector from one scoring pass per question
    (:meth:`~fgpo_core.selectors.lm.LMSelector.evaluate_question`): controlled scoring
    (:func:`scoring_summary`'s fields) and greedy free generation (``gen_accuracy``,
    ``gen_format_failures``, ``gen_tools``)."""
    evs = [selector.evaluate_question(q) for q in questions]
    row = scoring_summary(torch.stack([e["scores"] for e in evs]), rewards, correct, selector.space.n_tools)
    gen = summarise_picks(np.array([e["generation_pick"] for e in evs], dtype=int), correct, selector.space.n_tools)
    return {
        **row,
        "gen_accuracy": gen["accuracy"],
        "gen_format_failures": gen["format_failures"],
        "gen_tools": gen["tools"],
    }


def evaluation_frame(qs, rows: list[dict]) -> pd.DataFrame:
    """The ``eval/<suite>.parquet`` frame of questions ``qs`` from their evaluations ``rows``
    (:meth:`fgpo_core.selectors.lm.LMSelector.evaluate_question`'s dicts): the picks of free
    generation, scoring and constrained decoding, then ``candidate_score_<mask>`` and ``p_gen_<mask>``."""
    frame = pd.DataFrame({"question_id": [q.id for q in qs], "family": [q.family for q in qs]})
    frame["generation_pick"] = np.array([r["generation_pick"] for r in rows], dtype=int)
    frame["completion"] = [r["completion"] for r in rows]
    frame["generation_from_pass"] = [r["from_pass"] for r in rows]
    scores = np.stack([r["scores"].double().cpu().numpy() for r in rows])
    p_gen = np.stack([r["p_gen"].cpu().numpy() for r in rows])
    frame["scoring_pick"] = scores.argmax(-1)
    frame["constrained_pick"] = np.array([r["constrained_pick"] for r in rows], dtype=int)
    for m in range(scores.shape[1]):
        frame[f"candidate_score_{m}"] = scores[:, m]
    for m in range(scores.shape[1]):
        frame[f"p_gen_{m}"] = p_gen[:, m]
    return frame
