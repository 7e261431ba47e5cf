"""Reading runs back: look-ups of picks in any reasoner's table, fixed baselines, the choice of a learning rate."""
import json

import numpy as np
import pandas as pd
import pytest

from fgpo_core.report import fixed_baselines, load_runs, method_grid, pgen_matrix, rows_for, score_matrix
from fgpo_core.runs import best_dev
from fgpo_core.table import RewardTable


def table_of(ids, correct, tokens=None):
    A = correct.shape[1]
    tokens = np.arange(A)[None, :].repeat(len(ids), 0) + 10 if tokens is None else tokens
    df = pd.DataFrame({"question_id": np.repeat(ids, A), "mask": np.tile(np.arange(A), len(ids)),
                       "prompt_tokens": tokens.ravel()})
    return RewardTable(correct, 4), df, {"reasoner": "r"}


def write_run(folder, name, picks, ids, dev_acc=(10.0, 20.0), lr=1e-3, J=0.1, scoring_acc=(50.0, 50.0)):
    folder.mkdir(parents=True)
    manifest = {"objective": name, "config": {"lr": lr, "dpo_beta": 0.3, "select_by": "generation"},
                "dev": [{"step": 2 * i, "gen_accuracy": a, "accuracy": c, "J": J}
                        for i, (a, c) in enumerate(zip(dev_acc, scoring_acc))]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "eval").mkdir()
    frame = pd.DataFrame({"question_id": ids, "family": ["f"] * len(ids), "generation_pick": picks,
                          "completion": [""] * len(ids), "scoring_pick": np.maximum(picks, 0)})
    for m in range(16):
        frame[f"score_{m}"] = float(m)
        frame[f"pgen_{m}"] = 1 / 32
    frame.to_parquet(folder / "eval" / "core.parquet")


def test_fixed_baselines_on_a_hand_table():
    correct = np.zeros((2, 16), dtype=bool)
    correct[0, [0, 15]] = True
    correct[1, 15] = True
    b = fixed_baselines(correct)
    assert b["No-Tool"]["accuracy"] == 50.0 and b["All-Tools"]["accuracy"] == 100.0
    assert b["BestFixed*"]["subset"] == 15 and b["Oracle"]["accuracy"] == 100.0
    assert b["Random"]["accuracy"] == pytest.approx(100 * 3 / 32)
    assert b["Random"]["tools"] == 2.0


def test_rows_for_follows_the_question_ids_and_skips_missing_ones():
    correct = np.random.default_rng(0).random((3, 16)) < 0.5
    tab = table_of(["a", "b", "c"], correct)
    have, c, tok = rows_for(tab, ["c", "x", "a"])
    assert have.tolist() == [True, False, True]
    np.testing.assert_array_equal(c, correct[[2, 0]])
    assert tok.shape == (2, 16) and tok[0, 3] == 13


def test_method_grid_looks_picks_up_in_every_reasoners_table(tmp_path):
    ids = ["a", "b", "c", "d"]
    write_run(tmp_path / "fgpo-lr1e-3", "fgpo", np.array([1, 1, 0, -1]), ids)
    write_run(tmp_path / "grpo", "grpo", np.array([0, 0, 0, 0]), ids)
    runs = load_runs(tmp_path)
    assert set(runs) == {"FGPO", "GRPO"}
    right_on_1 = np.zeros((4, 16), dtype=bool)
    right_on_1[:, 1] = True
    right_on_0 = ~right_on_1
    grid = method_grid(runs, {"A": {"core": table_of(ids, right_on_1)}, "B": {"core": table_of(ids[:2], right_on_0)}})
    acc = grid.set_index(["reasoner", "method"])["accuracy"]
    assert acc[("A", "FGPO")] == 50.0 and acc[("A", "GRPO")] == 0.0  # the format failure counts wrong
    assert acc[("B", "FGPO")] == 0.0 and acc[("B", "GRPO")] == 100.0  # reasoner B's table covers two questions
    assert grid.set_index(["reasoner", "method"]).loc[("B", "FGPO"), "n"] == 2
    fg = grid.set_index(["reasoner", "method"]).loc[("A", "FGPO")]
    assert fg["format_failures"] == 25.0 and fg["tools"] == 0.5  # the failure counts as no tool
    assert pgen_matrix(runs["FGPO"], "core").shape == (4, 16)
    assert score_matrix(runs["FGPO"], "core")[0, 5] == 5.0


def test_best_dev_picks_the_higher_dev_accuracy_then_J(tmp_path):
    """Ranked by free-generation dev accuracy (the runs' select_by), not by controlled scoring."""
    write_run(tmp_path / "a", "fgpo", np.zeros(1, int), ["q"], dev_acc=(10.0, 30.0), lr=3e-4, J=0.1,
              scoring_acc=(50.0, 90.0))
    write_run(tmp_path / "b", "fgpo", np.zeros(1, int), ["q"], dev_acc=(10.0, 30.0), lr=1e-3, J=0.2)
    write_run(tmp_path / "c", "fgpo", np.zeros(1, int), ["q"], dev_acc=(25.0, 20.0), lr=1e-2, J=0.9)
    folder, manifest = best_dev([tmp_path / "a", tmp_path / "b", tmp_path / "c"])
    assert folder == str(tmp_path / "b") and manifest["config"]["lr"] == 1e-3
    with pytest.raises(ValueError):
        best_dev([])


def test_a_missing_runs_folder_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="fgpo runs"):
        load_runs(tmp_path / "nothing")
