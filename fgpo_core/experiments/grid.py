"""The grid of the chapter "FGPO versus GRPO" (``fgpo runs``): every selector trained and
evaluated, each run resumable, each training run in its own process; and the same grid in
miniature for the ``ci`` profile."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from .run import EVAL_SUITES, PROMPTED, RunSetup, best_dev, config_differences, evaluate_run, run_manifest, train_run

__all__ = ["GridConfig", "run_grid", "small_grid", "small_workspace", "in_child", "ensure_trained"]


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


def ensure_trained(objective: str, setup: RunSetup, config, progress: bool = True, isolate: bool = False) -> Path:
    """Train one run unless its folder already holds it finished; returns the folder. A finished
    run of another configuration or setup is refused (delete the folder to train it again), and
    an unfinished one resumes from its checkpoints. With ``isolate`` the training has its own
    process (:func:`in_child`)."""
    folder = Path(setup.out_dir)
    if (folder / "manifest.json").exists():
        done = run_manifest(folder)
        want = asdict(setup)
        recorded_before = {"init_adapter": "", "described": False, "merge_init": False}  # setup fields added later
        diff = config_differences(config, done["config"]) + [
            f"setup.{k}" for k in ("bench_dir", "table_dir", "n_train", "n_dev", "keep", "init_adapter", "described",
                                   "merge_init")
            if str(done.get("setup", {}).get(k, recorded_before.get(k))) != str(want[k])]
        if diff:
            raise ValueError(f"{folder} holds a finished run with another configuration "
                             f"({', '.join(diff)}); delete the folder to train it again")
    elif isolate:
        in_child(train_run, objective, setup, config, progress)
    else:
        train_run(objective, setup, config, progress=progress)
    return folder


def run_grid(cfg: GridConfig, progress: bool = True, isolate: bool = False) -> dict[str, Path]:
    """Train and evaluate every selector of the chapter; returns the run folders by method.
    With ``isolate`` (``fgpo runs`` sets it) each training run has its own process."""
    from ..algorithms.grpo import GRPOConfig
    from ..algorithms.imitation import ImitationConfig
    from ..algorithms.fgpo import FGPOConfig

    root = Path(cfg.out_dir)
    root.mkdir(parents=True, exist_ok=True)

    def setup(name: str) -> RunSetup:
        return RunSetup(cfg.bench_dir, cfg.table_dir, str(root / name), cfg.n_train, cfg.n_dev, cfg.keep,
                        cfg.threads)

    def train(objective: str, name: str, config) -> Path:
        return ensure_trained(objective, setup(name), config, progress, isolate)

    def evaluate(run: str, folder: Path, cross: bool = True) -> None:
        suites = EVAL_SUITES if cross else EVAL_SUITES[:1]
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
    runs["GRPO"] = train("grpo", "grpo", GRPOConfig(lr=lr, epochs=cfg.epochs, seed=cfg.seed,
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


def small_workspace(workdir, reader_dir, sizes: dict[str, int], seed: int = 0) -> dict:
    """A ci-sized benchmark under ``workdir`` and the training reader's merged tables of the first
    ``sizes[split]`` questions of each split (and the zero-shot MiniLM reader's of core, for a
    transfer cell): ``bench_dir``, ``table_dir``, ``other_table_dirs`` and the ``runs_dir`` to fill."""
    from ..genomics.benchmarks import build_all, load_benchmark, tool_library_for
    from ..reasoners import get_reasoner
    from ..table.build import build_table, merge_table

    root = Path(workdir)
    bench, tables, other, runs = root / "bench", root / "tables" / "reader", root / "tables" / "minilm", root / "runs"
    build_all(bench, "ci", seed, progress=False)
    _, suites = load_benchmark(bench)
    library = tool_library_for(bench)
    reader = get_reasoner(f"reader:{reader_dir}")
    for split, n in sizes.items():
        build_table(suites[split][:n], library, reader, tables / split, seed=seed, progress=False)
        merge_table(tables / split)
    build_table(suites["core"][:sizes["core"]], library, get_reasoner("minilm"), other / "core", seed=seed,
                progress=False)
    merge_table(other / "core")
    return {"bench_dir": str(bench), "table_dir": str(tables), "other_table_dirs": str(other), "runs_dir": str(runs)}


def small_grid(workdir, reader_dir, seed: int = 0, n_train: int = 4, n_dev: int = 4, n_eval: int = 4) -> dict:
    """The chapter's whole experiment in miniature (the ``ci`` profile, minutes on 2 cores): a
    ci-sized benchmark, the training reader's tables on the questions used (and the zero-shot
    MiniLM reader's on the main suite, for a transfer cell), then :func:`run_grid` at toy scale.
    Returns the folders: ``bench_dir``, ``table_dir``, ``other_table_dirs``, ``runs_dir``."""
    ws = small_workspace(workdir, reader_dir, {"train": n_train, "dev": n_dev, "core": n_eval, "microbe": n_eval,
                                               "mosaic": n_eval}, seed)
    run_grid(GridConfig(out_dir=ws["runs_dir"], bench_dir=ws["bench_dir"], table_dir=ws["table_dir"], n_train=n_train,
                        n_dev=n_dev, epochs=1, lrs="1e-3", eval_core=n_eval, eval_cross=n_eval, dpo_betas="",
                        eval_every=1, seed=seed), progress=False)
    return ws
