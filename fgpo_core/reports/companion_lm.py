"""The LM selector's post-training study (``fgpo lm-companion``) read from its folder: its runs'
picks with the shared start's, what training cost, and question-paired McNemar tests by domain
(:func:`lm_companion_tests`, by the former rule, which ``notebooks/fgpo_vs_grpo.py`` still reads).
:mod:`fgpo_core.reports.companion` reads the picks by the book's rule."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ..evaluation.domains import domain_of
from ..evaluation.picks import correct_of
from ..table import RewardTable
from .lm_runs import training_cost

__all__ = [
    "domain_correct",
    "parse_lm_companion_method",
    "START_ARM",
    "with_start",
    "load_lm_companion",
    "lm_companion_costs",
    "domain_mcnemar",
    "lm_companion_tests",
]


def domain_correct(
    picks: pd.DataFrame,
    tables: Mapping[str, RewardTable],
    training_families: Iterable[str],
    domains: Mapping | None = None,
) -> pd.DataFrame:
    """One method and seed's picks (``suite, question_id, mask``; -1 a format failure) read against
    the tables: columns ``suite, question_id, domain, correct, failed``, in the picks' order
    (suites without a table are dropped). ``domains`` (suite -> question id -> "ID"/"OOD"): the
    book's rule; without it the former rule by family (:func:`~fgpo_core.evaluation.domains.domain_of`)."""
    fams = set(training_families)
    frames = []
    for s, g in picks.groupby("suite", sort=False):
        if s not in tables:
            continue
        t = tables[s].select(g.question_id.tolist())
        mask = g["mask"].to_numpy()
        dom = (
            [domains[s][q] for q in g.question_id]
            if domains is not None
            else [domain_of(s, fam, fams) for fam in np.asarray(t.family)]
        )
        frames.append(
            pd.DataFrame(
                {
                    "suite": s,
                    "question_id": g.question_id.to_numpy(),
                    "domain": dom,
                    "correct": correct_of(mask, t.correct),
                    "failed": mask < 0,
                }
            )
        )
    cols = ["suite", "question_id", "domain", "correct", "failed"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def parse_lm_companion_method(method: str) -> tuple[str, int]:
    """``"sft20-fgpo80-r16"`` -> ``("sft20-fgpo80", 16)``: the arm of a method of the LM post-training study and
    its LoRA rank (``fgpo_core.experiments.lm_companion`` names them so)."""
    m = re.fullmatch(r"(.+)-r(\d+)", method)
    if m is None:
        raise ValueError(f"a method of the LM post-training study is ARM-rRANK (e.g. sft-r16), got {method!r}")
    return m.group(1), int(m.group(2))


START_ARM = "start"
"""The arm name of the shared start (the format warm-up) in the LM post-training study's table."""


def with_start(picks: pd.DataFrame, start_eval: str | Path) -> pd.DataFrame:
    """``picks`` (``fgpo lm-companion``'s ``picks.parquet``) with the shared start's picks on the
    same questions put first, read from its free-generation evaluation (``<start_eval>/<suite>.parquet``,
    column ``generation_pick``) as arm :data:`START_ARM` at every rank and seed of ``picks``: every
    run adds a fresh LoRA adapter, which starts at zero, to the merged start, so the start is each
    rank's step 0. Raises ``ValueError`` if the evaluation lacks a question of ``picks``."""
    frames = []
    for suite, g in picks.groupby("suite", sort=False):
        path = Path(start_eval) / f"{suite}.parquet"
        if not path.exists():
            raise ValueError(f"the start has no evaluation of the {suite} suite ({path})")
        ev = pd.read_parquet(path, columns=["question_id", "generation_pick"]).set_index("question_id")
        ids = list(dict.fromkeys(g.question_id))
        missing = [i for i in ids if i not in ev.index]
        if missing:
            raise ValueError(f"{path} lacks {len(missing)} of the study's {suite} questions, e.g. {missing[0]!r}")
        masks = ev.loc[ids, "generation_pick"].astype(int).to_numpy()
        for m in dict.fromkeys(picks.method):
            _, rank = parse_lm_companion_method(m)
            for seed in dict.fromkeys(picks.seed):
                frames.append(
                    pd.DataFrame(
                        {
                            "method": f"{START_ARM}-r{rank}",
                            "seed": seed,
                            "suite": suite,
                            "question_id": ids,
                            "mask": masks,
                        }
                    )
                )
    start = pd.concat(frames, ignore_index=True).drop_duplicates(["method", "seed", "suite", "question_id"])
    order = {m: i for i, m in enumerate(dict.fromkeys(start.method))}
    start = start.sort_values("method", key=lambda c: c.map(order), kind="stable")
    return pd.concat([start, picks], ignore_index=True)


def load_lm_companion(companion_dir: str | Path) -> pd.DataFrame:
    """The picks of a finished ``fgpo lm-companion`` folder with its start's (:func:`with_start`),
    the start found from the study's manifest (``runs_dir/start``; ``runs_dir`` is the folder
    holding ``companion_dir`` at the manifest's ``folder``)."""
    import json

    d = Path(companion_dir)
    for name in ("picks.parquet", "manifest.json"):
        if not (d / name).exists():
            raise FileNotFoundError(
                f"{d} holds no finished LM post-training study (no {name}); run `fgpo lm-companion`"
            )
    cfg = json.loads((d / "manifest.json").read_text())["config"]
    runs = d
    for _ in Path(cfg["folder"]).parts:
        runs = runs.parent
    return with_start(pd.read_parquet(d / "picks.parquet"), runs / cfg["start"] / "eval")


def lm_companion_costs(companion_dir: str | Path) -> pd.DataFrame:
    """What each finished training run of an ``fgpo lm-companion`` folder cost: one row per run
    folder (``sft-r16``, ``sft20-r16``, ...), its objective, LoRA rank, question visits, training
    seconds, seconds per visit and how they were timed, from the runs' manifests by
    :func:`fgpo_core.reports.lm_runs.training_cost` (which also times a run resumed across
    processes)."""
    import json

    mans = {m.parent.name: json.loads(m.read_text()) for m in sorted(Path(companion_dir).glob("*/manifest.json"))}
    mans = {k: {**m, "config": {"epochs": 1, **m.get("config", {})}} for k, m in mans.items() if "train_seconds" in m}
    cols = ["run", "objective", "rank", "visits", "train seconds", "seconds per visit", "timed by"]
    if not mans:
        return pd.DataFrame(columns=cols).set_index("run")
    cost = training_cost(mans)
    out = pd.DataFrame(
        {
            "run": list(mans),
            "objective": [m["objective"] for m in mans.values()],
            "rank": [int(m["config"].get("lora_r", 0)) for m in mans.values()],
            "visits": cost.visits.astype(int).to_numpy(),
            "train seconds": 60 * cost.minutes.to_numpy(),
            "seconds per visit": cost["seconds per visit"].to_numpy(),
            "timed by": cost.timed_by.to_numpy(),
        }
    )
    return out[cols].sort_values(["rank", "run"], kind="stable").set_index("run")


def domain_mcnemar(
    a: pd.DataFrame, b: pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str]
) -> dict[str, dict]:
    """Two sets of picks compared question by question in each domain: for "ID" and "OOD" (where
    they share questions), the questions ``n``, both accuracies (%), the questions only ``a`` or
    only ``b`` gets right and the exact McNemar p-value."""
    from ..evaluation.metrics import mcnemar

    mine = domain_correct(a, tables, training_families).set_index(["suite", "question_id"])
    theirs = domain_correct(b, tables, training_families).set_index(["suite", "question_id"])
    both = mine.index.intersection(theirs.index)
    out = {}
    for d in ("ID", "OOD"):
        ids = both[(mine.loc[both, "domain"] == d).to_numpy()]
        if not len(ids):
            continue
        x, y = mine.loc[ids, "correct"].to_numpy(bool), theirs.loc[ids, "correct"].to_numpy(bool)
        t = mcnemar(x, y)
        out[d] = {
            "n": len(ids),
            "a (%)": 100.0 * x.mean(),
            "b (%)": 100.0 * y.mean(),
            "a only": t["a_only"],
            "b only": t["b_only"],
            "p": t["p_value"],
        }
    return out


def lm_companion_tests(
    picks: pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str], arm: str | None = None
) -> pd.DataFrame:
    """Question-paired McNemar tests of the sequential arm (``arm``; default: the one whose name
    holds both stages, e.g. ``sft20-fgpo80``) against each pure arm at the same rank, in each
    domain, on the first seed: rows (rank, domain, other arm) with both accuracies, the questions
    only one of them gets right and the p-value."""
    seed = picks.seed.min()
    picks = picks[picks.seed == seed]
    by = {parse_lm_companion_method(m): f for m, f in picks.groupby("method", sort=False)}
    arms = list(dict.fromkeys(a for a, _ in by))
    if arm is None:
        mixed = [a for a in arms if "sft" in a and "fgpo" in a]
        if not mixed:
            return pd.DataFrame()
        arm = mixed[0]
    rows = []
    for (a, rank), f in by.items():
        if a != arm:
            continue
        for other in arms:
            if other == arm or (other, rank) not in by:
                continue
            for d, t in domain_mcnemar(f, by[(other, rank)], tables, training_families).items():
                rows.append(
                    {
                        "rank": rank,
                        "domain": d,
                        "versus": other,
                        "n": t["n"],
                        f"{arm} (%)": t["a (%)"],
                        "other (%)": t["b (%)"],
                        f"{arm} only": t["a only"],
                        "other only": t["b only"],
                        "p": t["p"],
                    }
                )
    return pd.DataFrame(rows).set_index(["rank", "domain", "versus"]) if rows else pd.DataFrame()
