"""The first pool's RL runs trained again, choosing their kept checkpoint on the in-domain dev.

The first language-model runs (``runs/cpu/lm``) kept the checkpoint the mixed-domain dev chose
and saved no other, so the in-domain dev could choose among their checkpoints only by training
them again (``make lm-first-indev``, into ``runs/cpu/lm-indev``): the same seed, data and
settings, evaluating the in-domain dev instead. :func:`retrained_runs` sets each retrained run
beside its first: whether training repeated step for step, which step each dev kept, and whether
the two kept the same selector (the adapter's digest), in which case every evaluation of the
first run is the retrained one's too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..experiments.run import run_digest

__all__ = ["retrained_runs", "STEP_TOLERANCE"]

STEP_TOLERANCE = 1e-6
"""The largest difference in a logged training loss or entropy at which two runs count as the same
training, step for step (float32 arithmetic on one thread or two)."""


def _steps_gap(first: dict, again: dict) -> float:
    """The largest gap between two manifests' logged losses and entropies over the steps both
    logged (infinite when they logged different steps)."""
    a, b = first.get("steps", []), again.get("steps", [])
    if not a or [s["step"] for s in a] != [s["step"] for s in b]:
        return float("inf")
    return max(abs(x[k] - y[k]) for x, y in zip(a, b) for k in ("loss", "entropy"))


def retrained_runs(first_dir, again_dir, names) -> pd.DataFrame:
    """One row per run of ``names`` (folder names under both ``first_dir`` and ``again_dir``) that
    has finished training again: ``dev_first`` and ``dev_again`` (the suite each chose on),
    ``kept_first`` and ``kept_again`` (the steps kept), ``again_kept`` (the retrained run's
    free-generation accuracy on its dev at its kept step), ``again_later`` (its best after step 0),
    ``again_start`` (at step 0), ``steps_gap`` (the largest gap in a logged loss or entropy),
    ``same_training`` (that gap within :data:`STEP_TOLERANCE`) and ``same_selector`` (the two
    kept adapters' digests agree). Runs not yet retrained are left out."""
    rows = []
    for name in names:
        first, again = Path(first_dir) / name, Path(again_dir) / name
        if not (again / "manifest.json").exists():
            continue
        m1 = json.loads((first / "manifest.json").read_text())
        m2 = json.loads((again / "manifest.json").read_text())
        dev = {int(d["step"]): d.get("gen_accuracy", d.get("accuracy")) for d in m2.get("dev", [])}
        later = [v for s, v in dev.items() if s > 0]
        gap = _steps_gap(m1, m2)
        rows.append(
            {
                "run": name,
                "dev_first": m1.get("setup", {}).get("dev_suite", "dev"),
                "dev_again": m2.get("setup", {}).get("dev_suite", "dev"),
                "kept_first": m1.get("best_step"),
                "kept_again": m2.get("best_step"),
                "again_start": dev.get(0, np.nan),
                "again_kept": dev.get(m2.get("best_step"), np.nan),
                "again_later": max(later) if later else np.nan,
                "steps_gap": gap,
                "same_training": gap <= STEP_TOLERANCE,
                "same_selector": run_digest(first) == run_digest(again),
            }
        )
    return pd.DataFrame(rows).set_index("run") if rows else pd.DataFrame()
