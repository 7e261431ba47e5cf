"""transformers and peft plumbing shared by the reasoners, the selectors and the expert tool:
quiet loading, the key-value cache's keyword, mean pooling, and committable adapters."""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
from pathlib import Path

from .io import write_text

__all__ = [
    "quiet_transformers",
    "cache_keyword",
    "cache_of",
    "mean_pool",
    "portable_adapter",
    "adapter_hash",
    "ADAPTER_WEIGHT_FILES",
]

ADAPTER_WEIGHT_FILES = ("adapter_model.safetensors", "head.pt", "reader.json")
"""The files whose bytes identify a saved adapter (those present, in this order)."""


def quiet_transformers() -> None:
    """Silence transformers' and huggingface_hub's loading progress bars and info logs."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass


def cache_keyword(model) -> str:
    """The keyword under which the (possibly peft-wrapped) model's forward takes a key-value
    cache: transformers renamed ``past_key_values`` to ``cache``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def cache_of(out):
    """The key-value cache of a forward pass's output, under either name."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def mean_pool(hidden, attention_mask):
    """Mean of the hidden states ``[B, T, d]`` over the unpadded positions of ``attention_mask``
    ``[B, T]``: ``[B, d]``."""
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1)


def portable_adapter(out_dir, base: str) -> None:
    """Make a saved peft adapter committable: drop peft's generated model card (and a trainer's
    copy of a reference adapter), record the base model by name instead of this machine's path,
    and write the config with sorted keys and lists so that equal adapters give equal files."""
    out_dir = Path(out_dir)
    (out_dir / "README.md").unlink(missing_ok=True)
    shutil.rmtree(out_dir / "ref", ignore_errors=True)
    cfg_file = out_dir / "adapter_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["base_model_name_or_path"] = base
    if isinstance(cfg.get("target_modules"), list):
        cfg["target_modules"] = sorted(cfg["target_modules"])
    write_text(cfg_file, json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def adapter_hash(adapter_dir) -> str:
    """SHA-256 (16 hex) over the adapter's weight files (:data:`ADAPTER_WEIGHT_FILES` that are
    present, in that order): the same weights give the same hash whatever the config's layout."""
    d = Path(adapter_dir)
    files = [d / name for name in ADAPTER_WEIGHT_FILES if (d / name).exists()]
    if not files:
        raise FileNotFoundError(f"{d} holds no adapter weights ({', '.join(ADAPTER_WEIGHT_FILES)})")
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]
