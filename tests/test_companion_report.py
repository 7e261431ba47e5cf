"""The in-domain / out-of-domain split and its scores, on hand-made data with known answers."""

import numpy as np
import pandas as pd
import pytest

from fgpo_core.evaluation.domains import domain_of
from fgpo_core.reports import companion as C
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


CLASS = {"cpg": "seen family and organism", "taxonomy": "new family", "tf_motif": "twin family"}


def _rule(tables):
    """A hand-made domain rule: cpg in domain, taxonomy (no twin) and tf_motif (a twin) out of domain."""
    cls = {s: dict(zip(t.question_ids, [CLASS[f] for f in t.family])) for s, t in tables.items()}
    dom = {s: {q: "ID" if c.startswith("seen") else "OOD" for q, c in m.items()} for s, m in cls.items()}
    return dom, cls


def test_the_lm_study_table_and_tests_on_known_picks():
    from fgpo_core.reports.companion import lm_arm_table, lm_companion_tests, parse_lm_companion_method

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
    t = lm_arm_table(C.read_picks(picks, tables, *_rule(tables)), {"sft": "SFT"}).set_index(["arm", "LoRA rank"])
    assert t.loc[("SFT", "4"), "in domain"] == 100.0 and t.loc[("SFT", "4"), "out of domain"] == 0.0
    assert t.loc[("fgpo", "16"), "out of domain"] == 50.0 and t.loc[("fgpo", "16"), "format failures (%)"] == 25.0
    assert t.loc[("SFT", "4"), "tools"] == 1.0 and t.loc[("fgpo", "16"), "tools"] == pytest.approx(2 * 5 / 15)
    assert (
        t.loc[("sft20-fgpo80", "4"), "in domain"] == 80.0
        and list(t.index.get_level_values(1)) == ["4"] * 3 + ["16"] * 3
    )
    tests = lm_companion_tests(picks, tables, TRAIN)
    row = tests.loc[(4, "OOD", "sft")]
    assert (row["sft20-fgpo80 only"], row["other only"], row["n"]) == (9, 0, 10)
    assert row["p"] == pytest.approx(2 * 0.5**9)
    assert tests.loc[(16, "ID", "fgpo"), "sft20-fgpo80 only"] == 8


def test_the_start_joins_every_rank_and_training_is_tested_against_it(tmp_path, monkeypatch):
    import json

    from fgpo_core.reports.companion import lm_arm_table, lm_companion_tests, load_lm_companion, with_start

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
    (study / "manifest.json").write_text(
        json.dumps({"config": {"folder": "lm-companion", "start": "lm/warmup", "budget": 5}})
    )
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
    t = lm_arm_table(C.read_picks(allp, tables, *_rule(tables)), {"start": "the start"})
    assert t.arm.tolist() == ["the start", "sft", "fgpo", "sft", "fgpo"]  # the start once, then rank by rank
    assert (t["in domain"].iloc[0], t["out of domain"].iloc[0], t["LoRA rank"].iloc[0]) == (50.0, 20.0, "–")
    vs = lm_companion_tests(allp, tables, TRAIN, arm="start")
    assert (vs.loc[(16, "OOD", "fgpo"), "other only"], vs.loc[(16, "OOD", "fgpo"), "start only"]) == (8, 0)
    assert vs.loc[(4, "ID", "sft"), "p"] == pytest.approx(2 * 0.5**5)
    seen = []
    monkeypatch.setattr(C, "test_domains", lambda bench, suites, ids: seen.append(ids) or _rule(tables))
    g = C.lm_gap(study, {**tables, "train": core}, "bench", "fgpo-r16", "start-r16")
    assert g.gap == pytest.approx(80.0) and g.a_better  # OOD: FGPO right on all 10, the start on 2
    assert seen == [ids[:5]]  # the domains are read against the questions it trained on
    (runs / "lm" / "warmup" / "eval" / "core.parquet").unlink()
    pd.DataFrame({"question_id": ids[:19], "generation_pick": 0}).to_parquet(
        runs / "lm" / "warmup" / "eval" / "core.parquet"
    )
    with pytest.raises(ValueError, match="lacks 1 of the study's core questions"):
        with_start(picks, runs / "lm" / "warmup" / "eval")


def _head_picks(correct, seeds=3, rng=None):
    """Picks of methods a (random subsets) and b (subset seed + 1) on core's questions c0..."""
    rng = rng or np.random.default_rng(1)
    n = len(correct)
    qid = [f"c{i}" for i in range(n)]
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "method": m,
                    "seed": s,
                    "suite": "core",
                    "question_id": qid,
                    "mask": rng.integers(0, 16, n) if m == "a" else np.full(n, s + 1),
                }
            )
            for m in ("a", "b")
            for s in range(seeds)
        ],
        ignore_index=True,
    )


def test_reads_accuracies_and_shares_by_part():
    fams = ["cpg"] * 4 + ["taxonomy"] * 2 + ["tf_motif"] * 2
    core = _table(fams, 3, "c")  # subset 3 right, every other wrong
    picks = pd.DataFrame(
        {
            "method": "m",
            "seed": [0] * 8 + [1] * 8,
            "suite": "core",
            "question_id": [f"c{i}" for i in range(8)] * 2,
            "mask": [3, 3, 0, 0, 3, 1, 3, 3] + [3, 0, 0, 0, 3, 3, -1, 3],
        }
    )
    r = C.read_picks(picks, {"core": core}, *_rule({"core": core}), fixed={"No-Tool": 0})
    assert r.accuracy("m", "in domain") == pytest.approx(100 * 3 / 8)
    assert r.accuracy("m", "out of domain") == pytest.approx(100 * 6 / 8)
    assert r.accuracy("m", "TF-motif, the twin") == pytest.approx(75.0)  # the failure counts wrong
    assert r.accuracy("m", "taxonomy, unseen organisms") == pytest.approx(75.0)
    assert r.accuracy("No-Tool") == 0.0 and r.per_seed("m", "in domain").tolist() == [50.0, 25.0]
    assert r.share("m", "empty") == pytest.approx(100 * 5 / 16) and r.top_subset("m") == 3
    assert r.share("m", "tool", "T2") == pytest.approx(100 * 9 / 16)  # subset 3 = T1+T2; -1 calls nothing
    t = C.accuracy_table(r, {"the method": "m"})
    assert list(t.columns)[:2] == ["in domain (4)", "out of domain (4)"]
    with pytest.raises(ValueError, match="m has no pick on some of core"):
        C.read_picks(picks.iloc[1:], {"core": core}, *_rule({"core": core}))


def test_domain_gaps_are_the_paired_bootstrap_of_each_part_with_holm_over_the_page():
    from fgpo_core.evaluation.bootstrap import holm, paired_bootstrap, strata_codes

    rng = np.random.default_rng(1)
    fams = ["cpg"] * 30 + ["taxonomy"] * 30
    correct = rng.random((60, 16)) < 0.5
    correct[:30, 1:4] = True  # in domain, b's subsets are always right
    core = RewardTable(correct, 4, np.array(fams), question_ids=np.array([f"c{i}" for i in range(60)]))
    r = C.read_picks(_head_picks(correct), {"core": core}, *_rule({"core": core}))
    g = C.domain_gaps(r, {"a-b": ("a", "b")}, resamples=500)
    assert g.split.tolist() == ["in domain", "out of domain"]
    for part, rows in (("in domain", slice(0, 30)), ("out of domain", slice(30, 60))):
        want = paired_bootstrap(
            r.correct["a"][:, rows], r.correct["b"][:, rows], strata_codes(["core"] * 30, fams[rows]), resamples=500
        )
        got = C.gap_of(g, "a-b", part)
        assert (got.gap, got.low, got.high) == pytest.approx((want.gap, want.low, want.high))
    ind = C.gap_of(g, "a-b", "in domain")
    assert ind.b_better and ind.is_difference and not ind.a_better and ind.negated().a_better
    assert C.Gap(0.0, -0.7, 0.7, 1.0).is_level and not C.Gap(0.0, -1.0, 0.5, 1.0).is_level
    assert not ind.is_level
    h1, h2 = C.with_holm(g, g.iloc[:1])
    assert h2.p_holm.tolist() == pytest.approx(holm(np.r_[g.p, g.p.iloc[:1]])[2:].tolist())
    assert C.gap_table(g, {"a-b": "a against b"}).columns.tolist() == [
        "comparison (points)",
        "in domain",
        "out of domain",
    ]
    with pytest.raises(ValueError, match="no comparison"):
        C.gap_of(g, "b-a", "in domain")


def test_the_gap_table_writes_a_zero_gap_as_the_prose_does_and_stars_holm():
    g = pd.DataFrame(
        [
            {"comparison": "a-b", "split": "in domain", "gap": -0.02, "low": -0.7, "high": 0.7, "p_holm": 0.9},
            {"comparison": "a-b", "split": "out of domain", "gap": 3.84, "low": 2.0, "high": 5.7, "p_holm": 0.01},
        ]
    )
    t = C.gap_table(g, {"a-b": "a against b"}).set_index("comparison (points)")
    assert t.loc["a against b", "in domain"] == "+0.0 [\u22120.7, +0.7]"
    assert t.loc["a against b", "out of domain"] == "+3.8 [+2.0, +5.7]\u00a0*"
    with pytest.raises(ValueError, match="no comparison named 'x'"):
        C.gap_table(g, {"x": "X"})


def test_setting_frame_gives_the_mean_and_sd_over_seeds():
    rng = np.random.default_rng(2)
    correct = rng.random((40, 16)) < 0.5
    fams = ["cpg"] * 20 + ["taxonomy"] * 20
    core = RewardTable(correct, 4, np.array(fams), question_ids=np.array([f"c{i}" for i in range(40)]))
    r = C.read_picks(_head_picks(correct), {"core": core}, *_rule({"core": core}))
    f = C.setting_frame(r, {1: "b", 2: "absent"})
    per = [100 * correct[:20, s + 1].mean() for s in range(3)]
    assert list(f.index) == [1] and f.loc[1, "ID"] == pytest.approx(np.mean(per))
    assert f.loc[1, "ID sd"] == pytest.approx(np.std(per, ddof=1))


def test_the_domains_follow_the_books_rule_for_the_questions_trained_on(ci_bench):
    from fgpo_core.genomics.benchmarks import load_benchmark

    folder, _ = ci_bench
    _, qs = load_benchmark(folder)
    dom, cls = C.test_domains(folder, ["core"])
    assert {cls["core"][q.id] for q in qs["core"] if q.family == "tf_motif"} == {"twin family"}
    assert all(dom["core"][q.id] == "OOD" for q in qs["core"] if q.family == "tf_motif")
    no_reg = [q.id for q in qs["train"] if q.family != "regulator"]
    _, cls2 = C.test_domains(folder, ["core"], no_reg)
    assert {cls2["core"][q.id] for q in qs["core"] if q.family == "tf_motif"} == {"new family"}
    with pytest.raises(ValueError, match="training pool lacks 1"):
        C.test_domains(folder, ["core"], ["nope"])
