"""Runs compared at equal visits and at equal time: an LM run's dev-evaluation snapshot made into a
run folder of its own, and the step and dev logs of a run that may not have finished.

FGPO and GRPO runs trained with ``snapshots`` keep the trainable weights of every dev evaluation
(``ckpt/step-<N>.pt``, half precision). :func:`snapshot_run` writes one of them out as a run
folder (``adapter/`` and a manifest naming where it came from), which ``fgpo evaluate`` and every
reader of runs read like any finished run; :func:`run_logs` reads a run's step and dev logs
wherever they are (a finished run's manifest, FGPO's ``last.pt``, GRPO's ``dev.json`` and its
trainer's last checkpoint), so a long run can be read while it trains.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from ..io import atomic_dir, read_manifest, with_digests, write_json

__all__ = ["snapshot_steps", "run_logs", "compute_at", "snapshot_run"]


def snapshot_steps(run_dir) -> list[int]:
    """The steps at which ``run_dir`` kept a snapshot (its dev evaluations), ascending."""
    ckpt = Path(run_dir) / "ckpt"
    return sorted(int(p.stem.split("-", 1)[1]) for p in ckpt.glob("step-*.pt") if p.stem.split("-", 1)[1].isdigit())


def _grpo_history(ckpt: Path) -> list[dict]:
    states = sorted(ckpt.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not states:
        return []
    hist = json.loads(states[-1].read_text())["log_history"]
    return [h for h in hist if "train_runtime" not in h]


def run_logs(run_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(steps, dev)`` of an FGPO or GRPO run: one row per optimiser step (with ``seconds`` and
    ``cpu_seconds`` where the run timed them) and one per dev evaluation, from its manifest when
    it finished, else from its checkpoints."""
    from ..algorithms.common import load_checkpoint

    run = Path(run_dir)
    if (run / "manifest.json").exists():
        from .run import run_manifest

        m = run_manifest(run)
        return pd.DataFrame(m.get("steps", [])), pd.DataFrame(m.get("dev", []))
    ckpt = run / "ckpt"
    if (ckpt / "last.pt").exists():  # FGPO
        state = load_checkpoint(ckpt / "last.pt")
        return pd.DataFrame(state["steps"]), pd.DataFrame(state["dev"])
    if (ckpt / "dev.json").exists():  # GRPO (TRL): a step's visits are its prompts
        per_step = json.loads((ckpt / "config.json").read_text()).get("prompts_per_step", 0)
        steps = pd.DataFrame(_grpo_history(ckpt))
        if len(steps) and per_step:
            steps["visits"] = steps["step"] * per_step
        return steps, pd.DataFrame(json.loads((ckpt / "dev.json").read_text()))
    raise FileNotFoundError(f"{run} holds no run logs (no manifest.json, ckpt/last.pt or ckpt/dev.json)")


def compute_at(steps: pd.DataFrame, step: int) -> dict:
    """A run's cost up to and including ``step``: question visits and the training steps' wall and
    CPU seconds (dev evaluations not counted)."""
    done = steps[steps["step"] <= step]
    out = {
        "step": int(step),
        "seconds": float(done["seconds"].sum()) if "seconds" in done else float("nan"),
        "cpu_seconds": float(done["cpu_seconds"].sum()) if "cpu_seconds" in done else float("nan"),
    }
    if "visits" in done and len(done):
        out["visits"] = int(done["visits"].iloc[-1])
    return out


def snapshot_run(run_dir, step: int, out_dir, init_adapter: str, keep: int = 40) -> Path:
    """Write the snapshot of ``run_dir`` at ``step`` as a run folder ``out_dir`` (``adapter/`` and
    ``manifest.json``): the selector of ``init_adapter`` (the run the snapshot's run started from,
    whose adapter has the same shape) with the snapshot's weights. Its manifest records the source
    run, the step, the question visits and the seconds spent to that step, and the dev row there.
    A folder already holding this snapshot is kept as it is."""
    import torch

    from ..algorithms.common import load_checkpoint
    from ..hf import adapter_hash, portable_adapter
    from ..selectors.lm import SELECTOR_BASE
    from .run import load_run_selector

    run, out = Path(run_dir), Path(out_dir)
    path = run / "ckpt" / f"step-{int(step)}.pt"
    if not path.exists():
        have = snapshot_steps(run)
        raise FileNotFoundError(
            f"{run} kept no snapshot at step {step}; it has "
            + (", ".join(map(str, have)) if have else "none (train it with snapshots)")
        )
    source = {"run": str(run), "step": int(step), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]}
    if (out / "manifest.json").exists():
        old = read_manifest(out / "manifest.json", "snapshot manifest").get("snapshot_of", {})
        if old == source:
            return out
        raise ValueError(
            f"{out} holds another snapshot ({old.get('run')} at step {old.get('step')}); "
            "use another folder or delete it"
        )
    steps, dev = run_logs(run)
    setup = read_manifest(run / "setup.json", "run setup") if (run / "setup.json").exists() else {}
    config = None  # how the run was trained, so a snapshot is checked as its run is (fgpo choose)
    for f in (run / "ckpt" / "config.json", run / "manifest.json"):
        if config is None and f.exists():
            data = read_manifest(f, "run record")
            config = data.get("config") if f.name == "manifest.json" else data
    sel = load_run_selector(init_adapter, keep, trainable=True)
    params = [p for p in sel.model.parameters() if p.requires_grad]
    saved = load_checkpoint(path)["params"]
    if len(saved) != len(params) or any(s.shape != p.shape for s, p in zip(saved, params)):
        raise ValueError(f"{path} does not fit {init_adapter}'s adapter: give the run it started from")
    with torch.no_grad():
        for p, v in zip(params, saved):
            p.copy_(v.to(p.dtype))
    with atomic_dir(out / "adapter") as tmp:  # a fresh folder: no planted link inside is written through
        sel.model.save_pretrained(str(tmp))
        portable_adapter(tmp, SELECTOR_BASE)
    row = dev[dev["step"] == step].iloc[0].to_dict() if len(dev) and (dev["step"] == step).any() else {}
    from .run import ADAPTER_FILES

    manifest = {
        "objective": setup.get("objective", "?"),
        "snapshot_of": source,
        **({"config": config} if config else {}),
        "setup": {
            "init_adapter": str(init_adapter),
            "merge_init": False,
            "described": bool(setup.get("described", False)),
            "keep": keep,
        },
        "n_train": setup.get("n_train"),
        "n_dev": setup.get("n_dev"),
        "compute": compute_at(steps, step),
        "dev_at_step": row,
        "adapter_hash": adapter_hash(out / "adapter"),
    }
    write_json(
        out / "manifest.json",
        with_digests(manifest, out, [f for f in ADAPTER_FILES if (out / f).exists()]),
        indent=1,
        default=float,
    )
    return out
