"""The post-training study read back: in-domain (ID) and out-of-domain (OOD) accuracy of every
method, seed and checkpoint of a study run with ``--methods companion --keep last``.

The split, for this book's selectors: a test question is **ID** when its family is one of the
training families and its suite is not the microbe suite; it is **OOD** when its family never
appears in training (core's and mosaic's taxonomy and TF-motif questions) or when it comes
from the microbe suite (other organisms, whatever the family). The rule lives in one place,
:func:`fgpo_core.evaluation.domains.domain_of`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ..evaluation.domains import domain_of
from ..evaluation.picks import correct_of
from ..experiments.study import Study
from ..table import RewardTable
from .lm_runs import training_cost

__all__ = [
    "domain_split",
    "id_ood_scores",
    "id_ood_checkpoints",
    "id_ood_summary",
    "domain_correct",
    "parse_lm_companion_method",
    "START_ARM",
    "with_start",
    "load_lm_companion",
    "lm_companion_costs",
    "lm_companion_table",
    "domain_mcnemar",
    "lm_companion_tests",
    "against_best",
    "budget_tests",
    "id_ood_verdicts",
]


def domain_split(tables: Mapping[str, RewardTable], training_families: Iterable[str]) -> pd.DataFrame:
    """Questions per suite, family and domain: columns ``suite, family, n, domain``."""
    fams = set(training_families)
    rows = []
    for s, t in tables.items():
        for f, n in pd.Series(np.asarray(t.family)).value_counts().sort_index().items():
            rows.append({"suite": s, "family": f, "n": int(n), "domain": domain_of(s, f, fams)})
    return pd.DataFrame(rows)


def domain_correct(
    picks: pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str]
) -> pd.DataFrame:
    """One method and seed's picks (``suite, question_id, mask``; -1 a format failure) read against
    the tables: columns ``suite, question_id, domain, correct, failed``, in the picks' order
    (suites without a table are dropped)."""
    fams = set(training_families)
    frames = []
    for s, g in picks.groupby("suite", sort=False):
        if s not in tables:
            continue
        t = tables[s].select(g.question_id.tolist())
        mask = g["mask"].to_numpy()
        frames.append(
            pd.DataFrame(
                {
                    "suite": s,
                    "question_id": g.question_id.to_numpy(),
                    "domain": [domain_of(s, fam, fams) for fam in np.asarray(t.family)],
                    "correct": correct_of(mask, t.correct),
                    "failed": mask < 0,
                }
            )
        )
    cols = ["suite", "question_id", "domain", "correct", "failed"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def id_ood_scores(
    study: Study | pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str]
) -> pd.DataFrame:
    """Per (method, seed): ID and OOD accuracy (%) over every question of the test suites, pooled
    question by question, with the number of questions in each domain. ``study``: a study, or
    picks in its format (``method, seed, suite, question_id, mask``)."""
    picks = study if isinstance(study, pd.DataFrame) else study.picks
    rows = []
    for (m, seed), f in picks.groupby(["method", "seed"], sort=False):
        c = domain_correct(f, tables, training_families)
        row = {"method": m, "seed": seed}
        for d in ("ID", "OOD"):
            v = c.correct[c.domain == d].to_numpy(dtype=bool)
            row[d], row[f"n {d}"] = (100.0 * float(v.mean()) if len(v) else np.nan), int(len(v))
        rows.append(row)
    return pd.DataFrame(rows)


def id_ood_verdicts(
    picks: pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str], a: str, b: str
) -> dict:
    """``{"ID": verdict, "OOD": verdict}``: method ``a`` against method ``b`` of ``picks`` (a study's
    picks, or picks in its format) by the book's one rule
    (:func:`fgpo_core.evaluation.difference.compare`), question-paired within each seed the two
    share, on the questions of each domain."""
    from ..evaluation.difference import compare

    seeds = sorted(set(picks.seed[picks.method == a]) & set(picks.seed[picks.method == b]))
    if not seeds:
        raise ValueError(f"{a} and {b} share no seed")
    right = {
        m: [domain_correct(picks[(picks.method == m) & (picks.seed == s)], tables, training_families) for s in seeds]
        for m in (a, b)
    }
    out = {}
    for d in ("ID", "OOD"):
        x, y = [], []
        for ca, cb in zip(right[a], right[b]):
            ca = ca[ca.domain == d].set_index(["suite", "question_id"])
            cb = cb[cb.domain == d].set_index(["suite", "question_id"])
            both = ca.index.intersection(cb.index)
            x.append(ca.loc[both, "correct"].to_numpy(bool))
            y.append(cb.loc[both, "correct"].to_numpy(bool))
        if len(x[0]):
            out[d] = compare(x, y)
    return out


def id_ood_checkpoints(study: Study, training_families: Iterable[str]) -> pd.DataFrame:
    """Per (method, seed, stage, epoch): ID and OOD accuracy (%) of each checkpoint, pooled over the
    per-family rows of every test suite (a study run with ``--checkpoints``)."""
    c = study.checkpoints
    if c is None or "family" not in c:
        raise ValueError("this study has no per-family checkpoints: run it with `fgpo study --checkpoints N`")
    fams = set(training_families)
    c = c[c.family != "all"].copy()
    c["domain"] = [domain_of(s, f, fams) for s, f in zip(c.suite, c.family)]
    c["right"] = c.accuracy * c.n / 100.0
    if "stage" not in c:
        c["stage"] = 0
    c["stage"] = c["stage"].fillna(0).astype(int)
    g = c.groupby(["method", "seed", "stage", "epoch", "domain"])[["right", "n"]].sum()
    acc = (100.0 * g.right / g.n).unstack("domain")
    return acc.reset_index()


def id_ood_summary(scores: pd.DataFrame, methods: Iterable[str]) -> pd.DataFrame:
    """Mean and sd over seeds of ID and OOD accuracy, for ``methods`` in order (those present)."""
    from .study import label

    g = scores.groupby("method")
    out = pd.DataFrame(
        {
            "ID": g.ID.mean(),
            "ID sd": g.ID.std(ddof=1),
            "OOD": g.OOD.mean(),
            "OOD sd": g.OOD.std(ddof=1),
            "seeds": g.seed.nunique(),
        }
    )
    return out.reindex([m for m in methods if m in out.index]).rename(index=label)


def against_best(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Settings compared over seeds: ``per_seed`` holds one column per setting and one row per
    seed (an accuracy, %). Per setting: its mean and sd over seeds, whether it is the best (the
    highest mean; the first on ties) and the paired t-test p against the best over the seeds both
    hold (:func:`~fgpo_core.evaluation.metrics.seed_paired_ttest`; NaN for the best itself)."""
    from ..evaluation.metrics import seed_paired_ttest

    mean = per_seed.mean()
    best = mean.idxmax()
    rows = {}
    for col in per_seed.columns:
        both = per_seed[[best, col]].dropna()
        rows[col] = {
            "mean": float(mean[col]),
            "sd": float(per_seed[col].std(ddof=1)),
            "best": col == best,
            "p against best": np.nan if col == best else seed_paired_ttest(both[best], both[col]),
            "seeds": int(per_seed[col].notna().sum()),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _per_seed(scores: pd.DataFrame, method: str, column: str) -> pd.Series:
    f = scores[scores.method == method].set_index("seed")
    return (f.ID + f.OOD) / 2 if column == "mean" else f[column]


def budget_tests(scores: pd.DataFrame, methods: Mapping[int, str], column: str = "mean") -> pd.DataFrame:
    """The fixed-budget arms over seeds: ``methods`` maps each SFT share (%) to its method in
    ``scores`` (:func:`id_ood_scores`); ``column`` is "ID", "OOD" or "mean" (of the two). Returns
    :func:`against_best` indexed by share (shares with no scores left out)."""
    per = {s: _per_seed(scores, m, column) for s, m in methods.items() if (scores.method == m).any()}
    if not per:
        raise ValueError("none of the budget's methods has scores")
    return against_best(pd.DataFrame(per)).rename_axis("SFT share (%)")


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


def lm_companion_table(
    picks: pd.DataFrame, tables: Mapping[str, RewardTable], training_families: Iterable[str]
) -> pd.DataFrame:
    """The LM selector's post-training study read back: per (arm, LoRA rank), ID and OOD accuracy
    (%), their question counts, the free-generation format failures (%) and tools per question
    (of the well-formed picks), over every question and seed in ``picks`` (``fgpo lm-companion``'s
    ``picks.parquet``); rank by rank from the lowest, each rank's arms in the picks' order."""
    rows = []
    for (m, seed), f in picks.groupby(["method", "seed"], sort=False):
        arm, rank = parse_lm_companion_method(m)
        c = domain_correct(f, tables, training_families)
        row = {"arm": arm, "rank": rank, "seed": seed}
        for d in ("ID", "OOD"):
            row[d] = 100.0 * float(c.correct[c.domain == d].mean()) if (c.domain == d).any() else np.nan
            row[f"n {d}"] = int((c.domain == d).sum())
        row["format failures (%)"] = 100.0 * float(c.failed.mean()) if len(c) else np.nan
        mask = f["mask"].to_numpy()
        ok = mask[mask >= 0].astype(np.int64)
        row["tools"] = float(np.mean([bin(int(m)).count("1") for m in ok])) if len(ok) else np.nan
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    g = t.groupby(["arm", "rank"], sort=False)
    out = g[["ID", "OOD", "format failures (%)", "tools"]].mean()
    out[["n ID", "n OOD"]] = g[["n ID", "n OOD"]].first()
    out["seeds"] = g.seed.nunique()
    return out.iloc[np.argsort(out.index.get_level_values(1), kind="stable")]  # rank by rank, arms in order


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
