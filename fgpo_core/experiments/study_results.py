"""A finished study read back (:func:`load_study`, :class:`Study`: its manifest and frames) and
trimmed (:func:`keep_q`); :func:`fgpo_core.experiments.study.run_study` writes it, and
:mod:`fgpo_core.experiments.study` re-exports every name here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import FILES_KEY, atomic_path, read_manifest, verify_files, with_digests, write_json

__all__ = ["Q_KEPT_MAX_TOOLS", "Study", "load_study", "keep_q"]

Q_KEPT_MAX_TOOLS = 5
"""A study keeps each head's whole policy on the main suite (``q.parquet``) up to this many tools;
beyond, only its picks."""


@dataclass
class Study:
    """A finished study read back: its manifest and frames."""

    manifest: dict
    picks: pd.DataFrame
    q: pd.DataFrame | None
    """Each head's policy on the main suite (None for libraries beyond :data:`Q_KEPT_MAX_TOOLS` tools)."""
    curves: pd.DataFrame
    dev: pd.DataFrame
    sweep: pd.DataFrame
    checkpoints: pd.DataFrame | None = None
    """Accuracy and tools per checkpoint and test suite (a study run with ``checkpoints``)."""

    def q_matrix(self, method: str, seed: int) -> np.ndarray:
        """The policy ``[N, 2**n]`` of one chosen head on the main suite, in question order."""
        if self.q is None:
            raise ValueError(f"this study kept its heads' picks only (a library of more than {Q_KEPT_MAX_TOOLS} tools)")
        f = self.q[(self.q.method == method) & (self.q.seed == seed)]
        return f[[c for c in f if c.startswith("q_")]].to_numpy(dtype=float)

    def pick_matrix(self, suite: str, method: str) -> tuple[list[str], np.ndarray]:
        """The question ids of ``suite`` and the picks ``[seeds, N]`` of ``method``."""
        f = self.picks[(self.picks.suite == suite) & (self.picks.method == method)]
        seeds = sorted(f.seed.unique())
        ids = f[f.seed == seeds[0]].question_id.tolist()
        return ids, np.stack([f[f.seed == s].set_index("question_id").loc[ids, "mask"].to_numpy() for s in seeds])


def load_study(out_dir) -> Study:
    """A study written by :func:`run_study`."""
    out = Path(out_dir)
    if not (out / "manifest.json").exists():
        raise FileNotFoundError(f"{out} holds no finished study: run `fgpo study --out-dir {out}`")
    manifest = read_manifest(out / "manifest.json", "study manifest")
    verify_files(out, manifest, "study", redo=f"run `fgpo study --out-dir {out}` again (its finished parts are reused)")
    frames = {n: pd.read_parquet(out / f"{n}.parquet") for n in ("picks", "curves", "dev", "sweep")}
    frames["q"] = pd.read_parquet(out / "q.parquet") if (out / "q.parquet").exists() else None
    if (out / "checkpoints.parquet").exists():
        frames["checkpoints"] = pd.read_parquet(out / "checkpoints.parquet")
    return Study(manifest, **frames)


def keep_q(out_dir, methods: list[str]) -> None:
    """Keep in a finished study's ``q.parquet`` only the policies of ``methods`` (none: the file
    goes), and record them in the manifest's ``q_methods``: a study's policies are its largest
    file, and a chapter reads few of them. Picks, curves and every score are untouched."""
    out = Path(out_dir)
    manifest = json.loads((out / "manifest.json").read_text())
    if (out / "q.parquet").exists():
        q = pd.read_parquet(out / "q.parquet")
        unknown = sorted(set(methods) - set(q.method))
        if unknown:
            raise ValueError(f"{out} holds no policy of {', '.join(unknown)}")
        if methods:
            with atomic_path(out / "q.parquet") as tmp:
                q[q.method.isin(methods)].reset_index(drop=True).to_parquet(tmp, index=False)
        else:
            (out / "q.parquet").unlink()
    manifest |= {"q_methods": list(methods)}
    if FILES_KEY in manifest:  # the digests follow q.parquet (a study written before them stays unverified)
        manifest = with_digests(manifest, out, [n for n in manifest[FILES_KEY] if (out / n).exists()])
    write_json(out / "manifest.json", manifest)
