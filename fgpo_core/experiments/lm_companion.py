"""The post-training study's question on the LM selector (``fgpo lm-companion``): under one budget of
question visits, does a brief SFT warm start followed by FGPO (20% / 80%) beat pure SFT and pure
FGPO, in domain and out of domain, and how does the LoRA rank of the trained adapter matter?

Every run starts from the format warm-up (the LM main table's shared start), merged into the
base weights, with a fresh LoRA adapter of the run's rank on top (``RunSetup.merge_init``), so
runs of different ranks share one start. The arms, per rank r:

- ``sft-r{r}``: SFT on the table's best subsets for the whole budget;
- ``fgpo-r{r}``: FGPO for the whole budget;
- ``sft20-fgpo80-r{r}``: SFT for the first ``sft_share`` of the budget (its run: ``sft20-r{r}``),
  then FGPO continuing its adapter for the rest.

A run keeps its last adapter (a fixed budget, no checkpoint chosen on dev). Each final selector
is evaluated by free generation on in-domain and out-of-domain core questions (families seen and
unseen in training) and on the microbe suite, and the picks are gathered into ``picks.parquet``
in the study format (``method, seed, suite, question_id, mask``), the methods named as above.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..evaluation.domains import domain_of
from ..io import atomic_path, inside, write_json
from .run import RunSetup, evaluate_run
from .steps import ensure_trained

__all__ = ["LMCompanionConfig", "lm_companion_plan", "companion_questions", "run_lm_companion", "STAGE_BATCH"]

STAGE_BATCH = 16
"""Questions per optimiser step of every stage (the SFT share is rounded to whole steps)."""


@dataclass
class LMCompanionConfig:
    """The LM selector's part of the post-training study (``fgpo lm-companion``)."""

    runs_dir: str = "runs/cpu"
    """The runs folder; ``start`` and ``folder`` are relative to it."""
    start: str = "lm/warmup-stage2"
    """The finished run whose adapter every run starts from, merged (the format warm-up)."""
    folder: str = "lm-companion"
    """Where this study's runs, picks and manifest go."""
    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder."""
    table_dir: str = "data/tables/cpu/reader"
    """The training reader's merged tables (train, dev)."""
    budget: int = 256
    """Question visits of every run (the first N training questions, once)."""
    sft_share: float = 0.2
    """The SFT stage's share of the budget in the sequential arm (rounded to whole steps)."""
    ranks: str = "4,16,64"
    """LoRA ranks of the trained adapter, comma-separated (alpha = 2 x rank)."""
    sft_lr: float = 3e-4
    """SFT's learning rate."""
    fgpo_lr: float = 1e-4
    """FGPO's learning rate."""
    n_dev: int = 50
    """Dev questions FGPO logs at its start and end (the kept adapter is the last, whatever they say)."""
    eval_id: int = 150
    """In-domain core questions evaluated (the first N of the training families)."""
    eval_ood: int = 150
    """Out-of-domain core questions evaluated (the first N of the families unseen in training)."""
    eval_microbe: int = 150
    """Microbe questions evaluated (out of domain whatever their family)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt."""
    threads: int = 2
    """torch CPU threads."""
    seed: int = 0
    """Seeds every run."""


def _ranks(text: str) -> list[int]:
    try:
        ranks = [int(r) for r in text.split(",") if r.strip()]
    except ValueError:
        raise ValueError(f"ranks are comma-separated integers, got {text!r}") from None
    if not ranks or min(ranks) < 1:
        raise ValueError(f"give at least one positive LoRA rank, got {text!r}")
    return ranks


def lm_companion_plan(cfg: LMCompanionConfig) -> list[dict]:
    """Every training run, in order: ``name`` (its folder under ``cfg.folder``), ``objective``,
    ``n_train`` (its question visits: one pass over the first N training questions), ``rank``,
    ``init`` (the run it starts from: ``cfg.start`` merged, or a stage it continues) and
    ``method`` (the name its evaluation goes by; None for a first stage)."""
    if cfg.budget < 2 * STAGE_BATCH:
        raise ValueError(f"the budget must allow at least two steps of {STAGE_BATCH} questions, got {cfg.budget}")
    if not 0 < cfg.sft_share < 1:
        raise ValueError(f"sft_share must lie strictly between 0 and 1, got {cfg.sft_share}")
    sft_visits = min(max(1, round(cfg.budget * cfg.sft_share / STAGE_BATCH)) * STAGE_BATCH, cfg.budget - STAGE_BATCH)
    share = round(100 * cfg.sft_share)
    plan = []
    for r in _ranks(cfg.ranks):
        plan += [
            {
                "name": f"sft-r{r}",
                "objective": "sft",
                "n_train": cfg.budget,
                "rank": r,
                "init": "start",
                "method": f"sft-r{r}",
            },
            {
                "name": f"fgpo-r{r}",
                "objective": "fgpo",
                "n_train": cfg.budget,
                "rank": r,
                "init": "start",
                "method": f"fgpo-r{r}",
            },
            {
                "name": f"sft{share}-r{r}",
                "objective": "sft",
                "n_train": sft_visits,
                "rank": r,
                "init": "start",
                "method": None,
            },
            {
                "name": f"sft{share}-fgpo{100 - share}-r{r}",
                "objective": "fgpo",
                "n_train": cfg.budget - sft_visits,
                "rank": r,
                "init": f"sft{share}-r{r}",
                "method": f"sft{share}-fgpo{100 - share}-r{r}",
            },
        ]
    return plan


def companion_questions(bench_dir, training_families, n_id: int, n_ood: int, n_microbe: int) -> dict[str, list[str]]:
    """The evaluated questions: core's first ``n_id`` in-domain and first ``n_ood`` out-of-domain
    questions (in core's order) and microbe's first ``n_microbe``, as ``{suite: [question ids]}``."""
    from ..genomics.benchmarks import load_benchmark

    _, suites = load_benchmark(bench_dir)
    fams = set(training_families)
    core = suites["core"]
    ids = [q.id for q in core if domain_of("core", q.family, fams) == "ID"][:n_id]
    ids += [q.id for q in core if domain_of("core", q.family, fams) == "OOD"][:n_ood]
    order = {q.id: i for i, q in enumerate(core)}
    return {"core": sorted(ids, key=order.get), "microbe": [q.id for q in suites["microbe"][:n_microbe]]}


def run_lm_companion(cfg: LMCompanionConfig, progress: bool = True, isolate: bool = False) -> Path:
    """Train and evaluate every run of :func:`lm_companion_plan` (each resumable, a finished one
    skipped) and write ``picks.parquet`` and ``manifest.json`` under ``<runs_dir>/<folder>``; returns
    that folder. With ``isolate`` (``fgpo lm-companion`` sets it) each training has its own process."""
    import torch

    from ..algorithms.fgpo import FGPOConfig
    from ..algorithms.imitation import ImitationConfig
    from ..table import load_table

    torch.set_num_threads(cfg.threads)
    root = Path(cfg.runs_dir)
    out = inside(root, *cfg.folder.split("/"), what="--folder")  # relative to --runs-dir, never leaving it
    start = root / cfg.start
    if not (start / "manifest.json").exists():
        raise FileNotFoundError(f"{start} holds no finished run to start from (train the format warm-up first)")
    training_families = sorted(set(np.asarray(load_table(Path(cfg.table_dir) / "train").family)))
    questions = companion_questions(cfg.bench_dir, training_families, cfg.eval_id, cfg.eval_ood, cfg.eval_microbe)
    frames = []
    for run in lm_companion_plan(cfg):
        folder = out / run["name"]
        merged = run["init"] == "start"
        setup = RunSetup(
            cfg.bench_dir,
            cfg.table_dir,
            str(folder),
            run["n_train"],
            cfg.n_dev,
            cfg.keep,
            cfg.threads,
            str(start if merged else out / run["init"]),
            False,
            merged,
        )
        r = run["rank"]
        if run["objective"] == "sft":
            config = ImitationConfig(lr=cfg.sft_lr, epochs=1, seed=cfg.seed, lora_r=r, lora_alpha=2 * r)
        else:
            config = FGPOConfig(lr=cfg.fgpo_lr, epochs=1, seed=cfg.seed, lora_r=r, lora_alpha=2 * r, select_by="last")
        ensure_trained(run["objective"], setup, config, progress, isolate)
        if run["method"] is None:
            continue
        paths = evaluate_run(
            str(folder),
            cfg.bench_dir,
            list(questions),
            cfg.keep,
            questions,
            str(folder / "eval"),
            progress,
            scoring=False,
        )
        for suite, path in paths.items():
            f = pd.read_parquet(path)
            frames.append(
                pd.DataFrame(
                    {
                        "method": run["method"],
                        "seed": cfg.seed,
                        "suite": suite,
                        "question_id": f.question_id,
                        "mask": f.generation_pick.astype(int),
                    }
                )
            )
    picks = pd.concat(frames, ignore_index=True)
    with atomic_path(out / "picks.parquet") as tmp:
        picks.to_parquet(tmp, index=False)
    write_json(
        out / "manifest.json",
        {
            "config": asdict(cfg),
            "training_families": training_families,
            "questions": {s: len(v) for s, v in questions.items()},
            "methods": list(dict.fromkeys(picks.method)),
        },
        indent=1,
    )
    return out
