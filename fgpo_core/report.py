"""Reading trained selectors back: runs, their evaluations, and the grid of Table 2.

A selector's pick for a question depends only on the question, never on the
reasoner, so one evaluation (``eval/<suite>.parquet``) serves every reward table
of the same questions: accuracy under the training reader is a look-up in its
table, and "transplanting" the selector to another reasoner is a look-up in that
reasoner's table (Table 2's transfer cells). Fixed baselines (No-Tool, Random,
All-Tools, BestFixed*, Oracle) come from the tables alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .evaluate import _correct_of, summarise_picks
from .subsets import ActionSpace

__all__ = ["SelectorRun", "load_runs", "rows_for", "method_grid", "TRAINED", "BASELINES", "pgen_matrix",
           "score_matrix", "fixed_baselines"]

TRAINED = ("SFT", "DPO", "GRPO", "FGPO")
BASELINES = ("No-Tool", "Random", "All-Tools", "Tools w/ Desc")


@dataclass
class SelectorRun:
    """One selector: its folder, its training manifest (None for a prompted baseline) and
    its evaluations, one frame per suite."""

    name: str
    folder: Path
    manifest: dict | None
    evals: dict[str, pd.DataFrame] = field(default_factory=dict)

    def picks(self, suite: str, mode: str = "generation") -> np.ndarray:
        """Free-generation picks (-1: format failure) or controlled-scoring picks (Eq. 6)."""
        if mode not in ("generation", "scoring"):
            raise ValueError("mode must be 'generation' or 'scoring'")
        return self.evals[suite][f"{mode}_pick"].to_numpy()


def _evals(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted((folder / "eval").glob("*.parquet"))}


def load_runs(runs_dir) -> dict[str, SelectorRun]:
    """The runs written by ``fgpo runs``: FGPO (the learning-rate sweep's best on dev, the
    others as ``FGPO (lr=...)``), GRPO, SFT, DPO (and its beta sweep as ``DPO (beta=...)``)
    and the prompted baseline "Tools w/ Desc"."""
    from .runs import best_dev

    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no runs folder {root}: run `fgpo runs` (or `make runs`) first")
    out: dict[str, SelectorRun] = {}
    fgpo = sorted(p for p in root.glob("fgpo-lr*") if (p / "manifest.json").exists())
    if fgpo:
        best, _ = best_dev(fgpo)
        for p in fgpo:
            m = json.loads((p / "manifest.json").read_text())
            name = "FGPO" if str(p) == best else f"FGPO (lr={m['config']['lr']:g})"
            out[name] = SelectorRun(name, p, m, _evals(p))
    for name, sub in (("GRPO", "grpo"), ("SFT", "sft"), ("DPO", "dpo")):
        p = root / sub
        if (p / "manifest.json").exists():
            out[name] = SelectorRun(name, p, json.loads((p / "manifest.json").read_text()), _evals(p))
    for p in sorted(root.glob("dpo-beta*")):
        if (p / "manifest.json").exists():
            m = json.loads((p / "manifest.json").read_text())
            name = f"DPO (beta={m['config']['dpo_beta']:g})"
            out[name] = SelectorRun(name, p, m, _evals(p))
    p = root / "tools-with-descriptions"
    if (p / "eval").is_dir():
        out["Tools w/ Desc"] = SelectorRun("Tools w/ Desc", p, None, _evals(p))
    missing = [m for m in ("FGPO", "GRPO") if m not in out]
    if missing:
        raise FileNotFoundError(f"{root} lacks the finished run(s) {missing}")
    return out


def rows_for(table, question_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a loaded table ``(RewardTable, frame, manifest)``: a boolean ``[N]`` saying which of
    ``question_ids`` the table holds, and for those the correctness and input tokens ``[n, 2**n]``."""
    t, df, _ = table
    A = t.n_actions
    ids = list(df["question_id"].to_numpy()[::A])
    pos = {q: i for i, q in enumerate(ids)}
    have = np.array([q in pos for q in question_ids])
    idx = [pos[q] for q in np.asarray(question_ids)[have]]
    tokens = df["prompt_tokens"].to_numpy().reshape(-1, A)
    return have, t.correct[idx], tokens[idx]


def fixed_baselines(correct: np.ndarray, tokens: np.ndarray | None = None) -> dict[str, dict]:
    """No-Tool, Random (uniform over subsets, in expectation), All-Tools, BestFixed* (the best
    single subset on these very questions, hence the star) and the per-question Oracle."""
    N, A = correct.shape
    sizes = ActionSpace(int(np.log2(A))).sizes
    best = int(correct.mean(0).argmax())
    tok = (lambda col: float(tokens[:, col].mean())) if tokens is not None else (lambda col: float("nan"))
    return {
        "No-Tool": {"accuracy": 100.0 * correct[:, 0].mean(), "tools": 0.0, "input_tokens": tok(0)},
        "Random": {"accuracy": 100.0 * correct.mean(), "tools": float(sizes.mean()),
                   "input_tokens": float(tokens.mean()) if tokens is not None else float("nan")},
        "All-Tools": {"accuracy": 100.0 * correct[:, -1].mean(), "tools": float(sizes[-1]), "input_tokens": tok(A - 1)},
        "BestFixed*": {"accuracy": 100.0 * correct[:, best].mean(), "tools": float(sizes[best]),
                       "input_tokens": tok(best), "subset": best},
        "Oracle": {"accuracy": 100.0 * correct.any(1).mean(), "tools": float("nan"), "input_tokens": float("nan")},
    }


def method_grid(runs: Mapping[str, SelectorRun], tables: Mapping[str, Mapping[str, tuple]],
                mode: str = "generation", methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Long frame: one row per (reasoner, suite, method) with accuracy (%), tools per question,
    input tokens, format failures (%) and ``n``, the questions both evaluated and in the table.

    ``tables`` maps a reasoner's label to its tables by suite; a selector's picks on a suite
    are looked up in every reasoner's table of that suite.
    """
    rows = []
    ref = runs["FGPO"]
    for reasoner, by_suite in tables.items():
        for suite, table in by_suite.items():
            if suite not in ref.evals:
                continue
            ids = ref.evals[suite]["question_id"].to_numpy()
            have, correct, tokens = rows_for(table, ids)
            if not have.any():
                continue
            n_tools = int(np.log2(correct.shape[1]))
            for name, res in fixed_baselines(correct, tokens).items():
                rows.append({"reasoner": reasoner, "suite": suite, "method": name, "n": int(have.sum()), **res})
            for name, run in runs.items():
                if methods is not None and name not in methods or suite not in run.evals:
                    continue
                if list(run.evals[suite]["question_id"]) != list(ids):
                    raise ValueError(f"{name} was evaluated on other {suite} questions than FGPO")
                picks = run.picks(suite, mode)[have]
                s = summarise_picks(picks, correct, n_tools, tokens)
                rows.append({"reasoner": reasoner, "suite": suite, "method": name, "n": int(have.sum()),
                             "correct_vector": _correct_of(picks, correct), **s})
    return pd.DataFrame(rows)


def pgen_matrix(run: SelectorRun, suite: str) -> np.ndarray:
    """p_gen of every subset's policy string ``[N, 2**n]`` (the rest is format failure)."""
    df = run.evals[suite]
    return df[sorted((c for c in df if c.startswith("pgen_")), key=lambda c: int(c[5:]))].to_numpy()


def score_matrix(run: SelectorRun, suite: str) -> np.ndarray:
    """The Eq. 4 candidate scores ``[N, 2**n]``."""
    df = run.evals[suite]
    return df[sorted((c for c in df if c.startswith("score_")), key=lambda c: int(c[6:]))].to_numpy()
