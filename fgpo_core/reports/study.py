"""A policy-head study read against reward tables: accuracy over seeds, paired tests, routing,
and the trained policies for Tables 15 and 16.

A pick depends only on the question, so one study serves every reasoner's table of the same
questions: accuracy under the training reader is a look-up in its table, and under another
reader a look-up in that reader's (the transfer cells).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.method_names import parse_method
from ..evaluation.difference import compare
from ..evaluation.metrics import mcnemar
from ..evaluation.picks import correct_of, summarise_picks, tool_rates_by_family
from ..experiments.study import Study
from ..table import RewardTable

__all__ = [
    "label",
    "study_scores",
    "study_summary",
    "study_baselines",
    "paired_tests",
    "routing",
    "coverage_rows",
    "headline",
    "study_headline",
]


def label(method: str) -> str:
    """The display name of a study method, its modifiers spelled out (``fgpo-lambda0`` reads
    "FGPO (λ=0)", ``grpo-G16`` "GRPO (G=16)", ``fgpo-noT3`` "FGPO (without T3)")."""
    if "+" in method:
        return " → ".join(label(part) for part in method.split("+"))
    try:
        spec = parse_method(method)
    except ValueError:
        return method
    name = spec.estimator.label.format(spec.k)
    words = {
        "lam": "λ={:g}",
        "beta": "β={:g}",
        "dpo_beta": "β={:g}",
        "temperature": "τ={:g}",
        "G": "G={:d}",
        "hidden": "MLP {:d}",
        "epochs": "{:d} epochs",
        "lr": "lr={:g}",
        "updates": "{:d} updates per draw",
        "clip": "clip {:g}",
    }
    mods = [words[k].format(v) for k, v in spec.overrides.items() if k in words]
    if spec.n_train is not None:
        mods.append(f"n={spec.n_train}")
    if spec.drop_tool is not None:
        mods.append(f"without T{spec.drop_tool}")
    if mods and name.endswith(")"):  # "GRPO (clipped ratio)" -> "GRPO (clipped ratio, 2 updates per draw)"
        return f"{name[:-1]}, {', '.join(mods)})"
    return f"{name} ({', '.join(mods)})" if mods else name


def study_scores(study: Study, tables: Mapping[str, RewardTable]) -> pd.DataFrame:
    """One row per (method, seed, suite) that ``tables`` (suite -> table) covers: ``n`` (the
    questions both hold), accuracy, tools, input tokens, empty rate and the per-question
    ``correct_vector``."""
    rows = []
    for (method, seed, suite), f in study.picks.groupby(["method", "seed", "suite"], sort=False):
        if suite not in tables:
            continue
        t = tables[suite]
        ids = f.question_id.to_numpy()
        have = t.contains(ids)
        if not have.any():
            continue
        sel = t.select(ids[have])
        picks = f["mask"].to_numpy()[have]
        rows.append(
            {
                "method": method,
                "seed": seed,
                "suite": suite,
                "n": int(have.sum()),
                **summarise_picks(picks, sel.correct, sel.n_tools, sel.tokens),
                "correct_vector": correct_of(picks, sel.correct),
            }
        )
    return pd.DataFrame(rows)


def study_summary(scores: pd.DataFrame, value: str = "accuracy") -> pd.DataFrame:
    """Methods x suites: ``value`` as "mean ± sd" over seeds, and the means in ``<suite> mean``."""
    g = scores.groupby(["method", "suite"], sort=False)[value]
    mean, sd = g.mean().unstack(), g.std(ddof=1).unstack().fillna(0.0)
    out = pd.DataFrame(index=mean.index)
    for s in mean.columns:
        out[s] = [f"{m:.1f} ± {d:.1f}" for m, d in zip(mean[s], sd[s])]
        out[f"{s} mean"] = mean[s]
    return out


def study_baselines(tables: Mapping[str, RewardTable], question_ids: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """The table-only rows (No-Tool ... Oracle) per suite on the study's questions: long frame of
    suite, method, accuracy, tools, input_tokens."""
    rows = []
    for suite, ids in question_ids.items():
        if suite not in tables:
            continue
        t = tables[suite]
        ids = np.asarray(ids)
        b = t.select(ids[t.contains(ids)]).baselines()
        for name, r in b.iterrows():
            rows.append(
                {
                    "suite": suite,
                    "method": name,
                    "accuracy": r["accuracy"],
                    "tools": r["tools"],
                    "input_tokens": r["input_tokens"],
                }
            )
    return pd.DataFrame(rows)


def paired_tests(scores: pd.DataFrame, ref: str = "fgpo", suite: str = "core") -> pd.DataFrame:
    """``ref`` against every other method on ``suite``, question-paired within each seed (exact
    McNemar): per method the mean accuracy difference, the mean discordant counts, the median
    and largest p-value over seeds and how many seeds give p < 0.05."""
    s = scores[scores.suite == suite]
    base = s[s.method == ref].set_index("seed")
    out = {}
    for method, f in s[s.method != ref].groupby("method", sort=False):
        tests = [
            mcnemar(base.loc[seed, "correct_vector"], row.correct_vector)
            for seed, row in f.set_index("seed").iterrows()
            if seed in base.index
        ]
        if not tests:
            continue
        diff = [
            base.loc[seed, "accuracy"] - row.accuracy
            for seed, row in f.set_index("seed").iterrows()
            if seed in base.index
        ]
        p = np.array([t["p_value"] for t in tests])
        out[method] = {
            "difference (points)": float(np.mean(diff)),
            f"{label(ref)} right, other wrong": float(np.mean([t["a_only"] for t in tests])),
            f"other right, {label(ref)} wrong": float(np.mean([t["b_only"] for t in tests])),
            "median p": float(np.median(p)),
            "largest p": float(p.max()),
            "seeds with p < 0.05": f"{int((p < 0.05).sum())} of {len(p)}",
        }
    return pd.DataFrame(out).T


def routing(study: Study, table: RewardTable, suite: str, method: str) -> pd.DataFrame:
    """Per family, the % of questions on which each tool is called, averaged over seeds."""
    ids, picks = study.pick_matrix(suite, method)
    sel = table.select(ids)
    return sum(tool_rates_by_family(p, sel.family, sel.names()) for p in picks) / len(picks)


def coverage_rows(summary: pd.DataFrame, suite: str = "core", n_actions: int = 16) -> pd.DataFrame:
    """The coverage dial from a :func:`study_summary`: accuracy (mean and sd over seeds) against
    k, k = 2**n being FGPO itself."""
    rows = {}
    for m in summary.index:
        k = int(m[6:]) if m.startswith("fgpo-k") else n_actions if m == "fgpo" else None
        if k is not None:
            sd = float(str(summary.loc[m, suite]).split("±")[1]) if "±" in str(summary.loc[m, suite]) else 0.0
            rows[k] = {"accuracy (%)": summary.loc[m, f"{suite} mean"], "sd over seeds": sd}
    return pd.DataFrame.from_dict(rows, orient="index").sort_index()


def headline(fgpo: Sequence[np.ndarray], grpo: Sequence[np.ndarray], fixed: np.ndarray) -> dict:
    """One setting's headline on one set of questions: ``fgpo`` and ``grpo`` say, seed by seed,
    whether each method is right on each question (one boolean vector per seed, the same seeds
    for both; a selector trained once: one vector), ``fixed`` whether the best fixed subset is.
    Returns the questions, the seeds, the accuracies (%, mean over seeds) and the verdicts of
    FGPO against GRPO and against the fixed subset by the book's rule
    (:func:`~fgpo_core.evaluation.difference.compare`; ``gap``: FGPO minus the other, points)."""
    fixed = np.asarray(fixed, dtype=bool)
    vs_grpo, vs_fixed = compare(fgpo, grpo), compare(fgpo, [fixed] * len(fgpo))
    return {
        "questions": len(fixed),
        "seeds": len(fgpo),
        "FGPO": float(np.mean([100.0 * np.mean(x) for x in fgpo])),
        "GRPO": float(np.mean([100.0 * np.mean(x) for x in grpo])),
        "vs GRPO": vs_grpo,
        "best fixed": 100.0 * float(fixed.mean()),
        "vs best fixed": vs_fixed,
    }


def study_headline(study: Study, tables: Mapping[str, RewardTable], mask=None) -> dict:
    """:func:`headline` of a policy-head study: its FGPO and GRPO on the suites of ``tables``
    pooled, against the best fixed subset of those questions; ``mask(tables, ids)``, where given,
    picks a part of them (``ids``: each suite's question ids, in the order FGPO picked them)."""
    from ..experiments.domains import best_fixed_subset, fixed_correct, method_correct

    q = {s: np.asarray(study.pick_matrix(s, "fgpo")[0]) for s in tables}
    f, g = method_correct(study, tables, "fgpo", q), method_correct(study, tables, "grpo", q)
    b = fixed_correct(tables, q, best_fixed_subset(tables, q))
    m = np.ones(len(b), bool) if mask is None else mask(tables, q)
    return headline([x[m] for x in f], [x[m] for x in g], b[m])
