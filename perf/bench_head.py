"""One epoch of the policy-head selector over every training question, per estimator.

Run on a quiet machine:  .venv/bin/python perf/bench_head.py [--threads 1]
The committed MiniLM prompt features and the evidence reader's train and dev tables; a linear
head, minibatches of 16; one epoch of FGPO (all 16 subsets per visit), GRPO (G = 6 draws per
visit) and GRPO with dynamic sampling (dead groups drawn again, up to 4 groups). Prints each
epoch's time (dev evaluation and telemetry included), the reward evaluations it read, and the
ratios to FGPO.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from fgpo_core.algorithms.head import HeadConfig, train_head
from fgpo_core.selectors.features import load_features
from fgpo_core.table import load_table

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="epochs timed per method (the fastest is kept)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    feats = load_features(ROOT / "data" / "features" / "cpu" / "minilm")
    data = {}
    for s in ("train", "dev"):
        t = load_table(ROOT / "data" / "tables" / "cpu" / "reader" / s)
        data[s] = (feats.rows(s, t.question_ids.tolist()), t)
    (tx, tt), (dx, dt) = data["train"], data["dev"]
    times = {}
    for method in ("fgpo", "grpo", "dapo"):
        best = float("inf")
        for r in range(args.repeats):
            t0 = time.perf_counter()
            run = train_head(tx, tt, dx, dt, HeadConfig(method=method, epochs=1, seed=r))
            best = min(best, time.perf_counter() - t0)
        times[method] = best
        print(
            f"{method}: {best:.2f} s per epoch of {tt.n_questions} questions, "
            f"{run.reward_evaluations} reward evaluations"
        )
    for m in ("grpo", "dapo"):
        print(f"{m} / fgpo time: {times[m] / times['fgpo']:.2f}")


if __name__ == "__main__":
    main()
