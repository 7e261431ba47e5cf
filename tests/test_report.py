"""Reading runs back: look-ups of picks in any reasoner's table, fixed baselines, the choice of a learning rate."""

import json

import numpy as np
import pandas as pd
import pytest

from fgpo_core.experiments.run import best_dev
from fgpo_core.reports.lm_runs import SelectorRun, _evals, method_grid
from fgpo_core.table.reward_table import RewardTable


def table_of(ids, correct, tokens=None):
    A = correct.shape[1]
    tokens = np.arange(A)[None, :].repeat(len(ids), 0) + 10 if tokens is None else tokens
    return RewardTable(correct, 4, question_ids=np.array(ids), tokens=tokens, manifest={"reasoner": "r"})


def write_run(folder, name, picks, ids, dev_acc=(10.0, 20.0), lr=1e-3, J=0.1, scoring_acc=(50.0, 50.0)):
    folder.mkdir(parents=True)
    manifest = {
        "objective": name,
        "config": {"lr": lr, "dpo_beta": 0.3, "select_by": "generation"},
        "dev": [
            {"step": 2 * i, "gen_accuracy": a, "accuracy": c, "J": J}
            for i, (a, c) in enumerate(zip(dev_acc, scoring_acc))
        ],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "eval").mkdir()
    frame = pd.DataFrame(
        {
            "question_id": ids,
            "family": ["f"] * len(ids),
            "generation_pick": picks,
            "completion": [""] * len(ids),
            "scoring_pick": np.maximum(picks, 0),
        }
    )
    for m in range(16):
        frame[f"candidate_score_{m}"] = float(m)
        frame[f"p_gen_{m}"] = 1 / 32
    frame.to_parquet(folder / "eval" / "core.parquet")


def test_baselines_on_a_hand_table():
    correct = np.zeros((2, 16), dtype=bool)
    correct[0, [0, 15]] = True
    correct[1, 15] = True
    b = table_of(["a", "b"], correct).baselines()
    assert b.loc["No-Tool", "accuracy"] == 50.0 and b.loc["All-Tools", "accuracy"] == 100.0
    assert b.loc["BestFixed*", "subset"] == 15 and b.loc["Oracle", "accuracy"] == 100.0
    assert b.loc["Random", "accuracy"] == pytest.approx(100 * 3 / 32)
    assert b.loc["Random", "tools"] == 2.0
    assert b.loc["All-Tools", "input_tokens"] == 25.0 and b.loc["No-Tool", "input_tokens"] == 10.0


def test_select_follows_the_question_ids_and_contains_says_which_exist():
    correct = np.random.default_rng(0).random((3, 16)) < 0.5
    tab = table_of(["a", "b", "c"], correct)
    assert tab.contains(["c", "x", "a"]).tolist() == [True, False, True]
    sel = tab.select(["c", "a"])
    np.testing.assert_array_equal(sel.correct, correct[[2, 0]])
    assert sel.question_ids.tolist() == ["c", "a"] and sel.tokens.shape == (2, 16) and sel.tokens[0, 3] == 13
    with pytest.raises(ValueError, match="lacks 1 of the 2 questions"):
        tab.select(["a", "x"])


def test_method_grid_looks_picks_up_in_every_reasoners_table(tmp_path):
    ids = ["a", "b", "c", "d"]
    write_run(tmp_path / "fgpo-lr1e-3", "fgpo", np.array([1, 1, 0, -1]), ids)
    write_run(tmp_path / "grpo", "grpo", np.array([0, 0, 0, 0]), ids)
    runs = {
        name: SelectorRun(name, tmp_path / sub, None, _evals(tmp_path / sub))
        for name, sub in (("FGPO", "fgpo-lr1e-3"), ("GRPO", "grpo"))
    }
    right_on_1 = np.zeros((4, 16), dtype=bool)
    right_on_1[:, 1] = True
    right_on_0 = ~right_on_1
    grid = method_grid(
        runs, {"A": {"core": table_of(ids, right_on_1)}, "B": {"core": table_of(ids[:2], right_on_0[:2])}}
    )
    acc = grid.set_index(["reasoner", "method"])["accuracy"]
    assert acc[("A", "FGPO")] == 50.0 and acc[("A", "GRPO")] == 0.0  # the format failure counts wrong
    assert acc[("B", "FGPO")] == 0.0 and acc[("B", "GRPO")] == 100.0  # reasoner B's table covers two questions
    assert grid.set_index(["reasoner", "method"]).loc[("B", "FGPO"), "n"] == 2
    fg = grid.set_index(["reasoner", "method"]).loc[("A", "FGPO")]
    assert fg["format_failures"] == 25.0 and fg["tools"] == 0.5  # the failure counts as no tool


def test_best_dev_picks_the_higher_dev_accuracy_then_J(tmp_path):
    """Ranked by free-generation dev accuracy (the runs' select_by), not by controlled scoring."""
    write_run(
        tmp_path / "a", "fgpo", np.zeros(1, int), ["q"], dev_acc=(10.0, 30.0), lr=3e-4, J=0.1, scoring_acc=(50.0, 90.0)
    )
    write_run(tmp_path / "b", "fgpo", np.zeros(1, int), ["q"], dev_acc=(10.0, 30.0), lr=1e-3, J=0.2)
    write_run(tmp_path / "c", "fgpo", np.zeros(1, int), ["q"], dev_acc=(25.0, 20.0), lr=1e-2, J=0.9)
    folder, manifest = best_dev([tmp_path / "a", tmp_path / "b", tmp_path / "c"])
    assert folder == str(tmp_path / "b") and manifest["config"]["lr"] == 1e-3
    with pytest.raises(ValueError):
        best_dev([])


def test_study_summary_and_paired_tests_pair_within_seeds():
    from fgpo_core.reports.study import coverage_rows, paired_tests, study_summary

    a = np.array([True] * 30 + [False] * 10)
    b = np.array([True] * 10 + [False] * 30)
    rows = []
    for seed in (0, 1):
        rows.append({"method": "fgpo", "seed": seed, "suite": "core", "accuracy": 100 * a.mean(), "correct_vector": a})
        rows.append({"method": "grpo", "seed": seed, "suite": "core", "accuracy": 100 * b.mean(), "correct_vector": b})
        rows.append({"method": "fgpo-k2", "seed": seed, "suite": "core", "accuracy": 60.0 + seed, "correct_vector": a})
    scores = pd.DataFrame(rows)
    s = study_summary(scores)
    assert s.loc["fgpo", "core"] == "75.0 ± 0.0" and s.loc["fgpo-k2", "core mean"] == 60.5
    t = paired_tests(scores, "fgpo", "core")
    assert t.loc["grpo", "difference (points)"] == 50.0 and t.loc["grpo", "seeds with p < 0.05"] == "2 of 2"
    assert t.loc["fgpo-k2", "largest p"] == 1.0  # identical vectors: no discordant pair
    assert coverage_rows(s).index.tolist() == [2, 16]


def test_chosen_runs_are_recorded_by_method_and_read_back_under_their_labels(tmp_path, capsys):
    from fgpo_core.cli import main
    from fgpo_core.experiments.chosen import CHOSEN_FILE, choose_runs
    from fgpo_core.reports.lm_runs import load_chosen

    ids = ["a", "b"]
    write_run(tmp_path / "lm" / "fgpo-lr1e-3", "fgpo", np.array([1, 1]), ids, dev_acc=(10.0, 40.0))
    write_run(tmp_path / "lm" / "fgpo-lr3e-4", "fgpo", np.array([2, 2]), ids, dev_acc=(10.0, 30.0))
    write_run(tmp_path / "lm" / "grpo", "grpo", np.array([0, -1]), ids)
    (tmp_path / "lm" / "desc" / "eval").mkdir(parents=True)  # a prompted selector: evaluations only
    pd.read_parquet(tmp_path / "lm" / "grpo" / "eval" / "core.parquet").assign(constrained_pick=[3, 4]).to_parquet(
        tmp_path / "lm" / "desc" / "eval" / "core.parquet"
    )
    assert (
        main(
            [
                "choose",
                "--runs-dir",
                str(tmp_path),
                "--method",
                "fgpo=lm/fgpo-lr3e-4,lm/fgpo-lr1e-3",
                "--method",
                "grpo=lm/grpo",
                "--method",
                "tools-with-descriptions=lm/desc",
            ]
        )
        == 0
    )
    assert "fgpo: lm/fgpo-lr1e-3" in capsys.readouterr().out  # the better one on dev
    assert json.loads((tmp_path / CHOSEN_FILE).read_text()) == {
        "fgpo": "lm/fgpo-lr1e-3",
        "grpo": "lm/grpo",
        "tools-with-descriptions": "lm/desc",
    }
    runs = load_chosen(tmp_path)
    assert list(runs) == ["FGPO", "GRPO", "Tools w/ Desc"] and runs["Tools w/ Desc"].manifest is None
    assert runs["FGPO"].picks("core").tolist() == [1, 1] and runs["GRPO"].picks("core").tolist() == [0, -1]
    assert runs["Tools w/ Desc"].picks("core", "constrained").tolist() == [3, 4]
    with pytest.raises(ValueError, match="no constrained picks"):
        runs["GRPO"].picks("core", "constrained")
    with pytest.raises(ValueError, match="mode must be one of"):
        runs["GRPO"].picks("core", "sampled")
    with pytest.raises(ValueError, match="unknown method"):
        choose_runs(tmp_path, {"ppo": "lm/grpo"})
    with pytest.raises(FileNotFoundError, match="no finished run"):
        choose_runs(tmp_path, {"sft": "lm/sft"})
    (tmp_path / CHOSEN_FILE).write_text(json.dumps({"sft": "lm/sft"}))
    with pytest.raises(FileNotFoundError, match="holds no finished run"):
        load_chosen(tmp_path)
    with pytest.raises(FileNotFoundError, match="fgpo choose"):
        load_chosen(tmp_path / "lm")


def test_grpo_dead_groups_reads_the_per_step_recount_and_the_older_list():
    from fgpo_core.reports.lm_runs import grpo_dead_groups

    steps = [{"step": i, "frac_reward_zero_std": 0.25 * i} for i in (3, 1, 2)]
    steps[0]["dead_fraction_recount"] = 0.75  # step 3 only: a run resumed before step 3 by older code
    steps[1]["dead_group_closed_form"] = 0.5
    dead = grpo_dead_groups({"config": {"prompts_per_step": 16}, "steps": steps})
    assert dead.step.tolist() == [1, 2, 3] and dead.visits.tolist() == [16, 32, 48]
    np.testing.assert_allclose(dead.trl, [0.25, 0.5, 0.75])
    np.testing.assert_allclose(dead.recount, [np.nan, np.nan, 0.75])
    np.testing.assert_allclose(dead.closed_form, [0.5, np.nan, np.nan])
    old = grpo_dead_groups(
        {
            "config": {"prompts_per_step": 8},
            "dead_fraction_recount": [0.1, 0.2],
            "steps": [{"step": i, "frac_reward_zero_std": 0.0} for i in (1, 2, 3)],
        }
    )
    np.testing.assert_allclose(old.recount, [0.1, 0.2, np.nan])
    assert old.closed_form.isna().all() and grpo_dead_groups({"config": {}}).empty


def test_the_warmup_stages_join_on_one_epoch_axis_and_the_format_frames_summarise():
    import matplotlib

    matplotlib.use("Agg")
    from fgpo_core.book.plots_lm import plot_warmup
    from fgpo_core.reports.lm_runs import format_summary, warmup_curve

    def stage(masses, mass_weight):
        log = [
            {"epoch": e, "step": s, "loss": 3.0, "train_mass": 0.5, "learning_rate": 1e-3}
            for e in range(1, len(masses))
            for s in (1, 2)
        ]
        return {
            "objective": "warmup",
            "config": {"mass_weight": mass_weight, "lr": 1e-3},
            "epochs": len(masses) - 1,
            "curve": [{"epoch": e, "dev_mass_mean": m, "dev_mass_min": m - 0.01} for e, m in enumerate(masses)],
            "log": log,
        }

    dev, steps = warmup_curve([stage([0.1, 0.9, 0.94], 1), stage([0.94, 0.99], 3)])
    assert dev.epoch.tolist() == [0, 1, 2, 3] and dev.stage.tolist() == [1, 1, 1, 2]
    assert dev.dev_mass_mean.tolist() == [0.1, 0.9, 0.94, 0.99] and dev.mass_weight.tolist() == [1, 1, 1, 3]
    assert steps.epoch_float.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    with pytest.raises(ValueError, match="not a format warm-up"):
        warmup_curve([{"objective": "fgpo"}])
    assert plot_warmup(dev, steps).axes[0].get_ylim()[1] == 1.02

    f = pd.DataFrame({"parse_rate": [1.0, 0.5], "canonical_rate": [1.0, 0.25], "canonical_mass": [0.9, 0.3]})
    f.attrs["G"] = "8"
    row = format_summary({"warm-up": f}).loc["warm-up"]
    assert row.questions == 2 and row.samples == 8 and row.parse_rate == 75.0 and row.canonical_rate == 62.5
    assert row.canonical_mass == pytest.approx(60.0) and row.least_canonical_mass == pytest.approx(30.0)


def test_method_grid_compares_on_the_first_evaluated_selector_when_fgpo_has_not_landed(tmp_path):
    ids = ["a", "b"]
    write_run(tmp_path / "w", "warmup", np.array([1, 0]), ids)
    write_run(tmp_path / "s", "sft", np.array([0, 0]), ["b", "a"])
    right_on_1 = np.zeros((2, 16), dtype=bool)
    right_on_1[:, 1] = True
    runs = {"Warm-up": SelectorRun("Warm-up", tmp_path / "w", None, _evals(tmp_path / "w"))}
    grid = method_grid(runs, {"A": {"core": table_of(ids, right_on_1)}})
    assert grid.set_index("method").loc["Warm-up", "accuracy"] == 50.0
    runs["SFT"] = SelectorRun("SFT", tmp_path / "s", None, _evals(tmp_path / "s"))
    with pytest.raises(ValueError, match="other core questions than Warm-up"):
        method_grid(runs, {"A": {"core": table_of(ids, right_on_1)}})
    assert method_grid({}, {"A": {"core": table_of(ids, right_on_1)}}).empty  # nothing evaluated: no rows


def test_the_warmup_chain_follows_init_adapters_and_stopped_runs_are_read(tmp_path):
    from fgpo_core.reports.lm_runs import stopped_runs, warmup_chain

    def manifest(folder, objective, init=""):
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"objective": objective, "setup": {"init_adapter": init}}))

    lm = tmp_path / "lm"
    manifest(lm / "warmup", "warmup")
    manifest(lm / "warmup-stage2", "warmup", str(lm / "warmup"))
    manifest(lm / "fgpo", "fgpo", str(lm / "warmup-stage2"))
    manifest(lm / "moved" / "warmup-stage3", "warmup", "elsewhere/warmup-stage2")  # recorded relative to another root
    assert [m["setup"]["init_adapter"] for m in warmup_chain(lm / "warmup-stage2")] == ["", str(lm / "warmup")]
    with pytest.raises(ValueError, match="not a format warm-up"):
        warmup_chain(lm / "fgpo")
    with pytest.raises(FileNotFoundError):
        warmup_chain(lm / "moved" / "warmup-stage3")  # its stage 2 is not beside it
    manifest(lm / "loop-a", "warmup", str(lm / "loop-b"))
    manifest(lm / "loop-b", "warmup", str(lm / "loop-a"))
    with pytest.raises(ValueError, match="loop"):
        warmup_chain(lm / "loop-a")
    from fgpo_core.reports.lm_runs import warmup_format_checks

    for folder in (lm / "untrained", lm / "warmup"):
        folder.mkdir(exist_ok=True)
        pd.DataFrame({"parse_rate": [1.0]}).to_parquet(folder / "format-dev.parquet")
    for m in ("warmup", "warmup-stage2"):  # the out_dir each stage recorded, relative to where it ran
        path = lm / m / "manifest.json"
        path.write_text(
            json.dumps(
                {
                    **json.loads(path.read_text()),
                    "setup": {**json.loads(path.read_text())["setup"], "out_dir": f"elsewhere/{m}"},
                }
            )
        )
    assert list(warmup_format_checks(lm / "warmup-stage2")) == ["untrained", "warm-up stage 1"]
    (lm / "fgpo-lr1e-3").mkdir()
    (lm / "fgpo-lr1e-3" / "stopped.json").write_text(json.dumps({"stopped": True, "config": {"lr": 1e-3}}))
    assert stopped_runs(lm) == {"fgpo-lr1e-3": {"stopped": True, "config": {"lr": 1e-3}}}


def test_dev_table_reads_fgpo_grpo_and_stopped_runs_alike():
    import matplotlib

    matplotlib.use("Agg")
    from fgpo_core.book.plots_lm import plot_lm_dev
    from fgpo_core.reports.lm_runs import dev_table

    fgpo = {
        "objective": "fgpo",
        "config": {"batch_size": 16},
        "best_step": 8,
        "dev": [
            {
                "step": 0,
                "visits": 0,
                "gen_accuracy": 50.0,
                "accuracy": 55.0,
                "gen_format_failures": 0.0,
                "gen_tools": 3.5,
                "tools": 4.0,
            },
            {
                "step": 8,
                "visits": 128,
                "gen_accuracy": 52.0,
                "accuracy": 54.0,
                "gen_format_failures": 1.0,
                "gen_tools": 2.0,
                "tools": 2.0,
            },
        ],
    }
    grpo = {
        "objective": "grpo",
        "config": {"prompts_per_step": 16},
        "dev": [{"step": 4, "accuracy": 40.0, "format_failures": 5.0, "tools": 1.0}],
    }
    stopped = {
        "objective": "fgpo",
        "stopped": True,
        "config": {"batch_size": 16},
        "dev": [
            {
                "step": 8,
                "visits": 128,
                "gen_accuracy": 0.0,
                "accuracy": 45.0,
                "gen_format_failures": 100.0,
                "gen_tools": 0.0,
            }
        ],
    }
    d = dev_table({"FGPO": fgpo, "GRPO": grpo, "FGPO (stopped)": stopped}).set_index(["run", "step"])
    assert d.loc[("FGPO", 8)].tolist()[:5] == [128, 52.0, 1.0, 54.0, 2.0] and d.loc[("FGPO", 8), "kept"]
    assert not d.loc[("FGPO", 0), "kept"] and not d.loc[("FGPO", 0), "stopped"]
    g = d.loc[("GRPO", 4)]
    assert (g.visits, g.generation, g.format_failures, g.tools) == (64, 40.0, 5.0, 1.0) and pd.isna(g.scoring)
    assert d.loc[("FGPO (stopped)", 8), "stopped"] and not d.loc[("FGPO (stopped)", 8), "kept"]
    steps = {"FGPO": pd.DataFrame({"visits": [16, 32], "p_gen_mass": [0.99, 0.5]})}
    fig = plot_lm_dev(d.reset_index(), steps)
    assert len(fig.axes[2].get_lines()) == 1 and fig.axes[2].get_lines()[0].get_ydata().tolist() == [0.99, 0.5]
    assert fig.axes[0].get_lines()[2].get_linestyle() == "--"  # the stopped run is dashed


def test_fixed_subsets_answer_question_by_question_and_domains_pool_over_suites(tmp_path):
    from fgpo_core.reports.lm_runs import domain_accuracy

    ids = ["a", "b", "c", "d"]
    write_run(tmp_path / "w", "warmup", np.array([1, 1, 0, -1]), ids)
    runs = {"Warm-up": SelectorRun("Warm-up", tmp_path / "w", None, _evals(tmp_path / "w"))}
    correct = np.zeros((4, 16), dtype=bool)
    correct[:, 1] = True
    correct[[0, 2], 15] = True  # All-Tools right on a and c
    grid = method_grid(runs, {"A": {"core": table_of(ids, correct)}}).set_index("method")
    assert grid.loc["All-Tools", "correct_vector"].tolist() == [True, False, True, False]
    assert grid.loc["No-Tool", "correct_vector"].tolist() == [False] * 4
    assert grid.loc["Random", "correct_vector"] is None and grid.loc["Oracle", "correct_vector"] is None
    dom = domain_accuracy(grid.reset_index(), {"core": ["cpg", "cpg", "taxonomy", "taxonomy"]}, ["cpg"])
    assert dom.loc["Warm-up", "ID"] == 100.0 and dom.loc["Warm-up", "OOD"] == 0.0  # the failure counts wrong
    assert dom.loc["All-Tools", "ID"] == 50.0 and dom.loc["All-Tools", "n OOD"] == 2
    assert "Random" not in dom.index
    micro = domain_accuracy(grid.reset_index().assign(suite="microbe"), {"microbe": ["cpg"] * 4}, ["cpg"])
    assert micro.loc["Warm-up", "n ID"] == 0 and micro.loc["Warm-up", "OOD"] == 50.0  # microbe: out of domain
    with pytest.raises(ValueError, match="4 answers for 3 families"):
        domain_accuracy(grid.reset_index(), {"core": ["cpg"] * 3}, ["cpg"])


def test_family_routing_picks_each_training_familys_best_subset_and_falls_back_for_unseen_ones():
    from fgpo_core.evaluation.metrics import family_routing

    r = np.zeros((4, 16))
    r[:2, 3] = 1.0  # family a: subset 3
    r[2:, 8] = 0.5  # family b: subset 8
    r[2, 3] = 0.9  # subset 3 is best over all training questions (2.9 against 1.0)
    picks, route = family_routing(r, ["a", "a", "b", "b"], ["b", "c", "a"])
    assert route == {"a": 3, "b": 8, "*": 3} and picks.tolist() == [8, 3, 3]
    with pytest.raises(ValueError, match="3 families for 4 reward rows"):
        family_routing(r, ["a", "a", "b"], ["a"])


def test_training_cost_keeps_a_resumed_runs_every_step():
    from fgpo_core.reports.lm_runs import training_cost

    whole = {
        "n_train": 256,
        "config": {"epochs": 2},
        "train_seconds": 600.0,
        "steps": [{"step": 1, "step_time": 100.0}, {"step": 2, "step_time": 100.0}],
    }
    resumed = {
        "n_train": 256,
        "config": {"epochs": 2},
        "train_seconds": 120.0,  # its last segment only
        "steps": [{"step": s, "step_time": 100.0} for s in (1, 2, 3)],
    }
    plain = {"n_train": 8, "config": {}, "train_seconds": 60.0}
    # resumed at step 12 of 16 with no per-step times (SFT): its last process timed 4 steps
    untimed = {
        "n_train": 256,
        "config": {"epochs": 1},
        "train_seconds": 240.0,
        "resumed_at_step": 12,
        "log": [{"step": s} for s in range(1, 17)],
    }
    cost = training_cost({"FGPO": whole, "GRPO": resumed, "SFT": plain, "SFT-resumed": untimed})
    assert cost.loc["SFT-resumed", "minutes"] == 16.0 and cost.loc["SFT-resumed", "seconds per visit"] == 3.75
    assert cost.loc["SFT-resumed", "timed_by"].startswith("estimate: the last process's 4 of 16 steps")
    assert cost.loc["FGPO", "seconds per visit"] == 600.0 / 512
    assert cost.loc["FGPO", "minutes"] == 10.0 and cost.loc["FGPO", "timed_by"].startswith("one process")
    assert cost.loc["GRPO", "minutes"] == 5.0 and cost.loc["GRPO", "timed_by"].startswith("per-step times")
    assert cost.loc["GRPO", "steps"] == 3 and cost.loc["GRPO", "visits"] == 512
    assert cost.loc["SFT", "minutes"] == 1.0 and cost.loc["SFT", "steps"] == 0 and cost.loc["SFT", "visits"] == 0
