"""The LM main table's pipeline (``fgpo lm``): its stages, folders, order, reuse of an evaluation
and chosen.json, with training and evaluation replaced by fakes (the real ones are tested
elsewhere and run end to end, in miniature, by the chapter under the ci profile)."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from fgpo_core.cli import main
from fgpo_core.configs import field_docs
from fgpo_core.experiments import lm_grid
from fgpo_core.experiments.lm_grid import LMGridConfig, WarmupStage, lm_grid_folders, parse_warmup_stages


def test_every_field_is_documented_and_the_help_renders(capsys):
    docs = field_docs(LMGridConfig)
    assert set(docs) == {f.name for f in dataclasses.fields(LMGridConfig)} and all(docs.values())
    with pytest.raises(SystemExit) as e:
        main(["lm", "--help"])  # a "%" in a docstring must not break argparse's help
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--warmup" in out and "95%" in out


def test_warmup_stages_parse_and_bad_ones_are_refused():
    assert parse_warmup_stages("1:1e-3:2, 3:3e-4:1") == [WarmupStage(1.0, 1e-3, 2), WarmupStage(3.0, 3e-4, 1)]
    for bad in ("", "1:1e-3", "a:1e-3:2", "1:0:2", "1:1e-3:0", "-1:1e-3:2"):
        with pytest.raises(ValueError):
            parse_warmup_stages(bad)


def test_folders_follow_the_configuration():
    f = lm_grid_folders(
        LMGridConfig(folder="x", warmup="1:1e-3:2,3:3e-4:2,3:1e-4:1", fgpo_lrs="1e-4,3e-5", format_lrs="", grpo_lr=0)
    )
    assert f["warmup-stages"] == ["x/warmup", "x/warmup-stage2", "x/warmup-stage3"]
    assert f["warmup"] == ["x/warmup-stage3"] and f["fgpo"] == ["x/fgpo-lr1e-4", "x/fgpo-lr3e-5"]
    assert f["fgpo-format"] == [] and f["grpo"] == [] and f["fgpo-named"] == ["x/fgpo-named"]
    with pytest.raises(ValueError, match="positive"):
        lm_grid_folders(LMGridConfig(fgpo_lrs="-1e-3"))


@pytest.fixture
def fake_pipeline(monkeypatch, tmp_path):
    """Training writes an adapter (whose weights are the run's name, or the warm-up's for runs
    listed in ``same_as_start``) and a manifest; evaluation writes one frame per suite."""
    log: list[tuple] = []
    same_as_start: set[str] = set()

    def ensure_trained(objective, setup, config, progress=True, isolate=False):
        out = Path(setup.out_dir)
        log.append(
            ("train", objective, out.name, Path(setup.init_adapter).name if setup.init_adapter else "", setup.described)
        )
        (out / "adapter").mkdir(parents=True, exist_ok=True)
        weights = "warmup-stage2" if out.name in same_as_start else out.name
        (out / "adapter" / "adapter_model.safetensors").write_text(weights)
        dev = [{"step": 0, "gen_accuracy": 50.0, "accuracy": 50.0, "J": 0.0}]
        (out / "manifest.json").write_text(
            json.dumps(
                {
                    "objective": objective,
                    "config": {"lr": getattr(config, "lr", 0), "select_by": "generation"},
                    "dev": dev,
                    "setup": {"described": setup.described},
                }
            )
        )
        return out

    def evaluate_run(run_dir, bench_dir, suites, keep, limit, out_dir, progress=True, described=False):
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for s in suites:
            if (out / f"{s}.parquet").exists():
                continue
            log.append(("evaluate", Path(run_dir).name, out.parent.name, s, limit[s], described))
            pd.DataFrame({"question_id": ["a"], "generation_pick": [1]}).to_parquet(out / f"{s}.parquet")

    def format_run(run_dir, bench_dir, suite, limit, G=8, seed=0, keep=40, out_path=None, progress=True):
        log.append(("format", Path(run_dir).name, limit, G))
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"parse_rate": [1.0]}).to_parquet(out_path)

    monkeypatch.setattr(lm_grid, "ensure_trained", ensure_trained)
    monkeypatch.setattr(lm_grid, "evaluate_run", evaluate_run)
    monkeypatch.setattr(lm_grid, "format_run", format_run)
    return log, same_as_start, LMGridConfig(runs_dir=str(tmp_path), eval_cross=7, format_limit=3)


def test_every_method_starts_from_the_warmup_and_lands_in_chosen(fake_pipeline, tmp_path):
    log, _, cfg = fake_pipeline
    chosen = lm_grid.run_lm_grid(cfg, progress=False)
    trains = [e for e in log if e[0] == "train"]
    assert [e[2] for e in trains[:2]] == ["warmup", "warmup-stage2"]
    assert trains[0][3] == "" and trains[1][3] == "warmup"  # stage 2 continues stage 1
    assert all(e[3] == "warmup-stage2" for e in trains[2:])  # every method from the warm-up's adapter
    assert [e[2] for e in trains if e[4]] == ["fgpo-named"]  # only it is trained with the tools' names
    assert [e[1] for e in trains[2:]] == ["fgpo", "fgpo", "sft", "dpo", "grpo", "fgpo"]
    # the grpo run comes after everything cheaper has been trained and evaluated
    assert log.index(next(e for e in trains if e[1] == "grpo")) > max(
        i for i, e in enumerate(log) if e[0] == "evaluate" and e[2] == "untrained"
    )
    formats = [e for e in log if e[0] == "format"]
    evals = [e for e in log if e[0] == "evaluate"]
    assert [e[1] for e in formats] == ["warmup", "warmup-stage2", "untrained"]
    assert {e[2:] for e in formats} == {(3, 8)}
    assert [e[3] for e in evals if e[2] == "fgpo-named"] == ["core"]  # the sensitivity is read on core only
    assert {e[4] for e in evals if e[3] != "core"} == {7} and {e[4] for e in evals if e[3] == "core"} == {0}
    prompted = [e for e in evals if e[2] == "tools-with-descriptions"]
    assert prompted and all(e[1] == "warmup-stage2" and e[5] for e in prompted)
    assert chosen == json.loads((tmp_path / "chosen.json").read_text())
    assert chosen == {
        "untrained": "lm/untrained",
        "fgpo": "lm/fgpo-lr1e-4",
        "fgpo-format": "lm/fgpo-format-lr3e-4",
        "sft": "lm/sft",
        "dpo": "lm/dpo",
        "tools-with-descriptions": "lm/tools-with-descriptions",
        "grpo": "lm/grpo",
        "fgpo-named": "lm/fgpo-named",
        "warmup": "lm/warmup-stage2",
    }
    # a second call finds everything done: nothing trained or evaluated again
    n = len(log)
    lm_grid.run_lm_grid(cfg, progress=False)
    assert [e for e in log[n:] if e[0] != "train"] == []


def test_a_run_whose_kept_adapter_is_the_warmups_reuses_its_evaluation(fake_pipeline, tmp_path):
    log, same_as_start, cfg = fake_pipeline
    same_as_start.update({"fgpo-format-lr3e-4", "fgpo-named"})
    lm_grid.run_lm_grid(cfg, progress=False)
    evaluated = {e[2] for e in log if e[0] == "evaluate"}
    assert "warmup-stage2" in evaluated and "fgpo-format-lr3e-4" not in evaluated
    assert "fgpo-named" in evaluated  # the same adapter, but another prompt: evaluated for itself
    assert (tmp_path / "lm" / "fgpo-format-lr3e-4" / "eval" / "core.parquet").exists()


def test_chosen_is_written_as_each_evaluation_lands(fake_pipeline, tmp_path, monkeypatch):
    log, _, cfg = fake_pipeline
    real = lm_grid.ensure_trained

    def stop_at_dpo(objective, setup, config, progress=True, isolate=False):
        if objective == "dpo":
            raise KeyboardInterrupt
        return real(objective, setup, config, progress, isolate)

    monkeypatch.setattr(lm_grid, "ensure_trained", stop_at_dpo)
    with pytest.raises(KeyboardInterrupt):
        lm_grid.run_lm_grid(cfg, progress=False)
    assert set(json.loads((tmp_path / "chosen.json").read_text())) == {"warmup", "fgpo", "fgpo-format", "sft"}


def test_runs_finished_before_an_interruption_are_evaluated_before_anything_trains(fake_pipeline, tmp_path):
    log, same_as_start, cfg = fake_pipeline
    lm_grid.run_lm_grid(
        LMGridConfig(runs_dir=str(tmp_path), fgpo_lrs="", format_lrs="", grpo_lr=0, named_lr=0), progress=False
    )  # the warm-up and the imitation runs
    (tmp_path / "chosen.json").unlink()
    done = tmp_path / "lm" / "fgpo-format-lr3e-4"
    done.mkdir(parents=True)
    (done / "manifest.json").write_text(json.dumps({"objective": "fgpo", "config": {"lr": 3e-4}, "dev": []}))
    (done / "adapter").mkdir()
    (done / "adapter" / "adapter_model.safetensors").write_text("warmup-stage2")  # its kept adapter: the warm-up's
    n = len(log)
    lm_grid.run_lm_grid(cfg, progress=False)
    first_training = next(i for i, e in enumerate(log[n:]) if e[0] == "train" and e[2] == "fgpo-lr1e-4")
    assert json.loads((tmp_path / "chosen.json").read_text())["fgpo-format"] == "lm/fgpo-format-lr3e-4"
    assert (done / "eval" / "core.parquet").exists()  # a copy of the warm-up's, before the first new training
    assert not any(e[0] == "evaluate" and e[2] == done.name for e in log[n:])
    assert first_training > 0


def _fake_run(folder: Path, weights: str, described: bool = False, evals=()) -> Path:
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_model.safetensors").write_text(weights)
    (folder / "manifest.json").write_text(json.dumps({"objective": "fgpo", "setup": {"described": described}}))
    for s in evals:
        (folder / "eval").mkdir(exist_ok=True)
        pd.DataFrame({"question_id": [s], "generation_pick": [3]}).to_parquet(folder / "eval" / f"{s}.parquet")
    return folder


def test_an_evaluation_is_reused_only_by_the_same_selector(tmp_path):
    from fgpo_core.experiments.run import reuse_evaluation

    start = _fake_run(tmp_path / "start", "w", evals=("core", "microbe"))
    same = _fake_run(tmp_path / "same", "w", evals=("core",))
    (same / "eval" / "core.parquet").write_bytes(b"its own")  # a suite already there is left alone
    assert reuse_evaluation(same, start) == ["microbe"]
    assert (same / "eval" / "core.parquet").read_bytes() == b"its own"
    assert reuse_evaluation(same, start) == []  # nothing left to copy
    assert reuse_evaluation(_fake_run(tmp_path / "moved", "x"), start) == []  # another adapter
    assert reuse_evaluation(_fake_run(tmp_path / "named", "w", described=True), start) == []  # another prompt
    assert not (tmp_path / "moved" / "eval").exists() and not (tmp_path / "named" / "eval").exists()
    with pytest.raises(ValueError, match="no such run folder"):
        reuse_evaluation(same, tmp_path / "nowhere")


def test_evaluate_reuse_from_a_missing_run_is_a_one_line_error(tmp_path, capsys):
    run = _fake_run(tmp_path / "run", "w")
    assert main(["evaluate", "--run", str(run), "--into-run", "--reuse-from", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no such run folder" in err and "\n" not in err
