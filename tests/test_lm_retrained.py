"""The first pool's RL runs trained again on the in-domain dev, read beside the first ones."""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fgpo_core.reports.lm_retrained import STEP_TOLERANCE, retrained_runs


def _run(folder: Path, weights: str, dev_suite: str, dev: dict, best: int, losses) -> None:
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_model.safetensors").write_text(weights)
    manifest = {
        "objective": "fgpo",
        "setup": {"dev_suite": dev_suite} if dev_suite != "dev" else {},
        "dev": [{"step": s, "gen_accuracy": a} for s, a in dev.items()],
        "best_step": best,
        "steps": [{"step": i + 1, "loss": v, "entropy": 2.0} for i, v in enumerate(losses)],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_retrained_run_is_set_beside_its_first(tmp_path):
    first, again = tmp_path / "lm", tmp_path / "lm-indev"
    _run(first / "a", "start", "dev", {0: 50.0, 8: 40.0}, 0, [0.1, 0.2])
    _run(again / "a", "start", "indev", {0: 48.0, 8: 41.0, 16: 44.0}, 0, [0.1, 0.2 + STEP_TOLERANCE / 2])
    _run(first / "b", "start", "dev", {0: 50.0, 8: 40.0}, 0, [0.1, 0.2])
    _run(again / "b", "moved", "indev", {0: 48.0, 8: 52.0}, 8, [0.1, 0.3])
    _run(first / "c", "start", "dev", {0: 50.0}, 0, [0.1])  # not retrained: left out
    got = retrained_runs(first, again, ["a", "b", "c"])
    assert list(got.index) == ["a", "b"]
    a, b = got.loc["a"], got.loc["b"]
    assert (a.dev_first, a.dev_again, a.kept_first, a.kept_again) == ("dev", "indev", 0, 0)
    assert (a.again_start, a.again_kept, a.again_later) == (48.0, 48.0, 44.0)
    assert a.same_training and a.same_selector
    assert (b.kept_again, b.again_kept) == (8, 52.0)
    assert not b.same_training and np.isclose(b.steps_gap, 0.1) and not b.same_selector


def test_runs_that_logged_other_steps_are_not_the_same_training(tmp_path):
    first, again = tmp_path / "lm", tmp_path / "lm-indev"
    _run(first / "a", "w", "dev", {0: 50.0}, 0, [0.1, 0.2])
    _run(again / "a", "w", "indev", {0: 50.0}, 0, [0.1])
    got = retrained_runs(first, again, ["a"])
    assert got.loc["a"].steps_gap == float("inf") and not got.loc["a"].same_training
    assert retrained_runs(first, again, ["none"]).empty


def test_the_committed_retrained_runs_repeat_their_first_training_and_were_evaluated_on_test():
    """Each retrained first-pool run in runs/cpu/lm-indev logged the very losses its first run did
    (so the in-domain dev chose among the same checkpoints), chose on the in-domain dev, and its kept
    adapter was evaluated on the suites its first run was, on the same questions."""
    root = Path(__file__).resolve().parent.parent / "runs" / "cpu"
    names = sorted(p.parent.name for p in (root / "lm-indev").glob("*/manifest.json"))
    assert names, "no retrained run is committed"
    got = retrained_runs(root / "lm", root / "lm-indev", names)
    assert list(got.index) == names
    assert got.same_training.all() and (got.dev_again == "indev").all() and (got.dev_first == "dev").all()
    for name in names:
        first = {p.name: p for p in (root / "lm" / name / "eval").glob("*.parquet")}
        again = {p.name: p for p in (root / "lm-indev" / name / "eval").glob("*.parquet")}
        assert set(again) == set(first), name
        for f, p in again.items():
            ids = pd.read_parquet(p, columns=["question_id"]).question_id.tolist()
            assert ids == pd.read_parquet(first[f], columns=["question_id"]).question_id.tolist(), (name, f)
