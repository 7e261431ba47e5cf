"""The post-training study on the LM selector (``fgpo lm-companion``): its plan, its questions and its
orchestration, with training and evaluation replaced by fakes (merging an adapter and reading a
merged run back are tested with the real model in test_runs)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fgpo_core.cli import main
from fgpo_core.experiments import lm_companion
from fgpo_core.experiments.lm_companion import LMCompanionConfig, companion_questions, lm_companion_plan


def test_the_plan_splits_one_budget_and_every_arm_starts_from_the_merged_warmup():
    plan = {p["name"]: p for p in lm_companion_plan(LMCompanionConfig(budget=256, sft_share=0.2, ranks="4,64"))}
    assert list(plan) == [
        "sft-r4",
        "fgpo-r4",
        "sft20-r4",
        "sft20-fgpo80-r4",
        "sft-r64",
        "fgpo-r64",
        "sft20-r64",
        "sft20-fgpo80-r64",
    ]
    assert plan["sft20-r4"]["n_train"] == 48 and plan["sft20-fgpo80-r4"]["n_train"] == 208  # 51.2 -> 3 steps
    assert plan["sft20-fgpo80-r4"]["init"] == "sft20-r4" and plan["sft20-r4"]["method"] is None
    assert all(p["init"] == "start" for n, p in plan.items() if "fgpo80" not in n)
    assert {p["n_train"] for n, p in plan.items() if not n.startswith("sft20")} == {256}
    for bad in (dict(budget=16), dict(sft_share=0.0), dict(sft_share=1.0), dict(ranks="4,x"), dict(ranks="0")):
        with pytest.raises(ValueError):
            lm_companion_plan(LMCompanionConfig(**bad))


def test_the_help_renders(capsys):
    with pytest.raises(SystemExit) as e:
        main(["lm-companion", "--help"])
    assert e.value.code == 0 and "--sft-share" in capsys.readouterr().out


def test_questions_are_split_by_domain_in_core_order(ci_bench):
    from fgpo_core.genomics.benchmarks import load_benchmark

    bench, _ = ci_bench
    qs = companion_questions(bench, ["cpg", "promoter", "splice"], 3, 2, 4)
    _, suites = load_benchmark(bench)
    fam = {q.id: q.family for q in suites["core"]}
    assert [fam[i] in ("cpg", "promoter", "splice") for i in qs["core"]].count(True) == 3 and len(qs["core"]) == 5
    order = [q.id for q in suites["core"]]
    assert qs["core"] == sorted(qs["core"], key=order.index)
    assert qs["microbe"] == [q.id for q in suites["microbe"][:4]]


def test_every_run_is_trained_as_planned_and_the_picks_gathered(tmp_path, monkeypatch):
    seen = []

    def ensure_trained(objective, setup, config, progress=True, isolate=False):
        seen.append(
            (
                objective,
                Path(setup.out_dir).name,
                Path(setup.init_adapter).name,
                setup.merge_init,
                setup.n_train,
                getattr(config, "lora_r"),
                getattr(config, "select_by", None),
            )
        )
        return Path(setup.out_dir)

    def evaluate_run(run_dir, bench_dir, suites, keep, limit, out_dir, progress=True, scoring=True):
        assert not scoring and list(suites) == ["core", "microbe"]
        out = {}
        for s in suites:
            p = Path(out_dir) / f"{s}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"question_id": limit[s], "generation_pick": [1] * len(limit[s])}).to_parquet(p)
            out[s] = p
        return out

    monkeypatch.setattr(lm_companion, "ensure_trained", ensure_trained)
    monkeypatch.setattr(lm_companion, "evaluate_run", evaluate_run)
    monkeypatch.setattr(lm_companion, "companion_questions", lambda *a: {"core": ["c1", "c2"], "microbe": ["m1"]})
    monkeypatch.setattr("fgpo_core.table.load_table", lambda d: type("T", (), {"family": np.array(["cpg"])})())
    cfg = LMCompanionConfig(runs_dir=str(tmp_path), ranks="16")
    with pytest.raises(FileNotFoundError, match="format warm-up"):
        lm_companion.run_lm_companion(cfg, progress=False)
    (tmp_path / "lm" / "warmup-stage2").mkdir(parents=True)
    (tmp_path / "lm" / "warmup-stage2" / "manifest.json").write_text("{}")
    out = lm_companion.run_lm_companion(cfg, progress=False)
    assert seen == [
        ("sft", "sft-r16", "warmup-stage2", True, 256, 16, None),
        ("fgpo", "fgpo-r16", "warmup-stage2", True, 256, 16, "last"),
        ("sft", "sft20-r16", "warmup-stage2", True, 48, 16, None),
        ("fgpo", "sft20-fgpo80-r16", "sft20-r16", False, 208, 16, "last"),
    ]
    picks = pd.read_parquet(out / "picks.parquet")
    assert list(dict.fromkeys(picks.method)) == ["sft-r16", "fgpo-r16", "sft20-fgpo80-r16"]
    assert len(picks) == 9 and set(picks.columns) == {"method", "seed", "suite", "question_id", "mask"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["questions"] == {"core": 2, "microbe": 1} and manifest["training_families"] == ["cpg"]
