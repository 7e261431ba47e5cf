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

Everything that the cpu code does one question at a time is batched here: the prompts of a
minibatch run left-padded in one pass whose key-value cache is repeated for the 16 candidate
strings (:func:`fgpo_core.experiments.gpu_scoring.batch_logprobs`), in bf16 autocast on a GPU with the LM head in float32; batch
sizes are flags.
"""
from __future__ import annotations

import argparse
import math
import shutil
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from .gpu_scoring import (EVAL_COLUMNS, pick_device, autocast_for, load_base, load_gpu_selector, batch_logprobs, batch_scores, evaluate_batch, dev_row, eval_frame)

__all__ = ["GPULMConfig", "run_gpu_lm", "main"]

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
    beta: float = 0.03
    grpo_lr: float = 3e-4
    G: int = 6
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


def eval_steps(steps_per_epoch: int, epochs: int, per_epoch: int) -> list[int]:
    """The optimiser steps nearest each 1/``per_epoch`` of an epoch (the last step included)."""
    return sorted({max(1, round(e * steps_per_epoch + k * steps_per_epoch / per_epoch))
                   for e in range(epochs) for k in range(1, per_epoch + 1)})


class _Data:
    def __init__(self, cfg: GPULMConfig):
        from .run import RunSetup, split_data

        self.table_dir = cfg.table_dir
        setup = RunSetup(cfg.bench_dir, cfg.table_dir, "", cfg.n_train, cfg.n_dev, cfg.keep)
        self.train_qs, self.train_t = split_data(setup, "train", cfg.n_train)
        self.dev_qs, self.dev_t = split_data(setup, "dev", cfg.n_dev)
        from ..genomics.benchmarks import load_benchmark

        _, suites = load_benchmark(cfg.bench_dir)
        self.test = {s: (suites[s][:cfg.n_test] if cfg.n_test else suites[s]) for s in ("core", "microbe", "mosaic")}


def _train_fgpo(selector, data: _Data, cfg: GPULMConfig, device: str, bf16: bool, log, limit: float = 0) -> dict:
    import torch

    from ..core.estimators import entropy, fgpo_loss
    from ..algorithms.common import cosine_schedule, trainable_parameters
    from ..algorithms.fgpo import dev_key

    params = trainable_parameters(selector.model)
    opt = torch.optim.AdamW(params, lr=cfg.fgpo_lr, weight_decay=0.0)
    N = len(data.train_qs)
    n_batches = math.ceil(N / cfg.fgpo_batch)
    total = n_batches * cfg.epochs
    sched = cosine_schedule(opt, total)
    rng = np.random.default_rng(cfg.seed)
    orders = [rng.permutation(N) for _ in range(cfg.epochs)]
    rewards = data.train_t.rewards("eq1")
    dev_r, dev_c = data.dev_t.rewards("eq1"), data.dev_t.correct
    at = set(eval_steps(n_batches, cfg.epochs, cfg.evals_per_epoch))
    steps, dev, best = [], [], None
    micro = cfg.fgpo_micro or cfg.fgpo_batch

    def evaluate(step: int, visits: int) -> None:
        nonlocal best
        selector.model.eval()
        with autocast_for(device, bf16):
            row = dev_row(evaluate_batch(selector, data.dev_qs, cfg.eval_batch), dev_r, dev_c)
        dev.append({"step": step, "epoch": step / n_batches, "visits": visits, **row})
        if max(dev, key=lambda d: dev_key(d)) is dev[-1]:
            best = (step, [p.detach().cpu().clone() for p in params])
        log(f"fgpo dev step {step}: generation {row['gen_accuracy']:.1f}%, scoring {row['accuracy']:.1f}%, "
            f"J {row['J']:.4f}")
        selector.model.train()

    evaluate(0, 0)
    selector.model.train()
    t0, stopped = time.time(), False
    for epoch in range(cfg.epochs):
        for b in range(n_batches):
            step = epoch * n_batches + b + 1
            idx = orders[epoch][b * cfg.fgpo_batch:(b + 1) * cfg.fgpo_batch]
            opt.zero_grad(set_to_none=True)
            all_scores, masses = [], []
            for s in range(0, len(idx), micro):
                part = idx[s:s + micro]
                with autocast_for(device, bf16):
                    scores, log_mass = batch_scores(selector, [data.train_qs[i] for i in part])
                scores = scores.float()
                r = torch.as_tensor(rewards[part], dtype=scores.dtype, device=scores.device)
                loss = fgpo_loss(scores, r, cfg.beta) - cfg.format_weight * log_mass.float().mean()
                (loss * (len(part) / len(idx))).backward()
                all_scores.append(scores.detach().cpu())
                masses.append(log_mass.detach().float().cpu())
            opt.step()
            sched.step()
            scores = torch.cat(all_scores)
            r = torch.as_tensor(rewards[idx], dtype=scores.dtype)
            q = torch.softmax(scores, -1)
            steps.append({"epoch": epoch + 1, "step": step, "visits": epoch * N + min((b + 1) * cfg.fgpo_batch, N),
                          "loss": float(fgpo_loss(scores, r, cfg.beta)), "J": float((q * r).sum(-1).mean()),
                          "entropy": float(entropy(q).mean()), "top_mass": float(q.max(-1).values.mean()),
                          "tools": float(selector.space.sizes[q.argmax(-1).numpy()].mean()),
                          "p_gen_mass": float(torch.cat(masses).exp().mean()), "lr": sched.get_last_lr()[0]})
            if step in at:
                evaluate(step, steps[-1]["visits"])
            if limit and time.time() - t0 > limit and step < total:
                stopped = True
                break
        if stopped:
            break
    if stopped:
        if steps and dev[-1]["step"] != steps[-1]["step"]:
            evaluate(steps[-1]["step"], steps[-1]["visits"])
        log(f"fgpo stopped by its time guard ({limit:.0f} s) after step {len(steps)} of {total}")
    with torch.no_grad():
        for p, v in zip(params, best[1]):
            p.copy_(v.to(p.device))
    return {"steps": steps, "dev": dev, "best_step": best[0], "reward_evaluations": 0, "stopped_early": stopped,
            "visits_done": steps[-1]["visits"] if steps else 0,
            "config": {"objective": "fgpo", "lr": cfg.fgpo_lr, "epochs": cfg.epochs, "batch_size": cfg.fgpo_batch,
                       "beta": cfg.beta, "lora_r": 16, "lora_alpha": 32, "seed": cfg.seed,
                       "eval_steps": sorted(at), "format_weight": cfg.format_weight, "select_by": "generation"}}


def _train_grpo(selector, data: _Data, cfg: GPULMConfig, device: str, bf16: bool, out: Path, log,
                limit: float = 0) -> dict:
    import torch
    import trl
    from transformers import TrainerCallback

    from ..algorithms.grpo import TableReward, grpo_dataset
    from ..evaluation.picks import summarise_picks

    N = len(data.train_qs)
    steps_per_epoch = math.ceil(N / cfg.prompts_per_step)
    max_steps = steps_per_epoch * cfg.epochs
    at = set(eval_steps(steps_per_epoch, cfg.epochs, cfg.evals_per_epoch))
    micro = cfg.grpo_micro or cfg.prompts_per_step
    if cfg.prompts_per_step % micro:
        raise ValueError(f"grpo_micro ({micro}) must divide prompts_per_step ({cfg.prompts_per_step})")
    reward = TableReward(data.train_t.correct, selector.space.n_tools, cfg.G, prefill=selector.prefill)
    dev_r, dev_c = data.dev_t.rewards("eq1"), data.dev_t.correct
    trainable = [p for p in selector.model.parameters() if p.requires_grad]
    dev, best = [], None

    def evaluate(step: int) -> None:
        nonlocal best
        selector.model.eval()
        with autocast_for(device, bf16):
            evs = evaluate_batch(selector, data.dev_qs, cfg.eval_batch)
        gen = summarise_picks(np.array([e["generation_pick"] for e in evs], dtype=int), dev_c, 4)
        sc = dev_row(evs, dev_r, dev_c)
        dev.append({"step": step, "epoch": step / steps_per_epoch, "visits": min(step * cfg.prompts_per_step, N *
                                                                                  cfg.epochs),
                    **gen, "scoring_accuracy": sc["accuracy"], "J": sc["J"]})
        if max(dev, key=lambda d: (d["accuracy"], -d["step"])) is dev[-1]:
            best = (step, [p.detach().cpu().clone() for p in trainable])
        log(f"grpo dev step {step}: generation {gen['accuracy']:.1f}%, format failures {gen['format_failures']:.1f}%")
        selector.model.train()

    class DevEval(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step in at and all(d["step"] != state.global_step for d in dev):
                evaluate(state.global_step)

    class Deadline(TrainerCallback):
        def __init__(self):
            self.t0, self.stopped = time.time(), False

        def on_step_end(self, args, state, control, **kw):
            if limit and time.time() - self.t0 > limit and state.global_step < max_steps:
                self.stopped = control.should_training_stop = True
                if all(d["step"] != state.global_step for d in dev):
                    evaluate(state.global_step)
                log(f"grpo stopped by its time guard ({limit:.0f} s) after step {state.global_step} of {max_steps}")
            return control

    class Recount(TrainerCallback):
        """The exact dead-group fraction of each step's groups (beside TRL's frac_reward_zero_std)."""

        def __init__(self):
            self.seen = 0

        def on_log(self, args, state, control, logs=None, **kw):
            new = len(reward.groups) - self.seen
            if logs is None or "train_runtime" in logs or not new:
                return control
            self.seen = len(reward.groups)
            logs["dead_fraction_recount"] = reward.dead_fraction(last=new)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1]["dead_fraction_recount"] = logs["dead_fraction_recount"]
            return control

    evaluate(0)
    tok = selector.tokenizer
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    args = trl.GRPOConfig(output_dir=str(out / "trainer"), learning_rate=cfg.grpo_lr, lr_scheduler_type="cosine",
                          warmup_steps=0, per_device_train_batch_size=cfg.G * micro,
                          gradient_accumulation_steps=cfg.prompts_per_step // micro, num_generations=cfg.G,
                          max_completion_length=cfg.max_completion_length, temperature=1.0, top_p=1.0, beta=0.0,
                          loss_type="grpo", scale_rewards="group", max_steps=max_steps, logging_steps=1,
                          save_strategy="no", report_to=[], use_cpu=device == "cpu", bf16=bf16, seed=cfg.seed,
                          data_seed=cfg.seed, disable_tqdm=True, remove_unused_columns=False,
                          dataloader_num_workers=0, log_completions=False, gradient_checkpointing=False)
    selector.model.train()
    deadline = Deadline()
    trainer = trl.GRPOTrainer(model=selector.model, reward_funcs=[reward], args=args,
                              train_dataset=grpo_dataset(selector, data.train_qs), processing_class=tok,
                              callbacks=[DevEval(), Recount(), deadline])
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # TRL's per-step dicts; the manifest's ``steps`` keeps them
    trainer.train()
    logs = [{k: v for k, v in h.items() if isinstance(v, (int, float, str, bool))}
            for h in trainer.state.log_history if "frac_reward_zero_std" in h]
    with torch.no_grad():
        for p, v in zip(trainable, best[1]):
            p.copy_(v.to(p.device))
    shutil.rmtree(out / "trainer", ignore_errors=True)
    return {"steps": logs, "dev": dev, "best_step": best[0],
            "reward_evaluations": trainer.state.global_step * cfg.prompts_per_step * cfg.G,
            "stopped_early": deadline.stopped, "visits_done": min(trainer.state.global_step * cfg.prompts_per_step,
                                                                  N * cfg.epochs),
            "config": {"objective": "grpo", "lr": cfg.grpo_lr, "G": cfg.G, "prompts_per_step": cfg.prompts_per_step,
                       "max_steps": max_steps, "epochs": cfg.epochs, "temperature": 1.0,
                       "max_completion_length": cfg.max_completion_length, "loss_type": "grpo", "lora_r": 16,
                       "lora_alpha": 32, "seed": cfg.seed, "eval_steps": sorted(at), "select_by": "generation"}}


def _write_run(selector, name: str, result: dict, data: _Data, cfg: GPULMConfig, seconds: float, device: str,
               bf16: bool, log) -> Path:
    """Save the kept adapter, manifest, setup and the test evaluations of one run; tar the folder."""
    import pandas as pd
    import torch

    from ..env import package_versions
    from ..hf import adapter_hash, portable_adapter
    from ..io import atomic_path, write_json
    from ..selectors.lm import SELECTOR_BASE
    from .run import run_digest

    out = Path(cfg.out)
    rel = f"lm/{name}"
    folder = out / rel
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    selector.model.save_pretrained(str(folder / "adapter"))
    portable_adapter(folder / "adapter", SELECTOR_BASE)
    config = result.pop("config")
    setup = {"bench_dir": cfg.bench_dir, "table_dir": cfg.table_dir, "out_dir": str(folder), "n_train":
             len(data.train_qs), "n_dev": len(data.dev_qs), "keep": cfg.keep, "threads": 0,
             "init_adapter": cfg.init_adapter, "described": False, "merge_init": False}
    write_json(folder / "setup.json", {"objective": config["objective"], "keep": cfg.keep,
                                       "init_adapter": cfg.init_adapter, "n_train": len(data.train_qs),
                                       "n_dev": len(data.dev_qs), "table_reasoner": data.train_t.manifest["reasoner"]},
               indent=1)
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    manifest = {"objective": config["objective"], "setup": setup, "config": config,
                "table": {"reasoner": data.train_t.manifest["reasoner"],
                          "questions_sha256": data.train_t.manifest.get("questions_sha256")},
                "n_train": len(data.train_qs), "n_dev": len(data.dev_qs), "train_seconds": round(seconds, 1),
                "adapter_hash": adapter_hash(folder / "adapter"), "torch": torch.__version__,
                "versions": package_versions(),
                "gpu_run": {"device": gpu, "dtype": "bf16" if bf16 else "fp32",
                            "visits": len(data.train_qs) * cfg.epochs, "config": asdict(cfg)}, **result}
    write_json(folder / "manifest.json", manifest, indent=1, default=float)
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
    with tarfile.open(out / f"{name}.tar", "w") as tar:
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

    from ..io import write_json

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "gpu-lm-log.txt"
    t_start = time.time()

    def log(msg: str) -> None:
        line = f"[{time.time() - t_start:6.0f} s] {msg}"
        print(line, flush=True)
        with open(log_path, "a") as fh:
            fh.write(line + "\n")

    torch.manual_seed(cfg.seed)
    device, bf16 = pick_device(cfg)
    if cfg.weights == "":
        from ..reasoners.causal_lm import smollm2_path

        folder, name = smollm2_path()
        cfg.weights = str(Path(folder) / name)
    lm = load_base(cfg.weights, device, bf16)
    data = _Data(cfg)
    log(f"loaded the base model on {device} ({'bf16' if bf16 else 'fp32'}); {len(data.train_qs)} training, "
        f"{len(data.dev_qs)} dev questions, test {', '.join(f'{s} {len(q)}' for s, q in data.test.items())}")
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
        if method == "fgpo":  # with the format term: the row "FGPO + format term" (chosen key fgpo-format)
            key = "fgpo-format" if cfg.format_weight else "fgpo"
            result, name = _train_fgpo(selector, data, cfg, device, bf16, log, limit), f"{key}-lr{cfg.fgpo_lr:g}"
        elif method == "grpo":
            result, name = _train_grpo(selector, data, cfg, device, bf16, out, log, limit), "grpo"
        else:
            raise ValueError(f"methods are fgpo and grpo, got {method!r}")
        seconds = time.time() - t0
        log(f"{method} trained in {seconds:.0f} s, kept step {result['best_step']}")
        _write_run(selector, name, result, data, cfg, seconds, device, bf16, log)
        chosen["fgpo-format" if method == "fgpo" and cfg.format_weight else method] = f"lm/{name}"
        write_json(out / "chosen.json", chosen, indent=1)
        del selector
        if device == "cuda":
            torch.cuda.empty_cache()
    log(f"done in {time.time() - t_start:.0f} s")
    return chosen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fgpo_core.experiments.gpu_lm", description=__doc__.split("\n\n")[0])
    for f in fields(GPULMConfig):
        kind = {"int": int, "float": float}.get(str(f.type), str)
        ap.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default)
    args = ap.parse_args(argv)
    cfg = GPULMConfig(**{f.name: getattr(args, f.name) for f in fields(GPULMConfig)})
    run_gpu_lm(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
