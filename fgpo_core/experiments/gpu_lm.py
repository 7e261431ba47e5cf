"""The LM selector's FGPO-versus-GRPO comparison at the paper's visits, on one GPU (``make gpu-lm``).

Both methods start from the shared format warm-up's adapter (``runs/cpu/lm/warmup-stage2``) and
see the same question visits: 4 epochs over the whole 1,250-question training pool, 5,000 visits
(FGPO: minibatches of 25 questions, every subset scored exactly; GRPO: TRL's GRPOTrainer, 25
prompts of G = 6 completions per step; 200 optimiser steps each). Dev (all 200 questions) is
evaluated before training and at each quarter epoch (the step nearest it), the adapter of the
dev argmax (free-generation accuracy; FGPO's ties to the higher J, GRPO's to the earlier step, as
the cpu runs) is kept and evaluated on every core, microbe and mosaic question.

The run folders have the cpu runs' layout (``manifest.json`` with the step log ``steps`` and the
dev curve ``dev``, ``setup.json``, ``adapter/``, ``eval/<suite>.parquet`` with the same columns
as :func:`fgpo_core.experiments.run.evaluate_run`'s) under ``<out>/lm/<run>`` with
``<out>/chosen.json`` naming them; each run folder is also written as ``<out>/<run>.tar`` (what a
device call can send back: eight files at most). ``python -m fgpo_core.experiments.gpu_pack
unpack`` puts them under ``runs/gpu``.

The training loops are the library's (:func:`fgpo_core.algorithms.fgpo.train_fgpo`, any estimator of
the registry, ``--fgpo-method``; :func:`fgpo_core.algorithms.grpo.train_grpo`, TRL's trainer built in
:func:`~fgpo_core.algorithms.grpo.make_grpo_trainer`) with two options this run sets: what the cpu
code does one question at a time is batched (the prompts of a micro-batch run left-padded in one pass
whose key-value cache is repeated for the 16 candidate strings,
:func:`fgpo_core.experiments.gpu_scoring.batch_scores`), in bf16 autocast on a GPU with the LM head in
float32. Batch sizes are flags.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from ..core.settings import EstimatorSettings
from .gpu_scoring import (
    autocast_for,
    batch_scores,
    dev_row,
    eval_frame,
    evaluate_batch,
    load_base,
    load_gpu_selector,
    pick_device,
)

__all__ = ["GPULMConfig", "fgpo_config", "grpo_config", "run_gpu_lm", "main"]


@dataclass
class GPULMConfig:
    """The GPU run's plan; the defaults are the paper's visits on the cpu profile's questions."""

    weights: str = ""
    """The base model: a GGUF file (the SmolLM2 one by default) or a ``.tar`` of a transformers folder."""
    out: str = "runs/gpu"
    """Where ``chosen.json``, ``lm/<run>/`` and ``<run>.tar`` go."""
    bench_dir: str = "data/benchmarks/cpu"
    table_dir: str = "data/tables/cpu/reader"
    init_adapter: str = "runs/cpu/lm/warmup-stage2"
    """The run folder whose adapter both methods start from ("": a fresh LoRA adapter)."""
    methods: str = "fgpo,grpo"
    n_train: int = 0
    """Training questions, the first N of the pool (0: all 1,250)."""
    n_dev: int = 0
    """Dev questions (0: all)."""
    dev_suite: str = "indev"
    """The suite that chooses each method's kept checkpoint: the in-domain dev (the training families
    and organisms, held out), as every choice in the book."""
    n_test: int = 0
    """Questions of each test suite (0: all)."""
    epochs: int = 4
    evals_per_epoch: int = 4
    fgpo_lr: float = 3e-4
    format_weight: float = 0.05
    """FGPO's format term (the CPU pool run's setting): without it, FGPO at 1e-4 on this pool moved free
    generation off the policy strings within 20 steps (runs/cpu/lm-pool/fgpo-paper/stopped.json)."""
    fgpo_batch: int = 25
    """FGPO's questions per optimiser step."""
    fgpo_micro: int = 0
    """FGPO's questions per forward/backward pass (0: the whole step at once)."""
    fgpo_method: str = "fgpo"
    """The estimator of the FGPO loop, a method name of the registry (``fgpo``: the exact objective with
    its entropy bonus; ``rloo-klu0.05``...); its run is named after it."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """The estimator settings of both loops (``G``: GRPO's group size, the paper's 6; ``weight``: FGPO's
    entropy bonus, None its 0.03)."""
    grpo_lr: float = 3e-4
    prompts_per_step: int = 25
    """GRPO's prompts per optimiser step (x G completions)."""
    grpo_micro: int = 0
    """GRPO's prompts per forward/backward pass (0: the whole step at once)."""
    max_completion_length: int = 16
    eval_batch: int = 50
    """Questions per batched scoring pass in the dev and test evaluations."""
    keep: int = 40
    device: str = "auto"
    """"cuda", "cpu" or "auto"."""
    dtype: str = "bf16"
    """"bf16" (autocast and bf16 base weights, on a GPU) or "fp32"."""
    seed: int = 0
    max_train_s: float = 0
    """A guard on each method's training time (0: none): past it, training stops after the step in
    progress (the manifest's ``stopped_early`` and ``visits_done`` say so) and the dev argmax so
    far is kept and evaluated, so a call's results come back inside its time limit."""
    deadline_s: float = 0
    """A guard on the whole run (0: none), from the moment the base model is loaded: each method
    may train until ``deadline_s`` less ``eval_reserve_s`` for each method's test evaluation still
    to come (and ``max_train_s``, if set)."""
    eval_reserve_s: float = 60


class _Data:
    def __init__(self, cfg: GPULMConfig):
        from .run import RunSetup, split_data
        from .run_setup import dev_data

        self.table_dir = cfg.table_dir
        setup = RunSetup(cfg.bench_dir, cfg.table_dir, "", cfg.n_train, cfg.n_dev, cfg.keep, dev_suite=cfg.dev_suite)
        self.train_qs, self.train_t = split_data(setup, "train", cfg.n_train)
        self.dev_qs, self.dev_t = dev_data(setup, self.train_qs)
        from ..genomics.benchmarks import load_benchmark

        _, suites = load_benchmark(cfg.bench_dir)
        self.test = {s: (suites[s][: cfg.n_test] if cfg.n_test else suites[s]) for s in ("core", "microbe", "mosaic")}


def fgpo_config(cfg: GPULMConfig):
    """The FGPO run of the plan: :class:`~fgpo_core.algorithms.fgpo.FGPOConfig` (its micro-batches batched)."""
    from ..algorithms.fgpo import FGPOConfig

    return FGPOConfig(
        lr=cfg.fgpo_lr,
        epochs=cfg.epochs,
        batch_size=cfg.fgpo_batch,
        method=cfg.fgpo_method,
        settings=replace(cfg.settings),
        seed=cfg.seed,
        evals_per_epoch=cfg.evals_per_epoch,
        micro_batch=cfg.fgpo_micro or cfg.fgpo_batch,
        format_weight=cfg.format_weight,
    )


def grpo_config(cfg: GPULMConfig, n_train: int):
    """The GRPO run of the plan: :class:`~fgpo_core.algorithms.grpo.GRPOConfig` (TRL's, on the device)."""
    from ..algorithms.grpo import GRPOConfig

    return GRPOConfig(
        lr=cfg.grpo_lr,
        settings=replace(cfg.settings),
        prompts_per_step=cfg.prompts_per_step,
        max_steps=math.ceil(n_train / cfg.prompts_per_step) * cfg.epochs,
        epochs=cfg.epochs,
        max_completion_length=cfg.max_completion_length,
        seed=cfg.seed,
        evals_per_epoch=cfg.evals_per_epoch,
        micro_batch=cfg.grpo_micro or cfg.prompts_per_step,
    )


def _train(method: str, selector, data: _Data, cfg: GPULMConfig, device: str, bf16: bool, log, limit: float) -> dict:
    """Train one method with the library's loop (FGPO: :func:`~fgpo_core.algorithms.fgpo.train_fgpo`,
    batched and autocast; GRPO: :func:`~fgpo_core.algorithms.grpo.train_grpo`, TRL on the device);
    returns the manifest's record of the run."""
    from ..algorithms.fgpo import eval_steps
    from ..evaluation.picks import summarise_picks

    dev_r, dev_c = data.dev_t.rewards("eq1"), data.dev_t.correct
    if method == "fgpo":
        from ..algorithms.fgpo import train_fgpo, training_reward

        config = fgpo_config(cfg)
        train_r = data.train_t.rewards(training_reward(config))
        res = train_fgpo(
            selector,
            data.train_qs,
            train_r,
            data.dev_qs,
            dev_r,
            dev_c,
            config,
            progress=False,
            evaluate=lambda sel, qs, r, c: dev_row(evaluate_batch(sel, qs, cfg.eval_batch), r, c),
            score=batch_scores,
            autocast=lambda: autocast_for(device, bf16),
            time_limit=limit,
            log=log,
            restore_best=True,
        )
        evals = eval_steps(math.ceil(len(data.train_qs) / cfg.fgpo_batch), cfg.epochs, cfg.evals_per_epoch)
        extra = {
            "reward_evaluations": 0 if config.method == "fgpo" else res.reward_evaluations,
            "stopped_early": bool(res.extra.get("stopped_early")),
            "visits_done": int(res.steps["visits"].iloc[-1]) if len(res.steps) else 0,
        }
    else:
        from ..algorithms.grpo import train_grpo

        def evaluate(sel, qs, _rewards, correct) -> dict:
            with autocast_for(device, bf16):
                evs = evaluate_batch(sel, qs, cfg.eval_batch)
            gen = summarise_picks(np.array([e["generation_pick"] for e in evs], dtype=int), correct, 4)
            sc = dev_row(evs, dev_r, correct)
            return {**gen, "scoring_accuracy": sc["accuracy"], "J": sc["J"]}

        config = grpo_config(cfg, len(data.train_qs))
        scratch = Path(cfg.out) / "trainer"
        shutil.rmtree(scratch, ignore_errors=True)
        res = train_grpo(
            selector,
            data.train_qs,
            data.train_t.correct,
            data.dev_qs,
            dev_c,
            config,
            scratch,
            evaluate=evaluate,
            progress=False,
            dead_group_probe=0,
            device=device,
            bf16=bf16,
            checkpoints=False,
            time_limit=limit,
            log=log,
        )
        shutil.rmtree(scratch, ignore_errors=True)
        evals = eval_steps(math.ceil(len(data.train_qs) / cfg.prompts_per_step), cfg.epochs, cfg.evals_per_epoch)
        extra = {
            "reward_evaluations": res.reward_evaluations,
            "stopped_early": bool(res.extra.get("stopped_early")),
            "visits_done": res.extra.get(
                "visits_done", min(res.reward_evaluations // config.G, len(data.train_qs) * cfg.epochs)
            ),
        }
    steps = [
        {k: v for k, v in h.items() if isinstance(v, (int, float, str, bool))} for h in res.steps.to_dict("records")
    ]
    record = json.loads(json.dumps(asdict(config), default=str))
    return {
        "steps": steps,
        "dev": res.dev.to_dict("records"),
        "best_step": res.best_step,
        **extra,
        "config": {"objective": method, **record, "eval_steps": evals},
    }


def _write_run(
    selector, name: str, result: dict, data: _Data, cfg: GPULMConfig, seconds: float, device: str, bf16: bool, log
) -> Path:
    """Save the kept adapter, manifest, setup and the test evaluations of one run; tar the folder."""
    import torch

    from ..env import package_versions
    from ..hf import adapter_hash, portable_adapter
    from ..io import atomic_dir, atomic_file, atomic_path, inside, with_digests, write_json
    from ..selectors.lm import SELECTOR_BASE
    from .run import ADAPTER_FILES, run_digest

    out = Path(cfg.out)
    rel = f"lm/{name}"
    folder = inside(out, "lm", name, what="run name")
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with atomic_dir(folder / "adapter") as tmp:  # a fresh folder: no planted link inside is written through
        selector.model.save_pretrained(str(tmp))
        portable_adapter(tmp, SELECTOR_BASE)
    config = result.pop("config")
    setup = {
        "bench_dir": cfg.bench_dir,
        "table_dir": cfg.table_dir,
        "out_dir": str(folder),
        "n_train": len(data.train_qs),
        "n_dev": len(data.dev_qs),
        "keep": cfg.keep,
        "threads": 0,
        "init_adapter": cfg.init_adapter,
        "described": False,
        "merge_init": False,
    }
    write_json(
        folder / "setup.json",
        {
            "objective": config["objective"],
            "keep": cfg.keep,
            "init_adapter": cfg.init_adapter,
            "n_train": len(data.train_qs),
            "n_dev": len(data.dev_qs),
            "table_reasoner": data.train_t.manifest["reasoner"],
        },
        indent=1,
    )
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    manifest = {
        "objective": config["objective"],
        "setup": setup,
        "config": config,
        "table": {
            "reasoner": data.train_t.manifest["reasoner"],
            "questions_sha256": data.train_t.manifest.get("questions_sha256"),
        },
        "n_train": len(data.train_qs),
        "n_dev": len(data.dev_qs),
        "train_seconds": round(seconds, 1),
        "adapter_hash": adapter_hash(folder / "adapter"),
        "torch": torch.__version__,
        "versions": package_versions(),
        "gpu_run": {
            "device": gpu,
            "dtype": "bf16" if bf16 else "fp32",
            "visits": len(data.train_qs) * cfg.epochs,
            "config": asdict(cfg),
        },
        **result,
    }
    manifest = with_digests(manifest, folder, [f for f in ADAPTER_FILES if (folder / f).exists()])
    write_json(folder / "manifest.json", manifest, indent=1, default=float)  # written last: the run's commit point
    digest = run_digest(folder)
    selector.model.eval()
    for suite, qs in data.test.items():
        t0 = time.time()
        with autocast_for(device, bf16):
            frame = eval_frame(qs, evaluate_batch(selector, qs, cfg.eval_batch))
        frame.attrs["adapter"], frame.attrs["keep"] = digest, str(cfg.keep)
        (folder / "eval").mkdir(exist_ok=True)
        with atomic_path(folder / "eval" / f"{suite}.parquet") as tmp:
            frame.to_parquet(tmp, index=False)
        acc = 100.0 * data_correct(data, suite, frame)
        log(f"{name} {suite}: {len(qs)} questions in {time.time() - t0:.0f} s; generation accuracy {acc:.1f}%")
    with atomic_file(out / f"{name}.tar") as fh, tarfile.open(fileobj=fh, mode="w") as tar:
        tar.add(folder, arcname=rel)
    return folder


def data_correct(data: _Data, suite: str, frame) -> float:
    """Free generation's accuracy on a test suite, read from its reward table (for the log)."""
    from ..evaluation.picks import correct_of
    from ..table import load_table

    try:
        t = load_table(Path(data.table_dir) / suite).select(list(frame["question_id"]))
    except (FileNotFoundError, ValueError):
        return float("nan")
    return float(correct_of(frame["generation_pick"].to_numpy(), t.correct).mean())


def run_gpu_lm(cfg: GPULMConfig) -> dict:
    """Train and evaluate every method of ``cfg.methods``; returns ``chosen.json``'s mapping."""
    import torch

    from ..io import inside, write_json

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "gpu-lm-log.txt"
    t_start = time.time()

    def log(msg: str) -> None:
        line = f"[{time.time() - t_start:6.0f} s] {msg}"
        print(line, flush=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "a") as fh:  # never through a link planted at the log's name
            fh.write(line + "\n")

    torch.manual_seed(cfg.seed)
    device, bf16 = pick_device(cfg)
    if cfg.weights == "":
        from ..reasoners.causal_lm import smollm2_path

        folder, name = smollm2_path()
        cfg.weights = str(Path(folder) / name)
    lm = load_base(cfg.weights, device, bf16)
    data = _Data(cfg)
    log(
        f"loaded the base model on {device} ({'bf16' if bf16 else 'fp32'}); {len(data.train_qs)} training, "
        f"{len(data.dev_qs)} dev questions, test {', '.join(f'{s} {len(q)}' for s, q in data.test.items())}"
    )
    chosen = {}
    methods = [m.strip() for m in cfg.methods.split(",") if m.strip()]
    t_loaded = time.time()
    for i, method in enumerate(methods):
        torch.manual_seed(cfg.seed)
        selector = load_gpu_selector(lm, cfg.init_adapter, cfg.keep)
        limits = [cfg.max_train_s] if cfg.max_train_s else []
        if cfg.deadline_s:
            limits.append(max(1.0, cfg.deadline_s - (time.time() - t_loaded) - cfg.eval_reserve_s * (len(methods) - i)))
        limit = min(limits) if limits else 0
        t0 = time.time()
        if method not in ("fgpo", "grpo"):
            raise ValueError(f"methods are fgpo and grpo, got {method!r}")
        # FGPO with the format term: the row "FGPO + format term" (chosen key fgpo-format)
        key = method if method == "grpo" else cfg.fgpo_method + ("-format" if cfg.format_weight else "")
        name = key if method == "grpo" else f"{key}-lr{cfg.fgpo_lr:g}"
        inside(out, "lm", name, what="run name")  # before training, not after it
        result = _train(method, selector, data, cfg, device, bf16, log, limit)
        seconds = time.time() - t0
        log(f"{method} trained in {seconds:.0f} s, kept step {result['best_step']}")
        _write_run(selector, name, result, data, cfg, seconds, device, bf16, log)
        chosen[key] = f"lm/{name}"
        write_json(out / "chosen.json", chosen, indent=1)
        del selector
        if device == "cuda":
            torch.cuda.empty_cache()
    log(f"done in {time.time() - t_start:.0f} s")
    return chosen


def main(argv=None) -> int:
    from ..configs import add_dataclass_args, dataclass_from_args

    ap = argparse.ArgumentParser(prog="python -m fgpo_core.experiments.gpu_lm", description=__doc__.split("\n\n")[0])
    add_dataclass_args(ap, GPULMConfig)
    run_gpu_lm(dataclass_from_args(GPULMConfig, ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
