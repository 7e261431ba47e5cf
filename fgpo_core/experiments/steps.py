"""Steps shared by the LM selector's experiments (``fgpo lm``, :mod:`.lm_grid`; ``fgpo lm-companion``,
:mod:`.lm_companion`): train a run unless its folder already holds it (:func:`ensure_trained`),
optionally in a process of its own (:func:`in_child`), and a ci-sized workspace of benchmark and
tables for their miniatures (:func:`small_workspace`)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from .run import RunSetup, config_differences, run_manifest, train_run

__all__ = ["ensure_trained", "in_child", "small_workspace"]


def in_child(fn, *args) -> None:
    """Run ``fn(*args)`` in a fresh (spawned) Python process and wait for it. Each training
    run of an experiment gets one, so the memory a trainer holds on to is returned when it ends
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
