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

from ..evaluation.domains import domain_of
from ..evaluation.picks import correct_of, summarise_picks
from ..experiments.chosen import CHOSEN_FILE, CHOSEN_KEYS, holds_selector
from ..table import RewardTable

__all__ = [
    "SelectorRun",
    "method_grid",
    "PICK_MODES",
    "warmup_curve",
    "format_summary",
    "load_chosen",
    "load_selector_run",
    "domain_accuracy",
    "warmup_chain",
    "warmup_format_checks",
    "stopped_runs",
    "dev_table",
    "grpo_dead_groups",
    "training_cost",
]

PICK_MODES = ("generation", "scoring", "constrained")
"""How a selector's pick is read: free generation, controlled scoring (Eq. 6), constrained decoding."""


@dataclass
class SelectorRun:
    """One selector: its folder, its training manifest (None for a prompted baseline) and
    its evaluations, one frame per suite."""

    name: str
    folder: Path
    manifest: dict | None
    evals: dict[str, pd.DataFrame] = field(default_factory=dict)

    def picks(self, suite: str, mode: str = "generation") -> np.ndarray:
        """Free-generation picks (-1: format failure), controlled-scoring picks (Eq. 6) or
        constrained-decoding picks (greedy generation restricted to the policy strings)."""
        if mode not in PICK_MODES:
            raise ValueError(f"mode must be one of {', '.join(PICK_MODES)}, got {mode!r}")
        frame = self.evals[suite]
        if f"{mode}_pick" not in frame:
            raise ValueError(
                f"{self.name}'s {suite} evaluation has no {mode} picks (evaluated with --generation-only?)"
            )
        return frame[f"{mode}_pick"].to_numpy()


def _evals(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted((folder / "eval").glob("*.parquet"))}


def load_selector_run(name: str, folder) -> SelectorRun:
    """The selector in ``folder`` as a :class:`SelectorRun` named ``name``: its manifest (None where
    the folder holds only evaluations) and its evaluations."""
    folder = Path(folder)
    m = folder / "manifest.json"
    return SelectorRun(name, folder, json.loads(m.read_text()) if m.exists() else None, _evals(folder))


def load_chosen(runs_dir) -> dict[str, SelectorRun]:
    """The runs ``<runs_dir>/chosen.json`` names, keyed by their row labels
    (:data:`~fgpo_core.experiments.chosen.CHOSEN_METHODS`, then
    :data:`~fgpo_core.experiments.chosen.CHOSEN_EXTRAS`), each with its manifest (None where the folder holds only
    evaluations: a prompted or untrained selector) and its evaluations."""
    root = Path(runs_dir)
    path = root / CHOSEN_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: record the chosen runs with `fgpo choose`")
    chosen = json.loads(path.read_text())
    unknown = sorted(set(chosen) - set(CHOSEN_KEYS))
    if unknown:
        raise ValueError(f"{path} names unknown method(s) {unknown}; known: {', '.join(CHOSEN_KEYS)}")
    out: dict[str, SelectorRun] = {}
    for key, label in CHOSEN_KEYS.items():
        if key not in chosen:
            continue
        folder = root / chosen[key]
        if not holds_selector(folder):
            raise FileNotFoundError(f"{path} names {folder} for {key}, which holds no finished run")
        out[label] = load_selector_run(label, folder)
    return out


def _reference(runs: Mapping[str, SelectorRun], suite: str, methods: Sequence[str] | None) -> SelectorRun | None:
    """The run whose questions of ``suite`` every other is compared on: FGPO where it was evaluated,
    else the first (of ``methods``, where given) that was."""
    names = [n for n in (methods if methods is not None else runs) if n in runs and suite in runs[n].evals]
    if not names:
        return None
    return runs["FGPO"] if "FGPO" in names else runs[names[0]]


def method_grid(
    runs: Mapping[str, SelectorRun],
    tables: Mapping[str, Mapping[str, RewardTable]],
    mode: str = "generation",
    methods: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Long frame: one row per (reasoner, suite, method) with accuracy (%), tools per question,
    input tokens, format failures (%) and ``n``, the questions both evaluated and in the table.

    ``mode`` reads the picks of free generation, controlled scoring or constrained decoding
    (:data:`PICK_MODES`). ``tables`` maps a reasoner's label to its tables by suite
    (:func:`fgpo_core.table.load_tables`); a selector's picks on a suite are looked up in every
    reasoner's table of that suite, and the table-only rows (No-Tool ... Oracle) are
    :meth:`~fgpo_core.table.RewardTable.baselines` of the questions both hold. The questions are
    FGPO's (else the first evaluated selector's); every selector must have been evaluated on them.
    ``correct_vector`` holds each row's answers question by question (a selector's, or a fixed
    subset's: No-Tool, All-Tools, BestFixed*; None for Random and Oracle).
    """
    rows = []
    for reasoner, by_suite in tables.items():
        for suite, table in by_suite.items():
            ref = _reference(runs, suite, methods)
            if ref is None:
                continue
            ids = ref.evals[suite]["question_id"].to_numpy()
            have = table.contains(ids)
            if not have.any():
                continue
            rows_t = table.select(ids[have])
            correct, tokens, n_tools = rows_t.correct, rows_t.tokens, rows_t.n_tools
            for name, res in rows_t.baselines().iterrows():
                subset = int(res.pop("subset"))  # a fixed subset's answers, question by question (Random, Oracle: none)
                rows.append(
                    {
                        "reasoner": reasoner,
                        "suite": suite,
                        "method": name,
                        "n": int(have.sum()),
                        "correct_vector": correct[:, subset] if subset >= 0 else None,
                        **res.to_dict(),
                    }
                )
            for name, run in runs.items():
                if methods is not None and name not in methods or suite not in run.evals:
                    continue
                if list(run.evals[suite]["question_id"]) != list(ids):
                    raise ValueError(f"{name} was evaluated on other {suite} questions than {ref.name}")
                picks = run.picks(suite, mode)[have]
                s = summarise_picks(picks, correct, n_tools, tokens)
                rows.append(
                    {
                        "reasoner": reasoner,
                        "suite": suite,
                        "method": name,
                        "n": int(have.sum()),
                        "correct_vector": correct_of(picks, correct),
                        **s,
                    }
                )
    return pd.DataFrame(rows)


def domain_accuracy(grid: pd.DataFrame, families: Mapping[str, Sequence[str]], training_families) -> pd.DataFrame:
    """Accuracy (%) of every row of a :func:`method_grid` frame (one reasoner) with answers question by
    question, on in-domain and out-of-domain questions pooled over its suites
    (:func:`~fgpo_core.evaluation.domains.domain_of`: ID = a training family outside the
    microbe suite), with the questions of each. ``families`` gives each suite's question families in
    the grid's question order (an evaluation's ``family`` column)."""
    fams = set(training_families)
    out = {}
    for method, rows in grid[grid.correct_vector.notna()].groupby("method", sort=False):
        right = {"ID": [], "OOD": []}
        for _, r in rows.iterrows():
            dom = np.array([domain_of(r.suite, f, fams) for f in families[r.suite]])
            ok = np.asarray(r.correct_vector, dtype=bool)
            if len(ok) != len(dom):
                raise ValueError(f"{method} on {r.suite}: {len(ok)} answers for {len(dom)} families")
            for d in right:
                right[d].append(ok[dom == d])
        row = {}
        for d, parts in right.items():
            v = np.concatenate(parts)
            row[d], row[f"n {d}"] = (100.0 * v.mean() if len(v) else np.nan), len(v)
        out[method] = row
    return pd.DataFrame(out).T


def warmup_curve(stages: Sequence[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The format warm-up read back from its stages' manifests, in order (a later stage starts
    from the earlier one's adapter): ``(dev, steps)``. ``dev``: p_gen's mean (and least) mass on
    the policy strings over the dev questions after each epoch, with ``stage`` and ``epoch``
    counted across stages (a later stage's epoch 0 repeats the earlier's end and is dropped);
    ``steps``: each optimiser step's training mass, loss and learning rate, with ``epoch_float``
    on the same axis."""
    dev, steps, offset = [], [], 0
    for i, m in enumerate(stages, 1):
        if m.get("objective") != "warmup":
            raise ValueError(f"stage {i} is a {m.get('objective')!r} run, not a format warm-up")
        curve = [c for c in m["curve"] if i == 1 or c["epoch"] > 0]
        for c in curve:
            dev.append(
                {
                    "stage": i,
                    "epoch": offset + c["epoch"],
                    "dev_mass_mean": c["dev_mass_mean"],
                    "dev_mass_min": c.get("dev_mass_min", np.nan),
                    "mass_weight": m["config"]["mass_weight"],
                    "lr": m["config"]["lr"],
                }
            )
        per_epoch = {}
        for row in m["log"]:
            per_epoch[row["epoch"]] = max(per_epoch.get(row["epoch"], 0), row["step"])
        for row in m["log"]:
            steps.append(
                {
                    "stage": i,
                    "epoch_float": offset + row["epoch"] - 1 + row["step"] / per_epoch[row["epoch"]],
                    **{k: row[k] for k in ("loss", "train_mass", "learning_rate") if k in row},
                }
            )
        offset += m["epochs"]
    return pd.DataFrame(dev), pd.DataFrame(steps)


def format_summary(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per selector from its ``fgpo format`` frame: the questions, the samples per
    question, the share of sampled completions that parse to a subset and that are exactly a
    canonical policy string (%), and p_gen's exact mass on the canonical strings (%), with the
    least over questions."""
    rows = []
    for label, f in frames.items():
        rows.append(
            {
                "selector": label,
                "questions": len(f),
                "samples": int(f.attrs.get("G", 0)),
                "parse_rate": 100 * f.parse_rate.mean(),
                "canonical_rate": 100 * f.canonical_rate.mean(),
                "canonical_mass": 100 * f.canonical_mass.mean(),
                "least_canonical_mass": 100 * f.canonical_mass.min(),
            }
        )
    return pd.DataFrame(rows).set_index("selector")


def warmup_format_checks(run_folder) -> dict[str, pd.DataFrame]:
    """The sampled format checks (``format-dev.parquet``, written by ``fgpo format`` or ``fgpo lm``)
    of the untrained selector (in ``untrained/`` beside the warm-up) and of each warm-up stage,
    as :func:`format_summary` takes them, for those that exist."""
    from ..experiments.run import recorded_folder

    out = {}
    untrained = Path(run_folder).parent / "untrained" / "format-dev.parquet"
    if untrained.exists():
        out["untrained"] = pd.read_parquet(untrained)
    for i, m in enumerate(warmup_chain(run_folder), 1):
        path = recorded_folder(m["setup"]["out_dir"], run_folder) / "format-dev.parquet"
        if path.exists():
            out[f"warm-up stage {i}"] = pd.read_parquet(path)
    return out


def warmup_chain(run_folder) -> list[dict]:
    """The manifests of a format warm-up's stages, first to last, read back from its last stage's
    folder by following each stage's ``init_adapter`` while it is a warm-up run."""
    from ..experiments.run import recorded_folder, run_manifest

    chain, folder, seen = [], Path(run_folder), set()
    while True:
        m = run_manifest(folder)
        if m.get("objective") != "warmup":
            break
        chain.append(m)
        seen.add(folder.resolve())
        init = m.get("setup", {}).get("init_adapter", "")
        if not init:
            break
        folder = recorded_folder(init, run_folder)
        if folder.resolve() in seen:
            raise ValueError(f"{run_folder}'s warm-up stages start from each other in a loop")
    if not chain:
        raise ValueError(f"{run_folder} is not a format warm-up run")
    return chain[::-1]


def stopped_runs(folder) -> dict[str, dict]:
    """The records of runs stopped on purpose under ``folder`` (``*/stopped.json``, written by
    :func:`fgpo_core.experiments.run.record_stopped_run`), by folder name."""
    from ..experiments.run import STOPPED_FILE

    return {p.parent.name: json.loads(p.read_text()) for p in sorted(Path(folder).glob(f"*/{STOPPED_FILE}"))}


def dev_table(curves: Mapping[str, dict]) -> pd.DataFrame:
    """Dev evaluations of several runs in one long frame: ``run``, ``step``, question ``visits``,
    free-generation accuracy and format failures, controlled-scoring accuracy (where logged), the
    kept step (``kept``) and whether the run was stopped. ``curves`` maps a label to a manifest or
    a stopped run's record; GRPO's dev rows log free generation as ``accuracy``."""
    rows = []
    for label, m in curves.items():
        per_step = m.get("config", {}).get("prompts_per_step") or m.get("config", {}).get("batch_size", 16)
        for d in m.get("dev", []):
            gen = d.get("gen_accuracy", d.get("accuracy")) if m.get("objective") != "grpo" else d.get("accuracy")
            rows.append(
                {
                    "run": label,
                    "step": int(d["step"]),
                    "visits": d.get("visits", d["step"] * per_step),
                    "generation": gen,
                    "format_failures": d.get("gen_format_failures", d.get("format_failures", np.nan)),
                    "scoring": d.get("accuracy") if m.get("objective") != "grpo" else np.nan,
                    "tools": d.get("gen_tools", d.get("tools", np.nan)),
                    "kept": d["step"] == m.get("best_step", -1),
                    "stopped": bool(m.get("stopped")),
                }
            )
    return pd.DataFrame(rows)


def training_cost(manifests: Mapping[str, dict]) -> pd.DataFrame:
    """What each trained run cost, one row per label of ``manifests``: question ``visits``,
    optimiser ``steps``, training ``minutes`` on this machine and ``seconds per visit``.

    ``minutes`` is the manifest's ``train_seconds`` (the wall time of the process that finished
    the run, dev evaluations included) unless the run was resumed across processes: then the
    per-step times TRL logs (``step_time``, kept in every checkpoint) are summed where they add up
    to more, or else the last process's time over the steps after ``resumed_at_step`` (recorded by
    :func:`fgpo_core.experiments.run.train_run`) is scaled to all the run's steps, an estimate.
    ``timed_by`` says which was used."""
    rows = {}
    for label, m in manifests.items():
        log = m.get("steps", m.get("log", []))
        n_steps = max([int(x.get("step", 0)) for x in log] + [0])
        per_step = sum(float(x.get("step_time", 0.0)) for x in log)
        resumed_at = int(m.get("resumed_at_step") or 0)
        seconds, timed_by = m["train_seconds"], "one process (dev evaluations included)"
        if per_step > m["train_seconds"]:
            seconds, timed_by = per_step, "per-step times summed (resumed; dev evaluations excluded)"
        elif 0 < resumed_at < n_steps:
            seconds = m["train_seconds"] * n_steps / (n_steps - resumed_at)
            timed_by = (
                f"estimate: the last process's {n_steps - resumed_at} of {n_steps} steps "
                f"(resumed at step {resumed_at}), scaled to all"
            )
        visits = m["n_train"] * m["config"].get("epochs", 0)
        rows[label] = {
            "visits": visits,
            "steps": n_steps,
            "minutes": seconds / 60,
            "seconds per visit": seconds / visits if visits else np.nan,
            "timed_by": timed_by,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def grpo_dead_groups(manifest: dict) -> pd.DataFrame:
    """A GRPO run's dead groups step by step (fractions in [0, 1]): ``step``, question ``visits``,
    TRL's ``frac_reward_zero_std`` as ``trl``, the exact recount of its groups (``recount``) and
    Eq. 7's closed form from p_gen on the probe questions (``closed_form``); NaN where a step did
    not log one. Older manifests kept the recount as one list from step 1, read as such."""
    steps = pd.DataFrame(manifest.get("steps", []))
    if steps.empty:
        return pd.DataFrame(columns=["step", "visits", "trl", "recount", "closed_form"])
    steps = steps.sort_values("step").reset_index(drop=True)
    recount = (
        steps["dead_fraction_recount"]
        if "dead_fraction_recount" in steps
        else pd.Series(manifest.get("dead_fraction_recount", []), dtype=float).reindex(steps.index)
    )
    return pd.DataFrame(
        {
            "step": steps["step"].astype(int),
            "visits": steps["step"].astype(int) * manifest["config"]["prompts_per_step"],
            "trl": steps["frac_reward_zero_std"].astype(float),
            "recount": recount.astype(float),
            "closed_form": steps.get("dead_group_closed_form", pd.Series(np.nan, index=steps.index)).astype(float),
        }
    )
