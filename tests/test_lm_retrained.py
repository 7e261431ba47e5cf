"""The first pool's RL runs trained again on the in-domain dev, read beside the first ones."""

import json
from pathlib import Path

import numpy as np

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
