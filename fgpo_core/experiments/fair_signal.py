"""Dead groups and gradient signal-to-noise at the policies the fair test trained.

For each chosen cell (estimator and regularizer) and seed of a fair-test study (``fgpo study
--methods fair``), the policy its kept head gives every test question (the study's run parts keep
it) is read back, and at that policy one GRPO visit (``G`` draws, the differential reward) is
measured on an even spread of the pooled test questions: the chance its group is dead (Eq. 7) and
the signal-to-noise ratio of its direction (:mod:`fgpo_core.evaluation.signal`). So a reader sees, at
matched regularization, how much a sampled visit still tells the policy once training has shaped it.

The run parts are not committed (they are large); this script writes the small result the chapter
reads, ``<out>/signal.parquet`` (one row per cell, seed and question), with a manifest naming the
study it read and the digest of the result (written last)::

    python -m fgpo_core.experiments.fair_signal --study runs/cpu/fair --out runs/cpu/fair-signal
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["CELLS", "trained_policy", "fair_signal", "main"]

CELLS = (("fgpo", "none"), ("fgpo", "ent"), ("grpo", "none"), ("grpo", "ent"), ("rloo", "none"), ("rloo", "ent"))
"""The cells measured: exact FGPO and the two plain sampled estimators, unregularized and with the
entropy bonus at the weight the in-domain dev chose."""


def trained_policy(study_dir, method: str, seed: int, suites) -> np.ndarray:
    """``[Q, A]``: the kept head's policy of ``method`` (at its chosen rate) and ``seed`` on the pooled
    test questions of ``suites``, in the study's order, read from the study's run part."""
    study_dir = Path(study_dir)
    lr = json.loads((study_dir / "manifest.json").read_text())["chosen_lr"][method]
    part = study_dir / "parts" / f"{method}__lr{lr:g}__s{seed}.npz"
    if not part.exists():
        raise FileNotFoundError(f"{part} is missing: the run parts of the study are needed (run the study again)")
    with np.load(part, allow_pickle=False) as z:
        missing = [s for s in suites if f"q_{s}" not in z.files]
        if missing:
            raise ValueError(f"{part} keeps no policy on {', '.join(missing)}")
        return np.concatenate([z[f"q_{s}"].astype(float) for s in suites])


def fair_signal(
    study_dir, table_dir, bench_dir, n_questions: int = 400, n_draws: int = 64, G: int = 6, cells=CELLS
) -> pd.DataFrame:
    """One row per (cell, seed, question of the spread): ``dead`` (Eq. 7 at ``G``), ``snr`` of one GRPO
    visit, and whether the question's differential rewards differ at all (``live``)."""
    from ..evaluation.signal import policy_signal
    from ..reports.fair import load_fair

    ft = load_fair(study_dir, table_dir, bench_dir)
    from ..table import load_tables

    tables = load_tables({"r": table_dir}, ft.test_suites)["r"]
    rewards = np.concatenate(
        [tables[s].select(list(ft.ids[ft.suites == s])).rewards("differential") for s in ft.test_suites]
    )
    spread = np.unique(np.linspace(0, len(ft.ids) - 1, min(n_questions, len(ft.ids))).round().astype(int))
    live = np.ptp(rewards[spread], axis=1) > 0
    seeds = sorted(ft.study.picks["seed"].unique())
    frames = []
    for est, reg in cells:
        method = ft.cells.loc[(est, reg), "method"]
        for s in seeds:
            q = trained_policy(study_dir, method, int(s), ft.test_suites)[spread]
            f = policy_signal(q, rewards[spread], "grpo", G=G, n_draws=n_draws, seed=int(s))
            frames.append(
                f.assign(
                    estimator=est,
                    regularizer=reg,
                    method=method,
                    seed=int(s),
                    question_id=ft.ids[spread],
                    suite=ft.suites[spread],
                    live=live,
                    entropy=-(q * np.log(np.clip(q, 1e-300, None))).sum(1),
                )
            )
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> int:
    from ..cli_errors import run_command
    from ..io import atomic_path, with_digests, write_json

    ap = argparse.ArgumentParser(
        prog="python -m fgpo_core.experiments.fair_signal", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--study", default="runs/cpu/fair")
    ap.add_argument("--tables", default="data/tables/cpu/reader")
    ap.add_argument("--bench", default="data/benchmarks/cpu")
    ap.add_argument("--out", default="runs/cpu/fair-signal")
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--draws", type=int, default=64)
    a = ap.parse_args(argv)

    def run():
        if a.questions < 1 or a.draws < 2:
            raise ValueError(f"--questions must be >= 1 and --draws >= 2, got {a.questions} and {a.draws}")
        f = fair_signal(a.study, a.tables, a.bench, a.questions, a.draws)
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        with atomic_path(out / "signal.parquet", suffix=".parquet") as tmp:
            f.to_parquet(tmp, index=False)
        study_manifest = (Path(a.study) / "manifest.json").read_bytes()
        manifest = {
            "study": str(a.study),
            "study_manifest_sha256": hashlib.sha256(study_manifest).hexdigest(),
            "questions": a.questions,
            "draws": a.draws,
            "G": 6,
            "cells": [list(c) for c in CELLS],
        }
        write_json(out / "manifest.json", with_digests(manifest, out, ["signal.parquet"]))
        print(f"wrote {out / 'signal.parquet'} ({len(f):,} rows)")
        return 0

    return run_command("fair-signal", run)


if __name__ == "__main__":
    sys.exit(main())
