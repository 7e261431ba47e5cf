"""Run configurations: every field documented, every objective reachable from the command line."""

import dataclasses

import pytest

from fgpo_core.algorithms.fgpo import FGPOConfig
from fgpo_core.algorithms.grpo import GRPOConfig
from fgpo_core.algorithms.imitation import ImitationConfig
from fgpo_core.algorithms.warmup import WarmupConfig
from fgpo_core.cli import main
from fgpo_core.configs import add_dataclass_args, dataclass_from_args, field_docs
from fgpo_core.experiments.run import OBJECTIVES, RunSetup
from fgpo_core.reasoners.train_reader import ReaderConfig


@pytest.mark.parametrize("cls", [FGPOConfig, GRPOConfig, ImitationConfig, ReaderConfig, RunSetup, WarmupConfig])
def test_every_config_field_carries_a_docstring(cls):
    docs = field_docs(cls)
    assert set(docs) == {f.name for f in dataclasses.fields(cls)}
    assert all(docs.values()), [k for k, v in docs.items() if not v]


def test_flags_round_trip_to_the_dataclass():
    import argparse

    ap = argparse.ArgumentParser()
    add_dataclass_args(ap, GRPOConfig)
    cfg = dataclass_from_args(GRPOConfig, ap.parse_args(["--G", "8", "--lr", "3e-5", "--loss-type", "dapo"]))
    assert (cfg.G, cfg.lr, cfg.loss_type, cfg.temperature) == (8, 3e-5, "dapo", 1.0)


@pytest.mark.parametrize(
    "objective,own,other",
    [
        ("fgpo", "--weight", "--prompts-per-step"),
        ("grpo", "--G", "--beta"),
        ("sft", "--micro-batch", "--G"),
        ("dpo", "--dpo-beta", "--G"),
        ("warmup", "--target-mass", "--G"),
    ],
)
def test_train_offers_each_objectives_own_config(objective, own, other, capsys):
    """`fgpo train --objective X` takes the run setup and X's own config fields, not another's."""
    assert set(OBJECTIVES) == {"fgpo", "grpo", "sft", "dpo", "warmup"}
    with pytest.raises(SystemExit) as e:
        main(["train", "--objective", objective, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--n-train" in out and f"{own} " in out and f"{other} " not in out


def test_unknown_objective_is_refused():
    with pytest.raises(SystemExit) as e:
        main(["train", "--objective", "ppo"])
    assert e.value.code == 2


def test_a_finished_run_trained_with_another_configuration_is_refused(tmp_path):
    import json

    from fgpo_core.experiments.steps import ensure_trained

    old = dataclasses.asdict(FGPOConfig(lr=1e-3, epochs=2, eval_every=2))
    (tmp_path / "fgpo-lr1e-3").mkdir()
    (tmp_path / "fgpo-lr1e-3" / "manifest.json").write_text(json.dumps({"config": old}))
    with pytest.raises(ValueError, match="another configuration.*epochs"):
        ensure_trained(
            "fgpo", RunSetup(out_dir=str(tmp_path / "fgpo-lr1e-3")), FGPOConfig(lr=1e-3, epochs=3), progress=False
        )


def test_a_field_added_later_is_read_at_its_default():
    from fgpo_core.algorithms.imitation import ImitationConfig
    from fgpo_core.experiments.run import config_differences

    recorded = dataclasses.asdict(ImitationConfig(lr=3e-4, epochs=2))
    del recorded["micro_batch"]  # a manifest written before the field existed
    assert config_differences(ImitationConfig(lr=3e-4, epochs=2), recorded) == []
    assert config_differences(ImitationConfig(lr=3e-4, epochs=2, micro_batch=4), recorded) == ["micro_batch"]
    assert config_differences(ImitationConfig(lr=1e-3, epochs=2), recorded) == ["lr"]


def test_in_child_reports_a_failing_child():
    from fgpo_core.experiments.run import train_run
    from fgpo_core.experiments.steps import in_child

    with pytest.raises(RuntimeError, match="train_run.*exit code 1"):
        in_child(train_run, "ppo", RunSetup(), FGPOConfig(), False)


def test_evaluate_reuses_a_suite_only_under_the_same_prompt_and_refuses_path_like_suites(
    ci_bench, tmp_path, monkeypatch
):
    import pandas as pd

    import fgpo_core.experiments.run as run
    from fgpo_core.genomics.benchmarks import load_benchmark

    bench, _ = ci_bench
    with pytest.raises(ValueError, match="not a plain name"):
        run.evaluate_run("untrained", str(bench), ["../escape"], out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="described applies to a run folder"):
        run.evaluate_run("untrained", str(bench), ["core"], out_dir=str(tmp_path), described=True)
    _, suites = load_benchmark(bench)
    frame = pd.DataFrame({"question_id": [q.id for q in suites["core"][:2]], "scoring_pick": [0, 0]})
    frame.attrs.update(adapter="untrained", keep="40")
    frame.to_parquet(tmp_path / "core.parquet")

    class Loaded(Exception):
        pass

    def no_model(*a, **k):
        raise Loaded

    monkeypatch.setattr(run, "load_selector", no_model)
    assert run.evaluate_run("untrained", str(bench), ["core"], keep=40, limit=2, out_dir=str(tmp_path))
    with pytest.raises(Loaded):  # another prompt (keep) must be evaluated again
        run.evaluate_run("untrained", str(bench), ["core"], keep=8, limit=2, out_dir=str(tmp_path))


def test_a_run_restarted_on_other_questions_or_a_finished_run_of_another_setup_is_refused(tmp_path):
    import json

    from fgpo_core.experiments.run import RunSetup, _check_setup
    from fgpo_core.experiments.steps import ensure_trained

    setup = RunSetup(out_dir=str(tmp_path / "r"), n_train=8)
    (tmp_path / "r").mkdir()
    _check_setup(tmp_path / "r", setup, "fgpo", [f"q{i}" for i in range(8)], ["d0"], {"reasoner": "x"})
    _check_setup(tmp_path / "r", setup, "fgpo", [f"q{i}" for i in range(8)], ["d0"], {"reasoner": "x"})  # same: ok
    with pytest.raises(ValueError, match="another setup.*n_train.*train_ids"):
        _check_setup(tmp_path / "r", setup, "fgpo", [f"q{i}" for i in range(16)], ["d0"], {"reasoner": "x"})
    with pytest.raises(ValueError, match="another setup.*keep"):
        _check_setup(tmp_path / "r", RunSetup(keep=8), "fgpo", [f"q{i}" for i in range(8)], ["d0"], {"reasoner": "x"})
    cfg = dataclasses.asdict(FGPOConfig(lr=1e-3, epochs=3))
    (tmp_path / "g" / "fgpo-lr1e-3").mkdir(parents=True)
    (tmp_path / "g" / "fgpo-lr1e-3" / "manifest.json").write_text(
        json.dumps(
            {
                "config": cfg,
                "setup": {
                    "bench_dir": "data/benchmarks/cpu",
                    "table_dir": "data/tables/cpu/reader",
                    "n_train": 8,
                    "n_dev": 32,
                    "keep": 40,
                },
            }
        )
    )
    with pytest.raises(ValueError, match="setup.n_train"):
        ensure_trained(
            "fgpo",
            RunSetup(out_dir=str(tmp_path / "g" / "fgpo-lr1e-3"), n_train=16),
            FGPOConfig(lr=1e-3, epochs=3),
            progress=False,
        )


def test_an_interrupted_evaluation_resumes_at_its_last_finished_part(ci_bench, tmp_path, monkeypatch):
    import pandas as pd

    import fgpo_core.experiments.run as run
    from fgpo_core.genomics.benchmarks import load_benchmark

    bench, _ = ci_bench
    _, suites = load_benchmark(bench)
    n = 5
    ids = [q.id for q in suites["core"][:n]]

    class Model:
        def eval(self):
            return self

    class Stub:
        model = Model()

    calls = []

    def chunk(sel, qs, scoring):
        calls.append([q.id for q in qs])
        if len(calls) == 2 and not getattr(chunk, "resumed", False):
            raise KeyboardInterrupt  # stopped in the middle of the second part
        return pd.DataFrame(
            {"question_id": [q.id for q in qs], "generation_pick": [1] * len(qs), "scoring_pick": [2] * len(qs)}
        )

    monkeypatch.setattr(run, "EVAL_CHUNK", 2)
    monkeypatch.setattr(run, "load_selector", lambda *a, **k: Stub())
    monkeypatch.setattr(run, "_evaluate_chunk", chunk)
    with pytest.raises(KeyboardInterrupt):
        run.evaluate_run("untrained", str(bench), ["core"], limit=n, out_dir=str(tmp_path), progress=False)
    assert not (tmp_path / "core.parquet").exists() and len(list((tmp_path / "parts" / "core").iterdir())) == 1
    chunk.resumed = True
    calls.clear()
    run.evaluate_run("untrained", str(bench), ["core"], limit=n, out_dir=str(tmp_path), progress=False)
    assert calls == [ids[2:4], ids[4:]]  # the first part was kept
    out = pd.read_parquet(tmp_path / "core.parquet")
    assert list(out.question_id) == ids and out.attrs["adapter"] == "untrained"
    assert not (tmp_path / "parts" / "core").exists()


def test_fgpo_format_samples_the_format_beside_the_exact_mass(ci_bench, tmp_path, monkeypatch, capsys):
    import pandas as pd
    from test_imitation import tiny_selector_and_questions

    import fgpo_core.experiments.run as run
    from fgpo_core.cli import main
    from fgpo_core.genomics.benchmarks import load_benchmark

    bench, _ = ci_bench
    monkeypatch.setattr(run, "load_selector", lambda *a, **k: tiny_selector_and_questions()[0])
    out = tmp_path / "f.parquet"
    assert (
        main(
            [
                "format",
                "--run",
                "untrained",
                "--bench",
                str(bench),
                "--suite",
                "dev",
                "--limit",
                "3",
                "--samples",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "parse rate" in capsys.readouterr().out
    f = pd.read_parquet(out)
    _, suites = load_benchmark(bench)
    assert list(f.question_id) == [q.id for q in suites["dev"][:3]] and f.attrs["G"] == "4"
    assert f.parse_rate.between(0, 1).all() and (f.canonical_rate <= f.parse_rate).all()
    assert f.canonical_mass.between(0, 1).all()
    with pytest.raises(ValueError, match="give out_path"):
        run.format_run("untrained", str(bench))
    with pytest.raises(ValueError, match="has no suite"):
        run.format_run("untrained", str(bench), suite="nope", out_path=out)
    with pytest.raises(FileNotFoundError, match="no finished run"):
        run.format_run(str(tmp_path / "none"), str(bench))


def test_a_run_trained_with_tool_names_is_evaluated_and_checked_with_them(ci_bench, tmp_path, monkeypatch):
    import json
    import shutil

    import fgpo_core.experiments.run as run
    from fgpo_core.genomics.tools import TOOL_NAMES

    bench, _ = ci_bench
    for name, described in (("named", True), ("anonymous", False)):
        (tmp_path / name / "adapter").mkdir(parents=True)
        (tmp_path / name / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
        (tmp_path / name / "manifest.json").write_text(json.dumps({"setup": {"described": described}}))
    old = tmp_path / "old"  # a run trained before the field existed: anonymous
    (old / "adapter").mkdir(parents=True)
    (old / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (old / "manifest.json").write_text(json.dumps({"setup": {}}))
    assert run.run_tool_names(tmp_path / "named") == list(TOOL_NAMES[:4])
    assert run.run_tool_names(tmp_path / "anonymous") is None and run.run_tool_names(old) is None

    seen = []

    class Loaded(Exception):
        pass

    def capture(*a, **k):
        seen.append(k.get("tool_names"))
        raise Loaded

    monkeypatch.setattr(run, "load_selector", capture)
    for name in ("named", "anonymous"):
        with pytest.raises(Loaded):
            run.evaluate_run(str(tmp_path / name), str(bench), ["core"], limit=2, progress=False)
        with pytest.raises(Loaded):
            run.format_run(str(tmp_path / name), str(bench), limit=2, progress=False)
    assert seen == [list(TOOL_NAMES[:4])] * 2 + [None] * 2
    # a named run's own eval/ is its named evaluation; an anonymous run's named one needs its own folder
    with pytest.raises(ValueError, match="give out_dir for a described evaluation"):
        run.evaluate_run(str(tmp_path / "anonymous"), str(bench), ["core"], described=True)

    setup = run.RunSetup(out_dir=str(tmp_path / "r"), described=True)
    (tmp_path / "r").mkdir()
    run._check_setup(tmp_path / "r", setup, "fgpo", ["q0"], ["d0"], {"reasoner": "x"})
    with pytest.raises(ValueError, match="another setup.*described"):
        run._check_setup(tmp_path / "r", run.RunSetup(), "fgpo", ["q0"], ["d0"], {"reasoner": "x"})
    setup_file = tmp_path / "r" / run.SETUP_FILE
    recorded = json.loads(setup_file.read_text())
    del recorded["described"]  # a setup recorded before the field existed restarts as anonymous
    setup_file.write_text(json.dumps(recorded))
    run._check_setup(tmp_path / "r", run.RunSetup(), "fgpo", ["q0"], ["d0"], {"reasoner": "x"})
    # the benchmark is recorded by its files' digest, not its path: a copy elsewhere is the same setup
    bench_copy = tmp_path / "elsewhere"
    shutil.copytree(bench, bench_copy)
    (tmp_path / "s").mkdir()
    run._check_setup(tmp_path / "s", run.RunSetup(bench_dir=str(bench)), "fgpo", ["q0"], ["d0"], {"reasoner": "x"})
    assert "bench_dir" not in json.loads((tmp_path / "s" / run.SETUP_FILE).read_text())
    run._check_setup(tmp_path / "s", run.RunSetup(bench_dir=str(bench_copy)), "fgpo", ["q0"], ["d0"], {"reasoner": "x"})
    first = next(bench_copy.glob("*.jsonl"))
    first.write_text(first.read_text() + "\n")
    with pytest.raises(ValueError, match="another setup.*bench"):
        run._check_setup(
            tmp_path / "s", run.RunSetup(bench_dir=str(bench_copy)), "fgpo", ["q0"], ["d0"], {"reasoner": "x"}
        )


def test_a_stopped_fgpo_run_keeps_its_logs_and_reason(tmp_path):
    import json

    import torch

    from fgpo_core.experiments.run import SETUP_FILE, record_stopped_run

    run = tmp_path / "fgpo"
    (run / "ckpt").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no FGPO checkpoint"):
        record_stopped_run(run, "why")
    (run / SETUP_FILE).write_text(json.dumps({"n_train": 40}))
    (run / "ckpt" / "config.json").write_text(json.dumps({"lr": 1e-3, "epochs": 2, "batch_size": 16}))
    steps = [{"epoch": 1, "step": i, "p_gen_mass": 0.5} for i in (1, 2)]
    torch.save(
        {"steps": steps, "dev": [{"step": 0, "gen_accuracy": 50.0}], "epoch": 0, "step": 2}, run / "ckpt" / "last.pt"
    )
    with pytest.raises(ValueError, match="say why"):
        record_stopped_run(run, " ")
    path = record_stopped_run(run, "the format collapsed", out_dir=tmp_path / "kept")
    rec = json.loads(path.read_text())
    assert rec["stopped"] and rec["reason"] == "the format collapsed" and rec["config"]["lr"] == 1e-3
    assert rec["steps_taken"] == 2 and rec["steps_planned"] == 6 and rec["steps"] == steps  # 3 batches x 2 epochs
    assert rec["dev"][0]["gen_accuracy"] == 50.0 and rec["setup"]["n_train"] == 40


def test_a_fresh_adapter_over_a_merged_one_loads_back_as_it_was_trained(ci_bench, tmp_path):
    """RunSetup.merge_init: a run trains a fresh LoRA (here rank 4) over another run's adapter merged
    into the base weights; reading it back must rebuild that stack, and its digest names both."""
    import json

    import torch

    from fgpo_core.experiments.run import RunSetup, load_run_selector, run_digest, train_run
    from fgpo_core.genomics.benchmarks import load_benchmark
    from fgpo_core.hf import adapter_hash
    from fgpo_core.selectors.lm import LMSelector, add_lora, load_selector

    def perturb(model, seed):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.copy_(0.05 * torch.randn(p.shape, generator=g))

    warm = load_selector(None, 40, lora_r=16)
    perturb(warm.model, 0)
    warm.model.save_pretrained(str(tmp_path / "warm" / "adapter"))
    (tmp_path / "warm" / "manifest.json").write_text(json.dumps({"setup": {}}))
    under = load_run_selector(tmp_path / "warm")
    fresh = add_lora(under.model.merge_and_unload(), r=4, alpha=8)
    perturb(fresh, 1)
    fresh.save_pretrained(str(tmp_path / "fresh" / "adapter"))
    (tmp_path / "fresh" / "manifest.json").write_text(
        json.dumps({"setup": {"merge_init": True, "init_adapter": str(tmp_path / "elsewhere" / "warm")}})
    )  # found beside it
    _, suites = load_benchmark(ci_bench[0])
    q = suites["dev"][:1]
    with torch.no_grad():
        want = LMSelector(fresh, under.tokenizer, n_tools=4, keep=40, prefill=under.prefill).candidate_scores(q)
        got_sel = load_run_selector(tmp_path / "fresh")
        got = got_sel.candidate_scores(q)
        alone = load_selector(str(tmp_path / "fresh" / "adapter"), 40, trainable=False).candidate_scores(q)
    assert torch.allclose(got, want, atol=1e-4) and not torch.allclose(alone, want, atol=1e-3)
    assert {p.shape[0] for n, p in got_sel.model.named_parameters() if "lora_A" in n} == {4}
    assert (
        run_digest(tmp_path / "fresh") == f"{adapter_hash(tmp_path / 'fresh' / 'adapter')}+"
        f"{adapter_hash(tmp_path / 'warm' / 'adapter')}"
    )
    assert run_digest(tmp_path / "warm") == adapter_hash(tmp_path / "warm" / "adapter")
    # a run that continues the fresh adapter (the FGPO stage after an SFT stage) sits on the same merged base
    perturb(fresh, 2)
    fresh.save_pretrained(str(tmp_path / "cont" / "adapter"))
    (tmp_path / "cont" / "manifest.json").write_text(json.dumps({"setup": {"init_adapter": str(tmp_path / "fresh")}}))
    with torch.no_grad():
        want = LMSelector(fresh, under.tokenizer, n_tools=4, keep=40, prefill=under.prefill).candidate_scores(q)
        got = load_run_selector(tmp_path / "cont").candidate_scores(q)
    assert torch.allclose(got, want, atol=1e-4)
    assert run_digest(tmp_path / "cont").endswith(f"+{adapter_hash(tmp_path / 'warm' / 'adapter')}")
    with pytest.raises(ValueError, match="merge_init needs an init_adapter"):
        train_run("sft", RunSetup(out_dir=str(tmp_path / "x"), merge_init=True), None)


def test_resumed_step_reads_where_a_runs_checkpoints_stopped(tmp_path):
    import torch

    from fgpo_core.algorithms.common import resumed_step

    assert resumed_step(tmp_path / "none") == 0 and resumed_step(tmp_path) == 0
    trl = tmp_path / "trl"
    for s in (4, 12, 8):
        (trl / f"checkpoint-{s}").mkdir(parents=True)
    assert resumed_step(trl) == 12  # TRL's last checkpoint, by number not by name
    own = tmp_path / "own"
    own.mkdir()
    torch.save({"steps": [{"step": 1}, {"step": 2}, {"step": 3}], "step": 3}, own / "last.pt")
    assert resumed_step(own) == 3
    torch.save({"steps": [{"step": 1}, {"step": 2}], "epoch": 0}, own / "last.pt")  # a per-epoch checkpoint
    assert resumed_step(own) == 2


def test_a_run_chooses_on_the_dev_suite_it_names(tmp_path, capsys):
    """``dev_suite`` picks the questions (and table rows) that choose a run's kept checkpoint: the
    in-domain dev by name; a suite the benchmark or its tables lack is a one-line error (exit 2)."""
    from pathlib import Path

    from fgpo_core.experiments.run import split_data
    from fgpo_core.genomics.benchmarks import read_questions

    root = Path(__file__).resolve().parent.parent
    bench, tables = root / "data" / "benchmarks" / "cpu", root / "data" / "tables" / "cpu" / "reader"
    setup = RunSetup(str(bench), str(tables), dev_suite="indev")
    qs, t = split_data(setup, setup.dev_suite, 10)
    assert [q.id for q in qs] == [q.id for q in read_questions(bench / "indev.jsonl")[:10]]
    trained = {q.family for q in read_questions(bench / "train.jsonl")}
    assert list(t.question_ids) == [q.id for q in qs] and {q.family for q in qs} <= trained
    with pytest.raises(ValueError, match="no suite 'nope'"):
        split_data(setup, "nope")
    with pytest.raises(ValueError, match="no reward table for the suite 'indev'"):
        split_data(RunSetup(str(bench), str(tmp_path), dev_suite="indev"), "indev")
    args = ["train", "--objective", "fgpo", "--bench-dir", str(bench), "--table-dir", str(tables)]
    assert main(args + ["--dev-suite", "nope", "--out-dir", str(tmp_path / "r")]) == 2
    assert "no suite 'nope'" in capsys.readouterr().err


def test_a_run_on_part_of_the_pool_chooses_on_its_own_domain_only():
    """Of the in-domain dev, a run reads only the questions in the domain of its own training
    questions: the first pool holds no regulator question, so it does not choose on the dev's."""
    from pathlib import Path

    from fgpo_core.evaluation.domains import question_domains
    from fgpo_core.experiments.run_setup import dev_data
    from fgpo_core.genomics.benchmarks import read_questions

    root = Path(__file__).resolve().parent.parent
    bench, tables = root / "data" / "benchmarks" / "cpu", root / "data" / "tables" / "cpu" / "reader"
    train = read_questions(bench / "train.jsonl")
    indev = read_questions(bench / "indev.jsonl")
    first = train[:256]
    assert "regulator" not in {q.family for q in first} and "regulator" in {q.family for q in indev}
    qs, t = dev_data(RunSetup(str(bench), str(tables), n_train=256, dev_suite="indev"), first)
    assert list(t.question_ids) == [q.id for q in qs]
    assert set(question_domains({"d": qs}, first)["d"].values()) == {"ID"}
    dropped = [q for q in indev if q.id not in set(t.question_ids)]
    assert dropped and {q.family for q in dropped} == {"regulator"}  # only what the first pool never saw
    whole, _ = dev_data(RunSetup(str(bench), str(tables), dev_suite="indev"), train)
    assert [q.id for q in whole] == [q.id for q in indev]  # the whole pool reads all of it
    mixed, _ = dev_data(RunSetup(str(bench), str(tables), dev_suite="dev"), first)
    assert len(mixed) == len(read_questions(bench / "dev.jsonl"))  # the mixed-domain dev is read as it is
    with pytest.raises(ValueError, match="none of the 250 in-domain dev questions"):
        dev_data(RunSetup(str(bench), str(tables), dev_suite="indev"), [])


def test_a_recorded_run_folder_is_found_from_a_chapters_working_directory(tmp_path, monkeypatch):
    """A manifest records folders relative to where the run started (the repository root); a
    chapter reads from notebooks/: the folder of that name beside the run, else the recorded path
    under the folder above that holds it (a run started from a run in another folder)."""
    from pathlib import Path

    from fgpo_core.experiments.run_record import recorded_folder

    for d in ("runs/lm/warm", "runs/lm/fgpo", "runs/again/fgpo", "notebooks"):
        (tmp_path / d).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "notebooks")
    assert recorded_folder("runs/lm/warm", "../runs/lm/fgpo").resolve() == (tmp_path / "runs/lm/warm")
    assert recorded_folder("runs/lm/warm", "../runs/again/fgpo").resolve() == (tmp_path / "runs/lm/warm")
    assert recorded_folder("runs/again/fgpo", "../runs/again/x") == Path("../runs/again/fgpo")
    assert recorded_folder("elsewhere/gone", "../runs/again/fgpo") == Path("../runs/again/gone")
