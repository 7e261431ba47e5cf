"""One run: train a selector from the reward tables (``fgpo train``) and evaluate it (``fgpo evaluate``).

A run folder holds the adapter (``adapter/``, peft format), ``manifest.json`` (the
objective, its configuration, the tables and questions it saw, the dev curve and
telemetry, the adapter's hash; written last and atomically, it marks the run as finished)
and, after evaluation, ``eval/<suite>.parquet``: each question's pick under free generation
(``generation_pick``, -1 for a format failure), under controlled scoring
(``scoring_pick``) and under constrained decoding (``constrained_pick``: greedy generation
restricted to the policy strings), its candidate scores (``candidate_score_<mask>``) and its p_gen of every
subset's policy string (``p_gen_<mask>``). Chapters render from these files.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from ..algorithms.objectives import OBJECTIVES, TrainData
from ..env import package_versions
from ..hf import adapter_hash, portable_adapter
from ..io import atomic_dir, atomic_path, plain_name, with_digests, write_json
from ..selectors.lm import SELECTOR_BASE, load_selector
from .run_record import (
    ADAPTER_FILES,
    SETUP_FILE,
    STOPPED_FILE,
    best_dev,
    config_differences,
    record_stopped_run,
    recorded_folder,
    run_manifest,
)
from .run_setup import RunSetup, dev_data, split_data

__all__ = [
    "RunSetup",
    "OBJECTIVES",
    "PROMPTED",
    "EVAL_SUITES",
    "train_run",
    "evaluate_run",
    "format_run",
    "best_dev",
    "config_differences",
    "run_manifest",
    "run_tool_names",
    "split_data",
    "record_stopped_run",
    "STOPPED_FILE",
    "run_digest",
    "reuse_evaluation",
    "load_run_selector",
    "recorded_folder",
    "ADAPTER_FILES",
]

EVAL_SUITES = ("core", "microbe", "mosaic")
"""The test suites every selector is evaluated on: the main suite and the two cross-domain ones."""

PROMPTED = "tools-with-descriptions"
"""``evaluate_run``'s name for the unadapted selector with named tools (the tools' real names and
descriptions in its prompt; the paper's row "Tools w/ Desc")."""


def run_tool_names(run_dir) -> list[str] | None:
    """The tool names a finished run's selector was trained to see in its prompt (``RunSetup.described``),
    or None for the anonymous slots; its evaluations use the same prompt."""
    from ..genomics.tools import MAIN_TOOL_NAMES

    return list(MAIN_TOOL_NAMES) if run_manifest(run_dir).get("setup", {}).get("described", False) else None


def _merged_base(run_dir) -> Path | None:
    """The run whose selector, merged, forms the base weights under ``run_dir``'s adapter: the run
    it merged (``RunSetup.merge_init``), or for a run that continued another's adapter, that run's
    merged base; None for the plain base model."""
    setup = run_manifest(run_dir).get("setup", {})
    init = setup.get("init_adapter", "")
    if not init:
        return None
    init = recorded_folder(init, run_dir)
    return init if setup.get("merge_init") else _merged_base(init)


def run_digest(run_dir) -> str:
    """What identifies a finished run's selector: its adapter's hash and, where the adapter sits on
    another run's merged selector (``RunSetup.merge_init``, or continuing such a run), that run's
    digest too."""
    own = adapter_hash(Path(run_dir) / "adapter")
    base = _merged_base(run_dir)
    return own if base is None else f"{own}+{run_digest(base)}"


def reuse_evaluation(run_dir, source_dir, out_dir=None) -> list[str]:
    """Copy ``source_dir``'s evaluations (``eval/<suite>.parquet``) into ``out_dir`` (default
    ``<run_dir>/eval``) when both finished runs hold one selector: the same digest
    (:func:`run_digest`) and prompt (:func:`run_tool_names`), as a run whose dev kept its starting
    adapter holds its start's. A suite already there is left alone; :func:`evaluate_run` then
    recognises the copies by the adapter's hash instead of computing them again. Returns the
    suites copied (none when the selectors differ)."""
    if not Path(source_dir).is_dir():
        raise ValueError(f"{source_dir}: no such run folder")
    src = Path(source_dir) / "eval"
    if not src.is_dir() or Path(source_dir).resolve() == Path(run_dir).resolve():
        return []
    if run_digest(run_dir) != run_digest(source_dir) or run_tool_names(run_dir) != run_tool_names(source_dir):
        return []
    out = Path(out_dir or Path(run_dir) / "eval")
    out.mkdir(parents=True, exist_ok=True)
    copied = []
    for p in sorted(src.glob("*.parquet")):
        if not (out / p.name).exists():
            shutil.copy2(p, out / p.name)
            copied.append(p.stem)
    return copied


def load_run_selector(run_dir, keep: int | None = 40, trainable: bool = False, tool_names=None):
    """A finished run's selector: the base model with the run's adapter, where the base is, for a
    run trained over another run's merged adapter (``RunSetup.merge_init``, or continuing such a
    run), that run's selector merged into the base weights (recursively)."""
    base = _merged_base(run_dir)  # also refuses a missing or unfinished run
    adapter = str(Path(run_dir) / "adapter")
    if base is None:
        return load_selector(adapter, keep, trainable=trainable, tool_names=tool_names)
    from peft import PeftModel

    under = load_run_selector(base, keep, False, tool_names)
    under.model = PeftModel.from_pretrained(under.model.merge_and_unload(), adapter, is_trainable=trainable)
    return under


def train_run(objective: str, setup: RunSetup, config, progress: bool = True) -> dict:
    """Train one selector with an objective of :data:`~fgpo_core.algorithms.objectives.OBJECTIVES`
    (``config`` of its config class); returns (and writes) the run's manifest."""
    import torch

    from ..genomics.tools import MAIN_TOOL_NAMES

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if setup.merge_init and not setup.init_adapter:
        raise ValueError("merge_init needs an init_adapter to merge")
    torch.set_num_threads(setup.threads)
    torch.manual_seed(getattr(config, "seed", 0))
    out = Path(setup.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_qs, train_t = split_data(setup, "train", setup.n_train)
    dev_qs, dev_t = dev_data(setup, train_qs)
    _check_setup(out, setup, objective, [q.id for q in train_qs], [q.id for q in dev_qs], train_t.manifest)
    names = list(MAIN_TOOL_NAMES) if setup.described else None
    if setup.init_adapter:
        sel = load_run_selector(setup.init_adapter, setup.keep, trainable=not setup.merge_init, tool_names=names)
        if setup.merge_init:
            from ..selectors.lm import add_lora

            sel.model = add_lora(
                sel.model.merge_and_unload(), getattr(config, "lora_r", 16), getattr(config, "lora_alpha", 32)
            )
    else:
        sel = load_selector(
            None,
            setup.keep,
            lora_r=getattr(config, "lora_r", 16),
            lora_alpha=getattr(config, "lora_alpha", 32),
            tool_names=names,
        )
    from ..algorithms.common import resumed_step

    resumed = resumed_step(out / "ckpt")  # this process times the steps after it
    t0 = time.time()
    data = TrainData(train_qs, train_t, dev_qs, dev_t)
    extra = OBJECTIVES[objective].train(sel, data, config, out / "ckpt", progress=progress)
    with atomic_dir(out / "adapter") as tmp:  # a fresh folder: no planted link inside is written through
        sel.model.save_pretrained(str(tmp))
        portable_adapter(tmp, SELECTOR_BASE)
    manifest = {
        "objective": objective,
        "setup": asdict(setup),
        "config": json.loads(json.dumps(asdict(config), default=str)),
        "table": {
            "reasoner": train_t.manifest["reasoner"],
            "questions_sha256": train_t.manifest.get("questions_sha256"),
        },
        "n_train": len(train_qs),
        "n_dev": len(dev_qs),
        "train_seconds": round(time.time() - t0, 1),
        "resumed_at_step": resumed,
        "adapter_hash": adapter_hash(out / "adapter"),
        "torch": torch.__version__,
        "versions": package_versions(),
        **extra,
    }
    manifest = with_digests(manifest, out, [f for f in ADAPTER_FILES if (out / f).exists()])
    write_json(out / "manifest.json", manifest, indent=1, default=float)
    return manifest


def _check_setup(out: Path, setup: RunSetup, objective: str, train_ids, dev_ids, table_manifest: dict) -> None:
    """Record what a run trains on before it starts; a restarted run (resuming its checkpoints) must
    train on the same: objective, benchmark (by the digest of its files, so the record is the same
    on any machine), questions, tables, prompt. Anything else would mix two runs."""
    import hashlib

    bench = hashlib.sha256()
    for f in sorted(Path(setup.bench_dir).glob("*.json*")):  # the suites and their manifest: what, not where
        bench.update(f.name.encode() + b"\0" + f.read_bytes())
    ident = {
        "objective": objective,
        "keep": setup.keep,
        "bench": bench.hexdigest()[:16],
        "init_adapter": run_digest(setup.init_adapter) if setup.init_adapter else "",
        "table_reasoner": table_manifest.get("reasoner"),
        "train_ids": hashlib.sha256("\n".join(train_ids).encode()).hexdigest()[:16],
        "dev_ids": hashlib.sha256("\n".join(dev_ids).encode()).hexdigest()[:16],
        "n_train": len(train_ids),
        "n_dev": len(dev_ids),
        "described": setup.described,
        "merge_init": setup.merge_init,
    }
    path = out / SETUP_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError:
            old = None
        # fields added later; a setup recorded before ``bench`` named the benchmark by its absolute path
        recorded_before = {"init_adapter": "", "described": False, "merge_init": False, "bench": ident["bench"]}
        diff = sorted(k for k in ident if old is None or old.get(k, recorded_before.get(k)) != ident[k])
        if diff:
            raise ValueError(
                f"{out} holds a run started with another setup ({', '.join(diff)}); "
                "use another --out-dir or delete the folder"
            )
    else:
        write_json(path, ident, indent=1)


EVAL_CHUNK = 50
"""Questions per evaluated part: an interrupted evaluation loses at most one part."""


def _read_whole(path: Path) -> pd.DataFrame | None:
    """An evaluation file written before, or None where there is none or it is torn (then it is
    evaluated again instead of failing at every restart)."""
    if not path.exists():
        return None
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return None


def _evaluate_chunk(sel, qs, scoring: bool) -> pd.DataFrame:
    """One part of an evaluation: free generation, and with ``scoring`` every other look from
    the same scoring pass (:meth:`fgpo_core.selectors.lm.LMSelector.evaluate_question`)."""
    frame = pd.DataFrame({"question_id": [q.id for q in qs], "family": [q.family for q in qs]})
    if not scoring:
        from ..evaluation.picks import picks_from_generation

        gen, texts = picks_from_generation(sel, qs)
        frame["generation_pick"], frame["completion"] = gen, texts
        return frame
    from ..evaluation.picks import evaluation_frame

    return evaluation_frame(qs, [sel.evaluate_question(q) for q in qs])


def evaluate_run(
    run_dir: str | None,
    bench_dir: str,
    suites=EVAL_SUITES,
    keep: int = 40,
    limit: int | dict = 0,
    out_dir: str | None = None,
    progress: bool = True,
    scoring: bool = True,
    described: bool = False,
) -> dict:
    """Free generation, controlled scoring (Eq. 6) and p_gen of a trained selector on each
    suite's first ``limit`` questions (0: all; a dict gives a limit per suite, or a list of the
    question ids to evaluate, in order), written to
    ``<out_dir>/<suite>.parquet`` (default ``<run_dir>/eval``). ``run_dir`` may also be
    ``"untrained"`` (the bare selector) or :data:`PROMPTED` (the bare selector told the tools'
    names and descriptions, G.2); ``described`` tells a run's own selector the tools' names and
    descriptions instead of anonymous slots (the prompted baseline from the format warm-up's
    adapter; recorded with the adapter's hash). ``scoring=False`` keeps only free generation (no
    ``scoring_pick``, ``constrained_pick``, candidate scores or p_gen). With scoring, greedy
    generation is read off the scoring pass wherever it stays on the policy strings
    (``generation_from_pass``), so the full evaluation costs little more than scoring alone.

    Picks depend only on the question, not on the reasoner, so one evaluation serves every
    reward table of the same questions (the transfer grid is look-ups). A suite already
    written with the same adapter and questions is skipped, and each suite is written in parts
    of :data:`EVAL_CHUNK` questions under ``<out_dir>/parts/`` as it goes, so an interrupted
    evaluation resumes at its last finished part."""
    from tqdm.auto import tqdm

    from ..genomics.benchmarks import load_benchmark
    from ..genomics.tools import MAIN_TOOL_NAMES

    suites = list(suites or EVAL_SUITES)
    _, all_suites = load_benchmark(bench_dir)
    for s in suites:  # a suite's name becomes a file name under out_dir: it may not lead outside it
        plain_name(s, "suite name")
    unknown = [s for s in suites if s not in all_suites]
    if unknown:
        raise ValueError(f"{bench_dir} has no suite {unknown[0]!r}; it has {', '.join(sorted(all_suites))}")
    prompted = run_dir in ("untrained", PROMPTED)
    if prompted and out_dir is None:
        raise ValueError("give out_dir for an untrained selector")
    if described and prompted:
        raise ValueError(
            f"described applies to a run folder's adapter; {run_dir!r} has none "
            f"(use {PROMPTED!r} for the bare selector told the tools)"
        )
    trained_names = None if prompted else run_tool_names(run_dir)  # refuses a missing or unfinished run first
    if described and out_dir is None and trained_names is None:
        raise ValueError("give out_dir for a described evaluation: the run's own eval/ holds its anonymous one")
    described = described or trained_names is not None
    digest = run_dir if prompted else run_digest(run_dir) + (":described" if described else "")
    out = Path(out_dir or Path(run_dir) / "eval")
    result, todo = {}, []
    for s in suites:
        n = limit.get(s, 0) if isinstance(limit, dict) else limit
        if isinstance(n, (list, tuple)):  # these questions, in this order
            by_id = {q.id: q for q in all_suites[s]}
            missing = [i for i in n if i not in by_id]
            if missing:
                raise ValueError(f"{bench_dir}'s {s} suite has no question {missing[0]!r}")
            qs = [by_id[i] for i in n]
        else:
            qs = all_suites[s][:n] if n else all_suites[s]
        path = out / f"{s}.parquet"
        result[s] = path
        old = _read_whole(path)
        if old is not None:
            # evaluations written before ``keep`` was recorded used the default prompt
            if (
                old.attrs.get("adapter") == digest
                and str(old.attrs.get("keep", RunSetup.keep)) == str(keep)
                and list(old["question_id"]) == [q.id for q in qs]
                and ("scoring_pick" in old or not scoring)
            ):
                continue  # already evaluated, with the same adapter, prompt and questions
        todo.append((s, qs, path))
    if not todo:
        return result
    if prompted:
        sel = load_selector(
            None, keep, trainable=False, tool_names=list(MAIN_TOOL_NAMES) if run_dir == PROMPTED else None
        )
    else:
        sel = load_run_selector(run_dir, keep, tool_names=list(MAIN_TOOL_NAMES) if described else None)
    sel.model.eval()
    for s, qs, path in todo:
        parts = out / "parts" / s
        frames = []
        for start in tqdm(range(0, len(qs), EVAL_CHUNK), desc=f"evaluate {s}", disable=not progress):
            chunk = qs[start : start + EVAL_CHUNK]
            part = parts / f"{start:06d}.parquet"
            old = _read_whole(part)
            if old is not None:
                if (
                    old.attrs.get("adapter") == digest
                    and old.attrs.get("keep") == str(keep)
                    and list(old["question_id"]) == [q.id for q in chunk]
                    and ("scoring_pick" in old or not scoring)
                ):
                    frames.append(old)
                    continue
            frame = _evaluate_chunk(sel, chunk, scoring)
            frame.attrs["adapter"], frame.attrs["keep"] = digest, str(keep)
            parts.mkdir(parents=True, exist_ok=True)
            with atomic_path(part) as tmp:
                frame.to_parquet(tmp, index=False)
            frames.append(frame)
        frame = pd.concat(frames, ignore_index=True)
        frame.attrs["adapter"], frame.attrs["keep"] = digest, str(keep)
        with atomic_path(path) as tmp:
            frame.to_parquet(tmp, index=False)
        shutil.rmtree(parts, ignore_errors=True)
    return result


def format_run(
    run_dir: str,
    bench_dir: str,
    suite: str = "dev",
    limit: int = 0,
    G: int = 8,
    seed: int = 0,
    keep: int = 40,
    out_path=None,
    progress: bool = True,
) -> pd.DataFrame:
    """Free generation's format on a suite, measured by sampling (:func:`~fgpo_core.algorithms.warmup.sampled_format`:
    ``G`` completions per question at temperature 1, seeded), beside p_gen's exact mass on the
    canonical policy strings (``canonical_mass``); written to ``out_path`` (default
    ``<run_dir>/format-<suite>.parquet``) with the adapter's hash. ``run_dir`` may be
    ``"untrained"`` (then ``out_path`` is required)."""
    from ..algorithms.warmup import format_mass, sampled_format
    from ..genomics.benchmarks import load_benchmark

    _, all_suites = load_benchmark(bench_dir)
    if suite not in all_suites:
        raise ValueError(f"{bench_dir} has no suite {suite!r}; it has {', '.join(sorted(all_suites))}")
    qs = all_suites[suite][:limit] if limit else all_suites[suite]
    if run_dir == "untrained":
        if out_path is None:
            raise ValueError("give out_path for the untrained selector")
        sel, digest = load_selector(None, keep, trainable=False), "untrained"
    else:
        names = run_tool_names(run_dir)  # the prompt the run was trained with
        sel = load_run_selector(run_dir, keep, tool_names=names)
        digest = run_digest(run_dir) + (":described" if names else "")
    sel.model.eval()
    frame = sampled_format(sel, qs, G=G, seed=seed, progress=progress)
    frame["canonical_mass"] = format_mass(sel, qs)
    frame.attrs.update({"adapter": digest, "keep": str(keep), "G": str(G), "seed": str(seed), "suite": suite})
    path = Path(out_path or Path(run_dir) / f"format-{suite}.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)
    return frame
