"""The in-domain / out-of-domain split and its scores, on hand-made data with known answers."""

import numpy as np
import pandas as pd
import pytest

from fgpo_core.evaluation.domains import domain_of
from fgpo_core.experiments.study import Study
from fgpo_core.reports.companion import domain_split, id_ood_checkpoints, id_ood_scores
from fgpo_core.table import RewardTable

TRAIN = ("cpg", "promoter", "repeat", "splice")


def test_domain_rule():
    assert domain_of("core", "cpg", TRAIN) == "ID"
    assert domain_of("core", "taxonomy", TRAIN) == "OOD"
    assert domain_of("mosaic", "tf_motif", TRAIN) == "OOD"
    assert domain_of("microbe", "promoter", TRAIN) == "OOD"  # another source of sequences


def _table(fams, right_mask, prefix):
    n = len(fams)
    correct = np.zeros((n, 16), dtype=bool)
    correct[:, right_mask] = True
    return RewardTable(correct, 4, np.array(fams), question_ids=np.array([f"{prefix}{i}" for i in range(n)]))


def test_scores_and_checkpoints_pool_questions_by_domain():
    core = _table(["cpg", "cpg", "taxonomy", "tf_motif"], 3, "c")
    microbe = _table(["promoter", "taxonomy"], 3, "m")
    tables = {"core": core, "microbe": microbe}
    split = domain_split(tables, TRAIN)
    assert split.groupby("domain").n.sum().to_dict() == {"ID": 2, "OOD": 4}
    picks = pd.DataFrame(
        {
            "method": "sft",
            "seed": 0,
            "suite": ["core"] * 4 + ["microbe"] * 2,
            "question_id": ["c0", "c1", "c2", "c3", "m0", "m1"],
            "mask": [3, 0, 3, 3, 0, 3],
        }
    )
    st = Study({}, picks, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    sc = id_ood_scores(st, tables, TRAIN).iloc[0]
    assert (sc["ID"], sc["n ID"]) == (50.0, 2)
    assert (sc["OOD"], sc["n OOD"]) == (75.0, 4)
    ck = pd.DataFrame(
        {
            "method": "sft",
            "seed": 0,
            "step": 1,
            "epoch": 1.0,
            "suite": ["core", "core", "core", "microbe", "core"],
            "family": ["cpg", "taxonomy", "tf_motif", "promoter", "all"],
            "n": [2, 1, 1, 1, 4],
            "accuracy": [50.0, 100.0, 0.0, 100.0, 50.0],
            "tools": 1.0,
        }
    )
    st.checkpoints = ck
    c = id_ood_checkpoints(st, TRAIN).iloc[0]
    assert c["ID"] == pytest.approx(50.0) and c["OOD"] == pytest.approx(100 * 2 / 3)
    st.checkpoints = None
    with pytest.raises(ValueError, match="checkpoints"):
        id_ood_checkpoints(st, TRAIN)


def test_the_lm_study_table_and_tests_on_known_picks():
    from fgpo_core.reports.companion import lm_companion_table, lm_companion_tests, parse_lm_companion_method

    assert parse_lm_companion_method("sft20-fgpo80-r16") == ("sft20-fgpo80", 16)
    with pytest.raises(ValueError, match="ARM-rRANK"):
        parse_lm_companion_method("sft")
    # 10 ID core questions (cpg) and 10 OOD (taxonomy); subset 3 is right, anything else wrong
    core = _table(["cpg"] * 10 + ["taxonomy"] * 10, 3, "c")
    tables = {"core": core}
    ids = [f"c{i}" for i in range(20)]
    right = {
        "sft": [3] * 10 + [0] * 10,  # ID 100, OOD 0
        "fgpo": [0] * 10 + [3] * 5 + [-1] * 5,  # ID 0, OOD 50, 5 format failures
        "sft20-fgpo80": [3] * 8 + [0] * 2 + [3] * 9 + [0],
    }  # ID 80, OOD 90
    picks = pd.concat(
        [
            pd.DataFrame({"method": f"{arm}-r{r}", "seed": 0, "suite": "core", "question_id": ids, "mask": masks})
            for r in (4, 16)
            for arm, masks in right.items()
        ],
        ignore_index=True,
    )
    t = lm_companion_table(picks, tables, TRAIN)
    assert t.loc[("sft", 4), "ID"] == 100.0 and t.loc[("sft", 4), "OOD"] == 0.0
    assert t.loc[("fgpo", 16), "OOD"] == 50.0 and t.loc[("fgpo", 16), "format failures (%)"] == 25.0
    assert t.loc[("sft", 4), "tools"] == 1.0 and t.loc[("fgpo", 16), "tools"] == pytest.approx(2 * 5 / 15)
    assert t.loc[("sft20-fgpo80", 4), "ID"] == 80.0 and t.loc[("sft20-fgpo80", 4), "n OOD"] == 10
    tests = lm_companion_tests(picks, tables, TRAIN)
    row = tests.loc[(4, "OOD", "sft")]
    assert (row["sft20-fgpo80 only"], row["other only"], row["n"]) == (9, 0, 10)
    assert row["p"] == pytest.approx(2 * 0.5**9)
    assert tests.loc[(16, "ID", "fgpo"), "sft20-fgpo80 only"] == 8


def test_the_start_joins_every_rank_and_training_is_tested_against_it(tmp_path):
    import json

    from fgpo_core.reports.companion import lm_companion_table, lm_companion_tests, load_lm_companion, with_start

    core = _table(["cpg"] * 10 + ["taxonomy"] * 10, 3, "c")
    tables = {"core": core}
    ids = [f"c{i}" for i in range(20)]
    picks = pd.concat(
        [
            pd.DataFrame({"method": f"{arm}-r{r}", "seed": 0, "suite": "core", "question_id": ids, "mask": masks})
            for r in (4, 16)
            for arm, masks in (("sft", [3] * 10 + [0] * 10), ("fgpo", [3] * 10 + [3] * 10))
        ],
        ignore_index=True,
    )
    runs = tmp_path / "runs"
    (runs / "lm" / "warmup" / "eval").mkdir(parents=True)
    study = runs / "lm-companion"
    study.mkdir()
    # the start: right on the first 5 ID and 2 OOD questions; its evaluation holds extra questions, shuffled
    start = pd.DataFrame(
        {"question_id": ids[::-1] + ["c99"], "generation_pick": [0] * 8 + [3] * 2 + [0] * 5 + [3] * 5 + [3]}
    )
    start.to_parquet(runs / "lm" / "warmup" / "eval" / "core.parquet")
    with pytest.raises(FileNotFoundError, match="no picks.parquet"):
        load_lm_companion(study)
    picks.to_parquet(study / "picks.parquet")
    (study / "manifest.json").write_text(json.dumps({"config": {"folder": "lm-companion", "start": "lm/warmup"}}))
    (study / "sft-r4").mkdir()
    (study / "sft-r4" / "manifest.json").write_text(
        json.dumps({"objective": "sft", "n_train": 256, "config": {"epochs": 1, "lora_r": 4}, "train_seconds": 512.0})
    )
    (study / "fgpo-r4").mkdir()  # unfinished: no manifest
    from fgpo_core.reports.companion import lm_companion_costs

    cost = lm_companion_costs(study)
    assert list(cost.index) == ["sft-r4"] and cost.loc["sft-r4", "seconds per visit"] == 2.0
    allp = load_lm_companion(study)
    assert list(dict.fromkeys(allp.method))[:2] == ["start-r4", "start-r16"] and len(allp) == len(picks) + 40
    t = lm_companion_table(allp, tables, TRAIN)
    assert (t.loc[("start", 4), "ID"], t.loc[("start", 16), "OOD"]) == (50.0, 20.0)
    vs = lm_companion_tests(allp, tables, TRAIN, arm="start")
    assert (vs.loc[(16, "OOD", "fgpo"), "other only"], vs.loc[(16, "OOD", "fgpo"), "start only"]) == (8, 0)
    assert vs.loc[(4, "ID", "sft"), "p"] == pytest.approx(2 * 0.5**5)
    import matplotlib

    matplotlib.use("Agg")
    from fgpo_core.book.plots import plot_lm_companion

    fig = plot_lm_companion(t)
    assert [ax.get_title() for ax in fig.axes] == ["LoRA rank 4", "LoRA rank 16"]
    assert len(fig.axes[0].texts) == 2  # an arrow from the start to each arm
    assert fig.axes[1].collections[0].get_offsets().tolist() == [[50.0, 20.0]]  # the start
    (runs / "lm" / "warmup" / "eval" / "core.parquet").unlink()
    pd.DataFrame({"question_id": ids[:19], "generation_pick": 0}).to_parquet(
        runs / "lm" / "warmup" / "eval" / "core.parquet"
    )
    with pytest.raises(ValueError, match="lacks 1 of the study's core questions"):
        with_start(picks, runs / "lm" / "warmup" / "eval")


def _seed_scores(means: dict, spread: dict | None = None, seeds: int = 5) -> pd.DataFrame:
    """Per (method, seed) ID and OOD accuracies: ``means`` maps a method to (ID, OOD), ``spread``
    to a per-seed offset added to both (default none)."""
    rows = []
    for m, (i, o) in means.items():
        for s in range(seeds):
            off = (spread or {}).get(m, 0.0) * (s - (seeds - 1) / 2)
            rows.append({"method": m, "seed": s, "ID": i + off, "OOD": o + off})
    return pd.DataFrame(rows)


def test_budget_tests_compare_settings_over_seeds():
    from scipy.stats import ttest_rel

    from fgpo_core.reports.companion import against_best, budget_tests

    per = pd.DataFrame({"a": [50.0, 51.0, 52.0], "b": [49.0, 49.5, 51.5], "c": [50.5, 51.2, 52.1]})
    t = against_best(per)
    assert t.best.tolist() == [False, False, True] and np.isnan(t.loc["c", "p against best"])
    assert t.loc["a", "p against best"] == pytest.approx(ttest_rel(per.c, per.a).pvalue)
    assert t.loc["b", "sd"] == pytest.approx(per.b.std(ddof=1)) and t.seeds.tolist() == [3, 3, 3]
    scores = _seed_scores({"rl": (50.0, 40.0), "mix": (52.0, 44.0), "sft": (30.0, 20.0)}, {"rl": 0.3, "mix": 0.1})
    b = budget_tests(scores, {0: "rl", 20: "mix", 100: "sft", 50: "absent"})
    assert list(b.index) == [0, 20, 100] and b.index.name == "SFT share (%)"
    assert b.loc[20, "best"] and b.loc[0, "mean"] == pytest.approx(45.0) and b.loc[100, "p against best"] < 1e-6
    assert budget_tests(scores, {0: "rl", 20: "mix"}, column="OOD").loc[0, "mean"] == pytest.approx(40.0)
    with pytest.raises(ValueError, match="none of the budget's methods"):
        budget_tests(scores, {0: "nope"})


def test_id_ood_verdicts_compare_two_methods_by_domain_with_the_books_rule():
    from fgpo_core.evaluation.difference import compare
    from fgpo_core.reports.companion import id_ood_verdicts

    rng = np.random.default_rng(1)
    fams = ["cpg"] * 30 + ["taxonomy"] * 30
    correct = rng.random((60, 16)) < 0.5
    core = RewardTable(correct, 4, np.array(fams), question_ids=np.array([f"c{i}" for i in range(60)]))
    qid = [f"c{i}" for i in range(60)]
    picks = pd.concat(
        [
            pd.DataFrame(
                {
                    "method": m,
                    "seed": s,
                    "suite": "core",
                    "question_id": qid,
                    "mask": rng.integers(0, 16, 60) if m == "a" else np.full(60, s + 1),
                }
            )
            for m in ("a", "b")
            for s in (0, 1, 2)
        ],
        ignore_index=True,
    )
    v = id_ood_verdicts(picks, {"core": core}, TRAIN, "a", "b")
    assert set(v) == {"ID", "OOD"}
    for d, rows in (("ID", slice(0, 30)), ("OOD", slice(30, 60))):
        right = {
            m: [
                correct[np.arange(60), picks[(picks.method == m) & (picks.seed == s)]["mask"].to_numpy()][rows]
                for s in (0, 1, 2)
            ]
            for m in ("a", "b")
        }
        want = compare(right["a"], right["b"])
        assert v[d].gap == pytest.approx(want.gap) and v[d].p_mcnemar == pytest.approx(want.p_mcnemar)
        assert v[d].is_difference == want.is_difference and v[d].n_questions == 30
    with pytest.raises(ValueError, match="share no seed"):
        id_ood_verdicts(picks[picks.method == "a"], {"core": core}, TRAIN, "a", "b")
