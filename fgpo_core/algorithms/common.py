"""What every training loop of the library shares: its trainable parameters and atomic, resumable
checkpoints (its own, and TRL trainers'); the cosine learning-rate schedule is
:func:`fgpo_core.core.schedules.cosine_schedule`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..io import CorruptResult, atomic_file

__all__ = [
    "trainable_parameters",
    "save_checkpoint",
    "load_checkpoint",
    "record_config",
    "trainer_resume",
    "resumed_step",
    "resume_checkpoint",
]


def trainable_parameters(model) -> list[torch.nn.Parameter]:
    """The parameters that receive gradients; refuses a model with none (a frozen base
    without its LoRA adapter)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters: wrap it with add_lora first")
    return params


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
    """Write ``state`` (tensors, optimiser and scheduler states, plain logs) atomically; written
    through a file object, so equal states give equal bytes (a path would put the temporary
    file's random name inside the archive)."""
    with atomic_file(path) as fh:
        torch.save(_plain(state), fh)
    return Path(path)


class ForeignCheckpoint(CorruptResult):
    """A checkpoint file holding objects other than tensors and plain Python (refused unread)."""


def load_checkpoint(path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`, tensors and plain Python only
    (``weights_only=True``: no code is unpickled). A file holding anything else (a hostile pickle)
    or a torn one is a one-line :class:`~fgpo_core.io.CorruptResult`."""
    import pickle
    import zipfile

    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError:
        raise ForeignCheckpoint(
            f"{path} holds objects other than tensors and plain Python: refused (weights_only); "
            "not a checkpoint this library wrote"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise CorruptResult(f"{path} is torn or not a checkpoint ({reason})") from None


def resume_checkpoint(path) -> dict | None:
    """The checkpoint a run resumes from: None where there is none, or where it is torn (it is
    moved aside to ``<name>.torn`` and the run starts that part again, instead of failing at
    every restart); a checkpoint holding foreign objects is refused (:func:`load_checkpoint`)."""
    import sys

    path = Path(path)
    if not path.exists():
        return None
    try:
        return load_checkpoint(path)
    except CorruptResult as exc:
        if isinstance(exc, ForeignCheckpoint):
            raise
        path.replace(path.with_name(path.name + ".torn"))
        print(f"warning: {exc}; moved aside to {path.name}.torn, starting again", file=sys.stderr)
        return None


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
    have = json.loads(path.read_text()) if path.exists() else want
    if hasattr(type(config), "from_record"):  # a config that reads its older records (renamed, nested fields)
        have = json.loads(json.dumps(asdict(type(config).from_record(have)), default=str))
    if have != want:
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
    state = resume_checkpoint(out / "last.pt")
    if state is not None:
        return int(state.get("step", len(state.get("steps", []))))  # per-epoch checkpoints: their logged steps
    return 0
