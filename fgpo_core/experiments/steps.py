"""Steps shared by the LM selector's experiments (``fgpo lm``, :mod:`.lm_grid`; ``fgpo lm-companion``,
:mod:`.lm_companion`): train a run unless its folder already holds it (:func:`ensure_trained`),
optionally in a process of its own (:func:`in_child`)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from ..io import CorruptResult
from .run import RunSetup, config_differences, run_manifest, train_run

__all__ = ["ensure_trained", "in_child"]


def in_child(fn, *args) -> None:
    """Run ``fn(*args)`` in a fresh (spawned) Python process and wait for it. Each training
    run of an experiment gets one, so the memory a trainer holds on to is returned when it ends
    (in one process, GRPO's and then DPO's exceeded 24 GB). Raises if the child fails."""
    import multiprocessing as mp

    proc = mp.get_context("spawn").Process(target=fn, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(
            f"{getattr(fn, '__name__', fn)}{args[:1]} failed in its own process "
            f"(exit code {proc.exitcode}); its error is printed above"
        )


def ensure_trained(objective: str, setup: RunSetup, config, progress: bool = True, isolate: bool = False) -> Path:
    """Train one run unless its folder already holds it finished; returns the folder. A finished
    run of another configuration or setup is refused (delete the folder to train it again), and
    an unfinished one resumes from its checkpoints. With ``isolate`` the training has its own
    process (:func:`in_child`)."""
    folder = Path(setup.out_dir)
    done = None
    if (folder / "manifest.json").exists():
        try:
            done = run_manifest(folder)
        except CorruptResult as exc:  # its adapter torn or altered since: trained again (from its checkpoints)
            print(f"warning: {exc}; training it again", file=sys.stderr)
            (folder / "manifest.json").replace(folder / "manifest.json.torn")
    if done is not None:
        want = asdict(setup)
        recorded_before = {"init_adapter": "", "described": False, "merge_init": False}  # setup fields added later
        diff = config_differences(config, done["config"]) + [
            f"setup.{k}"
            for k in ("bench_dir", "table_dir", "n_train", "n_dev", "keep", "init_adapter", "described", "merge_init")
            if str(done.get("setup", {}).get(k, recorded_before.get(k))) != str(want[k])
        ]
        if diff:
            raise ValueError(
                f"{folder} holds a finished run with another configuration "
                f"({', '.join(diff)}); delete the folder to train it again"
            )
    elif isolate:
        in_child(train_run, objective, setup, config, progress)
    else:
        train_run(objective, setup, config, progress=progress)
    return folder
