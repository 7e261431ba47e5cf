"""Reading merged reward tables: one folder (``table.parquet`` + ``manifest.json``) per suite.

:func:`load_table` returns one :class:`~fgpo_core.table.reward_table.RewardTable` that knows
its question ids, its input tokens and predictions, the rewards stored at build time and its
manifest; :func:`load_tables` reads every suite of one or several reasoners.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..genomics.benchmarks.schema import LETTERS
from ..io import read_manifest, verify_files
from .files import MANIFEST, TABLE, ManifestMismatch, check_table_manifest
from .reward_table import RewardTable

__all__ = ["MANIFEST", "TABLE", "ManifestMismatch", "load_table", "load_tables", "has_table", "check_table_manifest"]


def _fused_format(folder: Path) -> str | None:
    """The format of a folder whose table is fused from block scores (a view or a block-score
    folder, :mod:`fgpo_core.table.fusion`), else None."""
    path = folder / MANIFEST
    if not path.exists() or (folder / TABLE).exists():
        return None
    try:
        fmt = json.loads(path.read_text()).get("format")
    except (json.JSONDecodeError, AttributeError):
        return None
    return fmt if fmt in ("fused-view-1", "blocks-1") else None


def has_table(folder) -> bool:
    """Whether ``folder`` holds a merged table (or a table fused from block scores)."""
    folder = Path(folder)
    if (folder / TABLE).exists() and (folder / MANIFEST).exists():
        return True
    fmt = _fused_format(folder)
    return fmt == "fused-view-1" or (fmt == "blocks-1" and (folder / "blocks.parquet").exists())


def load_table(out_dir, expect: dict | None = None) -> RewardTable:
    """The merged table of ``out_dir``. With ``expect`` (a manifest, or some of its fields),
    a table made under other inputs is refused."""
    out = Path(out_dir)
    if not has_table(out):
        raise FileNotFoundError(
            f"{out} holds no merged reward table ({TABLE} and {MANIFEST}); "
            "build it with `fgpo table build` and merge it"
        )
    fmt = _fused_format(out)
    if fmt is not None:  # a large library's table, fused from the reader's block scores
        from .fusion import load_blocks, load_view

        table = load_view(out) if fmt == "fused-view-1" else load_blocks(out).table()
        if expect is not None:
            diff = sorted(k for k, v in expect.items() if table.manifest.get(k) != v)
            if diff:
                raise ManifestMismatch(f"{out} does not match the expected inputs ({', '.join(diff)})")
        return table
    manifest = read_manifest(out / MANIFEST, "table manifest")
    check_table_manifest(manifest, out / MANIFEST)
    verify_files(out, manifest, "table", redo=f"merge it again (`fgpo table merge {out}`) or build it again")
    if expect is not None:
        diff = sorted(k for k, v in expect.items() if manifest.get(k) != v)
        if diff:
            raise ManifestMismatch(f"{out} does not match the expected inputs ({', '.join(diff)})")
    if not (out / TABLE).is_file():  # a folder would be read as a dataset of other files; a FIFO would block
        raise ValueError(f"{out / TABLE} is not a file: not a merged reward table; merge or build it again")
    df = pd.read_parquet(out / TABLE)
    A = 1 << manifest["n_tools"]
    n = manifest.get("n_questions")
    if isinstance(n, int) and not isinstance(n, bool) and len(df) != n * A:
        raise ValueError(f"{out / TABLE} holds {len(df) / A:g} questions, its manifest {n}: merge or build it again")
    missing = [c for c in ("mask", "question_id", "family", "correct", "prompt_tokens", "prediction") if c not in df]
    if missing:
        raise ValueError(f"{out / TABLE} has no column {missing[0]!r}: not a reward table")
    if len(df) % A or not (df["mask"].to_numpy().reshape(-1, A) == np.arange(A)).all():
        raise ValueError(f"{out / TABLE} is not {A} rows per question in mask order")
    grid = lambda col: df[col].to_numpy().reshape(-1, A)  # noqa: E731
    built = {k: grid(f"reward_{k}") for k in ("eq1", "differential") if f"reward_{k}" in df}
    return RewardTable(
        grid("correct"),
        manifest["n_tools"],
        df["family"].to_numpy()[::A],
        tuple(n for n, _ in manifest["tools"]),
        manifest["lambda"],
        question_ids=df["question_id"].to_numpy()[::A],
        tokens=grid("prompt_tokens"),
        predictions=grid("prediction"),
        letter_logprobs=np.stack([grid(f"logprob_{L}") for L in LETTERS], -1),
        built_rewards=built,
        manifest=manifest,
    )


def load_tables(
    dirs: Mapping[str, str], suites: Sequence[str], expect: Mapping[str, dict] | None = None
) -> dict[str, dict[str, RewardTable]]:
    """``{label: {suite: table}}`` for each reasoner's folder of suite tables (``dirs`` maps a
    label to a folder with one sub-folder per suite); suites a reasoner lacks are left out.
    ``expect`` may give, per label, manifest fields its tables must match."""
    out = {}
    for label, d in dirs.items():
        tabs = {s: load_table(Path(d) / s, (expect or {}).get(label)) for s in suites if has_table(Path(d) / s)}
        if tabs:
            out[label] = tabs
    return out
