"""Bring run folders written by earlier versions of the library up to the current layout.

Version 1 evaluations named their columns ``score_<mask>`` and ``pgen_<mask>`` and identified the
adapter by a hash over every file of its folder (the config included, whose ``target_modules``
peft writes in set order, so equal weights could hash differently). The current layout names
them ``candidate_score_<mask>`` and ``p_gen_<mask>`` and hashes the weights only
(:func:`fgpo_core.hf.adapter_hash`). :func:`migrate_runs` rewrites each run's evaluations,
manifest and adapter config in place (atomically); the picks, scores and weights are unchanged,
and running it again changes nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..hf import adapter_hash
from ..io import atomic_path, write_json, write_text

__all__ = ["migrate_runs"]


def _rename(col: str) -> str:
    if col.startswith("score_") and col[6:].isdigit():
        return "candidate_" + col
    if col.startswith("pgen_") and col[5:].isdigit():
        return "p_gen_" + col[5:]
    return col


def migrate_runs(root) -> list[str]:
    """Migrate every run folder under ``root``; returns the files rewritten."""
    changed = []
    for folder in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        adapter = folder / "adapter"
        digest = adapter_hash(adapter) if (adapter / "adapter_model.safetensors").exists() else None
        cfg_file = adapter / "adapter_config.json"
        if cfg_file.exists():
            cfg = json.loads(cfg_file.read_text())
            if isinstance(cfg.get("target_modules"), list) and cfg["target_modules"] != sorted(cfg["target_modules"]):
                cfg["target_modules"] = sorted(cfg["target_modules"])
                write_text(cfg_file, json.dumps(cfg, indent=2, sort_keys=True) + "\n")
                changed.append(str(cfg_file))
        man_file = folder / "manifest.json"
        if digest and man_file.exists():
            man = json.loads(man_file.read_text())
            if man.get("adapter_hash") != digest:
                man["adapter_hash"] = digest
                write_json(man_file, man, indent=1, default=float)
                changed.append(str(man_file))
        for path in sorted((folder / "eval").glob("*.parquet")):
            df = pd.read_parquet(path)
            renamed = df.rename(columns=_rename)
            attrs = dict(df.attrs)
            if digest and attrs.get("adapter") not in (None, digest) and not attrs["adapter"].startswith(("untrained",
                                                                                                          "tools-")):
                attrs["adapter"] = digest
            if list(renamed.columns) != list(df.columns) or attrs != df.attrs:
                renamed.attrs = attrs
                with atomic_path(path) as tmp:
                    renamed.to_parquet(tmp, index=False)
                changed.append(str(path))
    return changed
