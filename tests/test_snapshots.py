"""A run's dev-evaluation snapshot written out as a run folder of its own, and run logs read from
checkpoints: the snapshot's weights come back exactly (to half precision), its cost is the sum of
the steps before it, and bad requests are refused in one line."""

import json

import pytest
import torch

from fgpo_core.book.build import REPO_ROOT
from fgpo_core.cli import main

WARMUP = REPO_ROOT / "runs/cpu/lm/warmup-stage2"


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    """An unfinished FGPO run of the warm-up's adapter shape: two steps, snapshots at steps 0 and 2."""
    from fgpo_core.experiments.run import load_run_selector

    run = tmp_path_factory.mktemp("snap") / "fgpo"
    (run / "ckpt").mkdir(parents=True)
    (run / "setup.json").write_text(json.dumps({"objective": "fgpo", "n_train": 32, "n_dev": 4}))
    params = [
        p.detach().clone() for p in load_run_selector(WARMUP, trainable=True).model.parameters() if p.requires_grad
    ]
    moved = [
        (p + 0.01 * torch.randn_like(p, generator=torch.Generator().manual_seed(i))).half()
        for i, p in enumerate(params)
    ]
    torch.save({"params": [p.half() for p in params], "step": 0}, run / "ckpt" / "step-0.pt")
    torch.save({"params": moved, "step": 2}, run / "ckpt" / "step-2.pt")
    steps = [
        {"step": 1, "visits": 16, "seconds": 1.5, "cpu_seconds": 3.0},
        {"step": 2, "visits": 32, "seconds": 2.5, "cpu_seconds": 4.0},
    ]
    dev = [{"step": 0, "gen_accuracy": 40.0}, {"step": 2, "gen_accuracy": 45.0}]
    torch.save({"steps": steps, "dev": dev, "step": 2}, run / "ckpt" / "last.pt")
    return run, moved


def test_a_snapshot_becomes_a_run_folder_with_its_weights_and_cost(fake_run, tmp_path):
    from fgpo_core.experiments.run import load_run_selector, run_digest
    from fgpo_core.experiments.snapshots import run_logs, snapshot_run, snapshot_steps

    run, moved = fake_run
    assert snapshot_steps(run) == [0, 2]
    steps, dev = run_logs(run)
    assert steps.step.tolist() == [1, 2] and dev.gen_accuracy.tolist() == [40.0, 45.0]
    out = snapshot_run(run, 2, tmp_path / "at-2", str(WARMUP))
    man = json.loads((out / "manifest.json").read_text())
    assert man["compute"] == {"step": 2, "seconds": 4.0, "cpu_seconds": 7.0, "visits": 32}
    assert man["objective"] == "fgpo" and man["dev_at_step"]["gen_accuracy"] == 45.0
    sel = load_run_selector(out)
    back = [p for p in sel.model.parameters() if p.requires_grad] or [
        p for n, p in sel.model.named_parameters() if "lora_" in n
    ]
    assert len(back) == len(moved) and all(torch.equal(a.half(), b) for a, b in zip(back, moved))
    assert run_digest(out) != run_digest(WARMUP)
    before = (out / "manifest.json").stat().st_mtime_ns
    assert snapshot_run(run, 2, out, str(WARMUP)) == out and (out / "manifest.json").stat().st_mtime_ns == before
    with pytest.raises(ValueError, match="another snapshot"):
        snapshot_run(run, 0, out, str(WARMUP))


def test_a_missing_snapshot_is_refused_in_one_line(fake_run, tmp_path, capsys):
    run, _ = fake_run
    status = main(["snapshot", "--run", str(run), "--step", "7", "--init", str(WARMUP), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "no snapshot at step 7" in err[0] and "0, 2" in err[0]
    assert not (tmp_path / "x").exists()
