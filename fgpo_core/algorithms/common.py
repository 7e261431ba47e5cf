"""What every training loop of the library shares: its trainable parameters, the cosine
learning-rate schedule and atomic, resumable checkpoints (its own, and TRL trainers')."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from ..io import atomic_path

__all__ = ["trainable_parameters", "cosine_schedule", "save_checkpoint", "load_checkpoint", "record_config",
           "trainer_resume", "resumed_step"]


def trainable_parameters(model) -> list[torch.nn.Parameter]:
    """The parameters that receive gradients; refuses a model with none (a frozen base
    without its LoRA adapter)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters: wrap it with add_lora first")
    return params


def cosine_schedule(opt: torch.optim.Optimizer, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Cosine decay from the optimiser's learning rate to zero over ``total_steps`` (no warm-up),
    as the paper trains (Table 6)."""
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps)))


def _plain(obj):
    """NumPy scalars in logs become Python numbers, so a checkpoint loads with ``weights_only``."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v) for v in obj)
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def save_checkpoint(path, state: dict) -> Path:
    """Write ``state`` (tensors, optimiser and scheduler states, plain logs) atomically."""
    with atomic_path(path) as tmp:
        torch.save(_plain(state), tmp)
    return Path(path)


def load_checkpoint(path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`, tensors and plain Python only
    (``weights_only=True``: no code is unpickled)."""
    return torch.load(path, weights_only=True)


def record_config(out_dir, config) -> None:
    """Record the dataclass ``config`` of a run in ``out_dir/config.json``; a folder holding a run
    of another configuration is refused, so a restarted run never mixes two."""
    import json
    from dataclasses import asdict

    from ..io import write_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    want = json.loads(json.dumps(asdict(config), default=str))
    path = out / "config.json"
    if path.exists() and json.loads(path.read_text()) != want:
        raise ValueError(f"{out} holds a run with another configuration; use another folder or delete it")
    write_json(path, want)


def trainer_resume(out_dir, config) -> str | None:
    """Where a TRL trainer writing ``checkpoint-<step>`` folders into ``out_dir`` resumes: the
    last checkpoint there, or None to start, after :func:`record_config`."""
    record_config(out_dir, config)
    last = sorted(Path(out_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    return str(last[-1]) if last else None


def resumed_step(out_dir) -> int:
    """The optimiser step a run's checkpoints in ``out_dir`` have reached before it (re)starts: the
    last TRL ``checkpoint-<step>`` folder, or the step of the library's own ``last.pt``
    (:func:`fgpo_core.algorithms.fgpo.train_fgpo`); 0 where the run starts afresh. A resumed
    process times only the steps after it."""
    out = Path(out_dir)
    trl = [int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if p.name.split("-")[1].isdigit()]
    if trl:
        return max(trl)
    if (out / "last.pt").exists():
        state = load_checkpoint(out / "last.pt")
        return int(state.get("step", len(state.get("steps", []))))  # per-epoch checkpoints: their logged steps
    return 0
