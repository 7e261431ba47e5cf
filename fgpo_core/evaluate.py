"""Evaluating selectors: free generation, controlled scoring, p_gen, dead groups, rescues, McNemar.

Accuracy is read from the reward table: a selector's choice for a question is a
subset, and the table holds the reasoner's correctness under every subset. A format
failure (a completion that does not parse) counts as wrong and as zero tools. The
live pipeline (tools and reasoner called for real) checks the look-ups on the final
policies (:func:`live_agreement`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .benchmarks.schema import Question
from .dead_groups import TABLE15_GROUP_SIZES, dead_group_grid
from .rewards import differential_reward
from .subsets import ActionSpace

__all__ = ["Picks", "picks_from_generation", "picks_from_scores", "summarise_picks",
           "tool_rates_by_family", "pgen_with_failures", "dead_group_table", "empty_subset_table", "mcnemar",
           "rescues", "live_agreement"]

Picks = np.ndarray
"""One entry per question: the chosen subset's mask, or -1 for a format failure."""


def picks_from_generation(selector, questions: Sequence[Question], progress: bool = False) -> tuple[Picks, list]:
    """Greedy free generation for every question: the picks and the raw completions."""
    from tqdm.auto import tqdm

    picks, texts = [], []
    for q in tqdm(questions, desc="generate", disable=not progress):
        text, mask = selector.generate(q)
        texts.append(text)
        picks.append(-1 if mask is None else int(mask))
    return np.array(picks), texts


def picks_from_scores(scores) -> Picks:
    """Controlled candidate scoring (Eq. 6): the argmax subset of each row of scores."""
    return np.asarray(scores).argmax(-1)


def _correct_of(picks: Picks, correct: np.ndarray) -> np.ndarray:
    picks = np.asarray(picks)
    ok = np.zeros(len(picks), dtype=bool)
    valid = picks >= 0
    ok[valid] = correct[np.flatnonzero(valid), picks[valid]]
    return ok


def summarise_picks(picks: Picks, correct: np.ndarray, n_tools: int, tokens: np.ndarray | None = None) -> dict:
    """Accuracy (%), format failures (%), tools per question and, with the table's input tokens
    ``[N, 2**n]``, the mean input tokens (question + evidence) of the chosen prompts."""
    picks = np.asarray(picks)
    sizes = ActionSpace(n_tools).sizes
    valid = picks >= 0
    out = {"accuracy": 100.0 * _correct_of(picks, correct).mean(),
           "format_failures": 100.0 * (~valid).mean(),
           "tools": float(np.where(valid, sizes[np.where(valid, picks, 0)], 0).mean()),
           "empty_rate": 100.0 * (picks == 0).mean()}
    if tokens is not None:
        out["input_tokens"] = float(np.where(valid, tokens[np.arange(len(picks)), np.where(valid, picks, 0)],
                                             tokens[:, 0]).mean())
    return out


def tool_rates_by_family(picks: Picks, families: Sequence[str], tool_names: Sequence[str]) -> pd.DataFrame:
    """Per family, the % of questions on which each tool is called (the paper's Figure 4)."""
    picks = np.asarray(picks)
    rows = {}
    fam = np.asarray(families)
    for f in sorted(set(fam.tolist())):
        p = picks[fam == f]
        rows[f] = {t: 100.0 * float(((p >= 0) & ((np.where(p >= 0, p, 0) >> i) & 1 == 1)).mean())
                   for i, t in enumerate(tool_names)}
    return pd.DataFrame(rows).T


def pgen_with_failures(mass: np.ndarray) -> np.ndarray:
    """``[N, 2**n + 1]``: p_gen of each canonical string and, last, the rest of the mass
    (other strings, counted as format failures)."""
    mass = np.asarray(mass, dtype=float)
    rest = np.clip(1.0 - mass.sum(-1, keepdims=True), 0.0, 1.0)
    return np.concatenate([mass, rest], -1)


def dead_group_table(policies: Mapping[str, np.ndarray], correct: np.ndarray,
                     group_sizes: Sequence[int] = TABLE15_GROUP_SIZES) -> pd.DataFrame:
    """Table 15: the closed-form dead-group rate (%) of each policy's p_gen under GRPO's
    differential reward, per group size. Each policy is ``[N, 2**n]`` (a distribution
    over subsets, e.g. uniform) or ``[N, 2**n + 1]`` (with a format-failure column)."""
    N, A = correct.shape
    r_sub = differential_reward(correct, np.repeat(correct[:, :1], A, 1), np.ones_like(correct))
    r_fail = differential_reward(np.zeros((N, 1), bool), correct[:, :1], np.zeros((N, 1), bool))
    grids = []
    for name, p in policies.items():
        p = np.asarray(p, dtype=float)
        if p.shape[-1] not in (A, A + 1):
            raise ValueError(f"policy {name!r} has {p.shape[-1]} actions; expected {A} or {A + 1}")
        r = r_sub if p.shape[-1] == A else np.concatenate([r_sub, r_fail], -1)
        grids.append(dead_group_grid({name: p / p.sum(-1, keepdims=True)}, r, group_sizes))
    return pd.concat(grids)


def empty_subset_table(mass: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Table 16: each policy's mean p_gen mass on the empty subset and how often the empty
    subset is the argmax of p_gen (%)."""
    rows = {}
    for name, m in mass.items():
        m = np.asarray(m, dtype=float)
        rows[name] = {"mass on empty (%)": 100.0 * m[:, 0].mean(),
                      "argmax is empty (%)": 100.0 * (m.argmax(-1) == 0).mean()}
    return pd.DataFrame(rows).T


def rescues(a_correct, b_correct) -> dict:
    """Questions ``a`` gets right and ``b`` wrong, and the reverse."""
    a, b = np.asarray(a_correct, bool), np.asarray(b_correct, bool)
    return {"a_only": int((a & ~b).sum()), "b_only": int((~a & b).sum())}


def mcnemar(a_correct, b_correct) -> dict:
    """Question-paired exact McNemar test (two-sided binomial test on the discordant pairs)."""
    from scipy.stats import binomtest

    r = rescues(a_correct, b_correct)
    n = r["a_only"] + r["b_only"]
    p = binomtest(r["a_only"], n, 0.5).pvalue if n else 1.0
    return {**r, "discordant": n, "p_value": float(p)}


def live_agreement(picks: Picks, questions: Sequence[Question], table_df: pd.DataFrame, library, reasoner,
                   limit: int | None = None) -> dict:
    """Re-run the chosen subsets live (tools and reasoner) and compare with the table's rows."""
    by = table_df.set_index(["question_id", "mask"])["prediction"]
    agree = []
    for q, m in list(zip(questions, picks))[:limit]:
        m = 0 if m < 0 else int(m)
        out = reasoner.answer([(q, library.render(library.run(q.tool_input()), m))])[0]
        agree.append(out.letter == by.loc[(q.id, m)])
    return {"n": len(agree), "agreement": 100.0 * float(np.mean(agree)) if agree else float("nan")}
