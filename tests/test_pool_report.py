"""The whole pool's runs read back: each run's dev course with its training CPU time and kept step,
its evaluated snapshots, and the pairs compared at equal visits, at equal time and as kept, checked
on hand-made runs whose answers are known."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from fgpo_core.reports.pool import dev_course, pool_comparisons, pool_configs, pool_snapshots, snapshot_folder

RUNS = {"F": "f", "G": "g"}


def _run(root, name, per_step, cpu_per_step, dev, n_steps, finished=True):
    """A finished run (its manifest) or an unfinished GRPO-style one (dev.json and a trainer state)."""
    folder = root / name
    steps = [
        {"step": s, "visits": s * per_step, "seconds": 1.0, "cpu_seconds": cpu_per_step} for s in range(1, n_steps + 1)
    ]
    if finished:
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"steps": steps, "dev": dev, "config": {"lr": 1.0}}))
    else:
        ck = folder / "ckpt" / f"checkpoint-{n_steps}"
        ck.mkdir(parents=True)
        (folder / "ckpt" / "config.json").write_text(json.dumps({"prompts_per_step": per_step, "lr": 2.0}))
        (folder / "ckpt" / "dev.json").write_text(json.dumps(dev))
        (ck / "trainer_state.json").write_text(json.dumps({"log_history": steps}))


def _evaluated(root, run, step):
    ev = snapshot_folder(root, run, step) / "eval"
    ev.mkdir(parents=True)
    pd.DataFrame({"question_id": ["q1", "q2"], "family": ["a", "b"], "generation_pick": [1, 3]}).to_parquet(
        ev / "core.parquet"
    )


def _dev(step, visits, acc):
    return {"step": step, "visits": visits, "gen_accuracy": acc, "accuracy": acc - 1, "gen_tools": 2.0}


def test_the_course_times_each_evaluation_and_keeps_the_first_best(tmp_path):
    # F: 10 visits and 1 CPU-second a step; G: 10 visits and 8 CPU-seconds a step
    _run(tmp_path, "f", 10, 3600.0, [_dev(0, 0, 50), _dev(4, 40, 55), _dev(8, 80, 55), _dev(12, 120, 54)], 12)
    _run(tmp_path, "g", 10, 3 * 3600.0, [_dev(0, 0, 50), _dev(2, 20, 52), _dev(4, 40, 53)], 4, finished=False)
    c = dev_course(tmp_path, RUNS)
    f = c[c.run == "F"].set_index("step")
    g = c[c.run == "G"].set_index("step")
    assert f.cpu_hours.tolist() == [0.0, 4.0, 8.0, 12.0] and g.cpu_hours.tolist() == [0.0, 6.0, 12.0]
    assert f.kept.tolist() == [False, True, False, False]  # ties go to the first best
    assert g.kept.tolist() == [False, False, True] and f.finished.all() and not g.finished.any()
    assert f.loc[4, "scoring"] == 54 and f.loc[4, "generation"] == 55
    assert pool_configs(tmp_path, RUNS) == {"F": {"lr": 1.0}, "G": {"prompts_per_step": 10, "lr": 2.0}}

    assert pool_snapshots(tmp_path, c, RUNS) == {}
    for run, step in (("f", 4), ("f", 12), ("g", 4), ("f", 8)):
        _evaluated(tmp_path, run, step)
    snaps = pool_snapshots(tmp_path, c, RUNS)
    assert set(snaps) == {("F", 4), ("F", 8), ("F", 12), ("G", 4)}
    assert snaps[("F", 4)].picks("core").tolist() == [1, 3]
    pairs = pool_comparisons(c, snaps, fgpo="F", grpo="G")
    # G's last evaluated step 4: 40 visits (F's step 4), 12 CPU-hours (F's step 12); kept F 4, G 4
    assert pairs == {"equal visits": (4, 4), "equal time": (12, 4), "kept": (4, 4)}


def test_a_pair_whose_snapshots_are_not_evaluated_is_left_out(tmp_path):
    _run(tmp_path, "f", 10, 3600.0, [_dev(0, 0, 50), _dev(4, 40, 55)], 4)
    _run(tmp_path, "g", 10, 3600.0, [_dev(0, 0, 50), _dev(4, 40, 51)], 4)
    c = dev_course(tmp_path, RUNS)
    assert pool_comparisons(c, {("F", 4)}, fgpo="F", grpo="G") == {}
    assert pool_comparisons(c, {("F", 4), ("G", 4)}, fgpo="F", grpo="G") == {
        "equal visits": (4, 4),
        "equal time": (4, 4),
        "kept": (4, 4),
    }


def test_answers_split_by_suite_and_domain_against_a_count_by_hand():
    import numpy as np

    from fgpo_core.reports.lm_runs import SelectorRun
    from fgpo_core.reports.pool import accuracy_by_part, question_answers
    from fgpo_core.table import RewardTable

    # 1 tool, 2 subsets: subset 0 right on q0 and m0, subset 1 right on q1, q2 and m1
    core = RewardTable(
        np.array([[1, 0], [0, 1], [0, 1]]),
        1,
        np.array(["seen", "seen", "unseen"]),
        question_ids=np.array(["q0", "q1", "q2"]),
    )
    microbe = RewardTable(
        np.array([[1, 0], [0, 1]]), 1, np.array(["seen", "seen"]), question_ids=np.array(["m0", "m1"])
    )

    def run(name, core_picks, microbe_picks):
        return SelectorRun(
            name,
            None,
            None,
            {
                "core": pd.DataFrame({"question_id": ["q0", "q1", "q2"], "generation_pick": core_picks}),
                "microbe": pd.DataFrame({"question_id": ["m0", "m1"], "generation_pick": microbe_picks}),
            },
        )

    sel = {"a": run("a", [0, 1, -1], [1, 1]), "b": run("b", [1, 1, 1], [0, 0])}
    ans, picks = question_answers(sel, {"core": core, "microbe": microbe}, ["seen"])
    assert ans.domain.tolist() == ["ID", "ID", "OOD", "OOD", "OOD"]  # microbe is out of domain whole
    assert ans.a.tolist() == [True, True, False, False, True] and picks.a.tolist() == [0, 1, -1, 1, 1]
    assert ans.attrs["best_fixed"] == 1 and ans["BestFixed*"].tolist() == [False, True, True, False, True]
    more = run("c", [0, 0, 0], [0, 0])  # evaluated on one more microbe question: read on the first's only
    more.evals["microbe"] = pd.DataFrame({"question_id": ["m1", "m0", "m9"], "generation_pick": [0, 1, 1]})
    assert question_answers({"a": sel["a"], "c": more}, {"core": core, "microbe": microbe}, ["seen"])[1].c.tolist() == [
        0,
        0,
        0,
        1,
        0,
    ]
    fewer = run("d", [0, 0, 0], [0, 0])
    fewer.evals["microbe"] = fewer.evals["microbe"].iloc[:1]
    with pytest.raises(ValueError, match="not evaluated on every microbe question"):
        question_answers({"a": sel["a"], "d": fewer}, {"core": core, "microbe": microbe}, ["seen"])
    acc = accuracy_by_part(ans, ["a", "b"])
    assert list(acc.columns) == ["core", "in domain", "out of domain", "microbe"]
    assert acc.loc["a"].round(6).tolist() == [round(200 / 3, 6), 100.0, round(100 / 3, 6), 50.0]
    assert acc.loc["b", "core"] == round(200 / 3, 10) or abs(acc.loc["b", "core"] - 200 / 3) < 1e-9
    assert acc.attrs["n"] == {"core": 3, "in domain": 2, "out of domain": 3, "microbe": 2}
    rule = {"core": {"q0": "ID", "q1": "OOD", "q2": "OOD"}, "microbe": {"m0": "ID", "m1": "OOD"}}
    by_rule, _ = question_answers(sel, {"core": core, "microbe": microbe}, ["seen"], domains=rule)
    assert by_rule.domain.tolist() == ["ID", "OOD", "OOD", "ID", "OOD"]  # the given rule, not the family
    mine = accuracy_by_part(ans, ["a"], {"first two": np.array([True, True, False, False, False])})
    assert mine.loc["a", "first two"] == 100.0 and mine.attrs["n"] == {"first two": 2}


def test_the_kept_step_is_the_one_the_run_recorded(tmp_path):
    import torch

    _run(tmp_path, "g", 10, 3600.0, [_dev(0, 0, 50), _dev(2, 20, 55), _dev(4, 40, 55)], 4, finished=False)
    _run(tmp_path, "f", 10, 3600.0, [_dev(0, 0, 50), _dev(4, 40, 55)], 4)
    torch.save({"params": [], "step": 4}, tmp_path / "g" / "ckpt" / "best.pt")  # its trainer broke the tie
    c = dev_course(tmp_path, RUNS)
    assert c[c.run == "G"].set_index("step").kept.tolist() == [False, False, True]


def test_equal_visits_pairs_the_nearest_visits_not_the_last_grpo_step(tmp_path):
    # F evaluated at 40 and 120 visits; G at 40 and 60: G's last (60) has no F step within 20 visits
    _run(tmp_path, "f", 10, 3600.0, [_dev(0, 0, 50), _dev(4, 40, 55), _dev(12, 120, 54)], 12)
    _run(tmp_path, "g", 10, 3 * 3600.0, [_dev(0, 0, 50), _dev(4, 40, 53), _dev(6, 60, 53)], 6, finished=False)
    c = dev_course(tmp_path, RUNS)
    pairs = pool_comparisons(c, {("F", 4), ("F", 12), ("G", 4), ("G", 6)}, fgpo="F", grpo="G")
    assert pairs["equal visits"] == (4, 4) and pairs["equal time"] == (12, 6)
    assert pool_comparisons(c, {("F", 4), ("F", 12), ("G", 6)}, fgpo="F", grpo="G")["equal visits"] == (4, 6)


def test_pick_routing_counts_subsets_and_a_tools_calls_by_family():
    from fgpo_core.reports.pool import pick_routing

    family = ["tf_motif", "tf_motif", "cpg", "cpg"]
    picks = {
        "A": [0b0010, 0b0010, 0b0001, -1],  # T2 on both TF-motif questions, none elsewhere
        "B": [0b0011, 0b0011, 0b0011, 0b0011],
    }
    r = pick_routing(picks, family, tool=1, subset_label=lambda a: f"s{a}")
    assert r.loc["A", "subsets picked"] == 2 and r.loc["A", "most picked"] == "s2"
    assert r.loc["A", "its share (%)"] == pytest.approx(50.0)  # the format failure counts in the share's base
    assert r.loc["A", "T2 on TF motifs (%)"] == 100.0 and r.loc["A", "T2 on the other families (%)"] == 0.0
    assert r.loc["B", "subsets picked"] == 1 and r.loc["B", "T2 on the other families (%)"] == 100.0


def test_checkpoint_costs_read_the_course_at_each_step():
    from fgpo_core.reports.pool import checkpoint_costs

    course = pd.DataFrame(
        {"run": ["F", "F", "G"], "step": [0, 20, 5], "visits": [0, 320, 80], "cpu_hours": [0.0, 0.3, 0.9]}
    )
    t = checkpoint_costs(
        course, {"F, step 20": ("F", 20), "G, step 5": ("G", 5)}, ["Warm-up", "F, step 20", "G, step 5", "All-Tools"]
    )
    assert t.loc["F, step 20", "visits"] == 320 and t.loc["G, step 5", "CPU hours"] == 0.9
    assert t.loc["Warm-up", "visits"] == 0 and np.isnan(t.loc["All-Tools", "visits"])


def test_versus_intervals_are_the_paired_bootstrap_with_holm_over_every_cell():
    from fgpo_core.evaluation.bootstrap import holm, paired_bootstrap, strata_codes
    from fgpo_core.reports.pool import interval_table, versus_intervals

    rng = np.random.default_rng(0)
    n = 300
    a = rng.random(n) < 0.7
    ans = pd.DataFrame(
        {
            "suite": np.where(np.arange(n) < 200, "core", "microbe"),
            "family": np.tile(["x", "y", "z"], n // 3),
            "A": a,
            "B": rng.random(n) < 0.4,
            "C": a.copy(),
        }
    )
    parts = {"all": np.ones(n, bool), "core": (ans.suite == "core").to_numpy()}
    out = versus_intervals(ans, parts, {"A vs B": ("A", "B"), "A vs C": ("A", "C")}, resamples=500)
    assert list(out.comparison) == ["A vs B", "A vs C"] * 2 and list(out.part) == ["all"] * 2 + ["core"] * 2
    m = parts["core"]
    want = paired_bootstrap(
        a[m].astype(float), ans.B[m].to_numpy(float), strata_codes(ans.suite[m], ans.family[m]), resamples=500
    )
    got = out[(out.comparison == "A vs B") & (out.part == "core")].iloc[0]
    assert (got.gap, got.low, got.high, got.p) == pytest.approx((want.gap, want.low, want.high, want.p_value))
    assert got.gap == pytest.approx(100 * (a[m].mean() - ans.B[m].mean())) and got.verdict == "a difference"
    same = out[out.comparison == "A vs C"]
    assert same.same.all() and (same.gap == 0).all() and (same.verdict == "level").all()
    tests = out[~out.same]  # identical answers test nothing: Holm runs over the other cells only
    assert np.allclose(tests.p_holm, holm(tests.p.to_numpy())) and (same.p_holm == 1).all()
    assert (out.p_holm >= out.p).all()
    table = interval_table(out, {"A vs B": "A minus B"}, {"all": "every question", "core": "core"})
    assert list(table.columns) == ["comparison (points)", "every question", "core"]
    assert table.loc[0, "core"].startswith(f"+{want.gap:.1f} [") and table.loc[0, "core"].endswith("*")
    same_row = interval_table(out, {"A vs C": "A minus C"}, {"all": "every question"})
    assert same_row.loc[0, "every question"].startswith("identical answers")
    with pytest.raises(ValueError, match="no interval"):
        interval_table(out, {"A vs B": "x"}, {"microbe": "microbe"})


def test_interval_text_shows_two_decimals_where_an_end_touches_zero():
    from fgpo_core.reports.pool import interval_text

    assert interval_text(1.4, 0.1, 2.6) == "+1.4 [+0.1, +2.6]"
    assert interval_text(-5.5, -6.9, -4.1) == "\u22125.5 [\u22126.9, \u22124.1]"
    assert interval_text(0.93, 0.004, 1.84) == "+0.93 [+0.00, +1.84]"  # on the boundary, not clear of it
    assert interval_text(-2.6, -5.5, -0.02) == "\u22122.60 [\u22125.50, \u22120.02]"
    assert interval_text(0.0, 0.0, 0.0, same=True) == "identical answers"


def test_book_parts_follow_family_and_organism_and_name_the_twin():
    from fgpo_core.genomics.benchmarks.schema import Question
    from fgpo_core.reports.pool import BOOK_PARTS, book_parts

    def q(qid, family, answer_label="x"):
        return Question(
            qid,
            "s",
            "test",
            family,
            "describe",
            "?",
            {L: L for L in "ABCD"},
            "A",
            {"": "ACGT"},
            {"answer_label": answer_label},
        )

    train = [q("t1", "regulator"), q("t2", "splice")]
    tests = [q("a", "splice"), q("b", "tf_motif"), q("c", "taxonomy", "Homo sapiens"), q("d", "taxonomy", "Kutzneria")]
    ans = pd.DataFrame({"suite": "core", "question_id": [x.id for x in tests]})
    parts = book_parts(ans, {"core": tests}, train)
    assert tuple(parts) == BOOK_PARTS
    assert parts["all"].tolist() == [True] * 4
    assert parts["in domain"].tolist() == [True, False, True, False]  # a seen organism asked about is in domain
    assert parts["out of domain"].tolist() == [False, True, False, True]
    assert parts["TF-motif"].tolist() == [False, True, False, False]
    with pytest.raises(ValueError, match="not among"):
        book_parts(ans.assign(question_id=["a", "b", "c", "zz"]), {"core": tests}, train)


def _indev(root, run, step, picks):
    f = root / "indev" / run / f"step-{step}" / "indev.parquet"
    f.parent.mkdir(parents=True)
    pd.DataFrame({"question_id": ["d0", "d1", "d2", "d3"], "generation_pick": picks}).to_parquet(f)


def test_indev_course_scores_each_snapshot_and_chooses_the_first_best(tmp_path):
    from fgpo_core.reports.pool import indev_course
    from fgpo_core.table import RewardTable

    correct = np.zeros((4, 4), dtype=bool)  # 2 tools: subset 3 right on d0-d2, subset 1 on d3
    correct[:3, 3] = True
    correct[3, 1] = True
    table = RewardTable(correct, 2, question_ids=np.array(["d0", "d1", "d2", "d3"]))
    _indev(tmp_path, "f", 0, [0, 0, 0, 0])  # 0 of 4
    _indev(tmp_path, "f", 20, [3, 3, -1, 1])  # 3 of 4, one format failure
    _indev(tmp_path, "f", 40, [3, 3, 3, 3])  # 3 of 4 too: the earlier step is chosen
    _indev(tmp_path, "g", 5, [1, 1, 1, 1])  # 1 of 4
    _indev(tmp_path, "g", 10, [3, 3, 3, 0])  # 3 of 4
    c = indev_course(tmp_path, table, RUNS)
    assert c[["run", "step"]].values.tolist() == [["F", 0], ["F", 20], ["F", 40], ["G", 5], ["G", 10]]
    assert c.accuracy.tolist() == [0.0, 75.0, 75.0, 25.0, 75.0]
    assert c.format_failures.tolist() == [0.0, 25.0, 0.0, 0.0, 0.0]
    assert c.picked.tolist() == [0, 3, 3, 1, 3] and c.share.tolist() == [100.0, 50.0, 100.0, 100.0, 75.0]
    assert c[c.chosen][["run", "step"]].values.tolist() == [["F", 20], ["G", 10]]


def test_indev_course_refuses_snapshots_read_on_other_questions(tmp_path):
    from fgpo_core.reports.pool import indev_course
    from fgpo_core.table import RewardTable

    table = RewardTable(np.ones((5, 4), dtype=bool), 2, question_ids=np.array(["d0", "d1", "d2", "d3", "d4"]))
    _indev(tmp_path, "f", 0, [0, 0, 0, 0])
    f = tmp_path / "indev" / "g" / "step-5" / "indev.parquet"
    f.parent.mkdir(parents=True)
    pd.DataFrame({"question_id": ["d4", "d1", "d2", "d3"], "generation_pick": [0, 0, 0, 0]}).to_parquet(f)
    with pytest.raises(ValueError, match="other questions"):
        indev_course(tmp_path, table, RUNS)


def test_the_committed_pool_runs_are_chosen_on_the_in_domain_dev():
    """Every snapshot the two whole-pool runs kept is read on all of the committed in-domain dev, and
    the checkpoint it chooses for each run is evaluated on the test questions (`make lm-pool-indev`)."""
    from pathlib import Path

    from fgpo_core.experiments.snapshots import snapshot_steps
    from fgpo_core.genomics.benchmarks import read_questions
    from fgpo_core.reports.pool import POOL_RUNS, indev_course
    from fgpo_core.table import load_table

    root = Path(__file__).resolve().parent.parent
    pool = root / "runs" / "cpu" / "lm-pool"
    indev = read_questions(root / "data" / "benchmarks" / "cpu" / "indev.jsonl")
    course = indev_course(pool, load_table(root / "data" / "tables" / "cpu" / "reader" / "indev"))
    assert (course.n == len(indev)).all()
    for label, name in POOL_RUNS.items():
        mine = course[course.run == label]
        assert mine.step.tolist() == snapshot_steps(pool / name)
        (step,) = mine[mine.chosen].step
        assert (snapshot_folder(pool, name, step) / "eval" / "core.parquet").exists()
        for s in mine.step:  # each reading names the checkpoint it was made from
            made_from = json.loads((pool / "indev" / name / f"step-{s}" / "snapshot.json").read_text())["snapshot_of"]
            ckpt = (pool / name / "ckpt" / f"step-{s}.pt").read_bytes()
            assert made_from["step"] == s and made_from["sha256"] == hashlib.sha256(ckpt).hexdigest()[:16]


LM_RUNS_ON_FORMER_DEV = {"grpo"}
"""The first pool's RL runs (runs/cpu/lm): each kept only the adapter the former dev chose, so the
in-domain dev cannot choose among their checkpoints until they are trained again (`make
lm-first-indev`); "FGPO versus GRPO" says so. The test below fails when the list is out of date."""


def test_the_lm_runs_still_chosen_on_the_former_dev_are_the_ones_the_chapter_names():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "runs" / "cpu"
    former = set()
    for m in sorted((root / "lm").glob("*/manifest.json")):
        manifest = json.loads(m.read_text())
        chose_on_dev = manifest.get("objective") in ("fgpo", "grpo") and "best_step" in manifest
        if chose_on_dev and manifest["setup"].get("dev_suite", "dev") != "indev":
            former.add(m.parent.name)
    retrained = {p.parent.name for p in (root / "lm-indev").glob("*/manifest.json")}
    assert former - retrained == LM_RUNS_ON_FORMER_DEV
    from fgpo_core.evaluation.domains import in_domain
    from fgpo_core.genomics.benchmarks import load_benchmark

    _, suites = load_benchmark(root.parent.parent / "data" / "benchmarks" / "cpu")
    for name in retrained:  # each chose on the in-domain dev questions of its own training domain
        manifest = json.loads((root / "lm-indev" / name / "manifest.json").read_text())
        train = suites["train"][: manifest["setup"]["n_train"] or None]
        assert manifest["setup"]["dev_suite"] == "indev", name
        assert manifest["n_dev"] == len(in_domain(suites["indev"], train)) < len(suites["indev"]), name
