"""The appendix's tables, read from a hand-made study whose answers are known."""

import numpy as np
import pandas as pd
import pytest

from fgpo_core.core.estimators import coverage_hit_probability
from fgpo_core.experiments.study import Study
from fgpo_core.reports.ablation import (
    ablation_rows,
    coverage_table,
    group_size_table,
    imitation_table,
    removal_table,
    tool_invocation,
)
from fgpo_core.reports.study import label, study_scores
from fgpo_core.table import RewardTable

N = 40


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    correct = rng.random((N, 16)) < 0.5
    ids = np.array([f"q{i}" for i in range(N)])
    table = RewardTable(correct, 4, question_ids=ids, tool_names=("a", "b", "c", "d"))
    picks = {  # method -> per-seed picks
        "fgpo": [np.full(N, 5), np.full(N, 5)],
        "fgpo-noT1": [np.full(N, 4), np.full(N, 6)],
        "fgpo-k2": [np.full(N, 3), np.full(N, 3)],
        "grpo": [np.full(N, 15), np.full(N, 7)],
        "grpo-G16": [np.full(N, 15), np.full(N, 15)],
        "sft": [np.where(np.arange(N) < 30, 0, 2), np.zeros(N, int)],
    }
    rows, qrows, curves, sweep = [], [], [], []
    for m, ps in picks.items():
        for s, p in enumerate(ps):
            rows.append(pd.DataFrame({"method": m, "seed": s, "suite": "core", "question_id": ids, "mask": p}))
            q = np.eye(16)[p] * 0.9 + 0.1 / 16
            qrows.append(
                pd.concat(
                    [
                        pd.DataFrame({"method": m, "seed": s, "question_id": ids}),
                        pd.DataFrame(q, columns=[f"q_{a}" for a in range(16)]),
                    ],
                    axis=1,
                )
            )
            curves.append(
                pd.DataFrame(
                    {
                        "method": m,
                        "seed": s,
                        "step": np.arange(1, 11),
                        "best_seen": 10.0 * (s + 1),
                        "dead_observed": np.linspace(0, 90, 10),
                    }
                )
            )
            sweep.append(
                {
                    "method": m,
                    "seed": s,
                    "lr": 0.01,
                    "dev_accuracy": 50.0,
                    "reward_evaluations": 1000 * (16 if m == "grpo-G16" else 6),
                }
            )
    ck = pd.DataFrame(
        {
            "method": "grpo",
            "seed": [0, 0, 1, 1],
            "step": [5, 10, 5, 10],
            "epoch": [1, 2, 1, 2],
            "suite": "core",
            "accuracy": [40.0, 50.0, 44.0, 54.0],
            "tools": [1, 2, 3, 4],
        }
    )
    st = Study(
        {"config": {"epochs": 2, "G": 6}, "chosen_lr": {m: 0.01 for m in picks}},
        pd.concat(rows, ignore_index=True),
        pd.concat(qrows, ignore_index=True),
        pd.concat(curves, ignore_index=True),
        pd.DataFrame(),
        pd.DataFrame(sweep),
        ck,
    )
    return st, table, study_scores(st, {"core": table}), picks


def acc(table, p):
    return 100 * table.correct[np.arange(N), p].mean()


def test_rows_removal_and_invocation_are_the_picks_scored(setup):
    st, table, scores, picks = setup
    t = ablation_rows(scores, ["fgpo", "fgpo-noT1"], ["core"], "fgpo")
    want = np.mean([acc(table, p) for p in picks["fgpo-noT1"]])
    assert t.loc["FGPO (without T1)", "core accuracy"] == pytest.approx(want)
    assert t.loc["FGPO (without T1)", "vs FGPO (points)"] == pytest.approx(want - acc(table, picks["fgpo"][0]))
    rem = removal_table(table, scores)
    assert list(rem.index) == ["-T1 a", "-T2 b", "-T3 c", "-T4 d"]
    np.testing.assert_allclose(rem.delta_oracle.to_numpy(), table.single_tool_removal().delta_oracle.to_numpy())
    assert rem.loc["-T1 a", "delta FGPO retrained"] == pytest.approx(want - acc(table, picks["fgpo"][0]))
    assert np.isnan(rem.loc["-T2 b", "delta FGPO retrained"])
    inv = tool_invocation(st, table, ["fgpo", "grpo"])
    assert inv.loc["FGPO"].tolist() == [100, 0, 100, 0]  # mask 5 = T1 + T3
    assert inv.loc["GRPO"].tolist() == [100, 100, 100, 50]  # masks 15 and 7


def test_coverage_group_size_imitation_and_checkpoints(setup):
    st, table, scores, picks = setup
    cov = coverage_table(st, scores, table, "core", 0.10)
    assert list(cov.index) == [2, 16]
    r = table.rewards("eq1", lam=0.10)
    best = r == r.max(1, keepdims=True)
    assert cov.loc[2, "closed form (%)"] == pytest.approx(100 * coverage_hit_probability(best, 2).mean())
    assert cov.loc[16, "closed form (%)"] == pytest.approx(100.0)
    assert cov.loc[2, "visits that saw a best subset (%)"] == pytest.approx(15.0)
    gs = group_size_table(st, scores, no_tool=10.0)
    assert gs.G.tolist() == [6, 16]
    g16 = acc(table, picks["grpo-G16"][0])
    assert gs.loc[label("grpo-G16"), "evaluations per point above No-Tool"] == pytest.approx(16000 / (g16 - 10))
    assert gs.loc["GRPO", "dead groups, last epoch (%)"] == pytest.approx(np.linspace(0, 90, 10)[5:].mean())
    imi = imitation_table(st, scores, table, ["sft"])
    assert imi.loc["SFT", "argmax is empty (%)"] == pytest.approx(100 * (30 + N) / (2 * N))
    assert imi.attrs["empty_optimal"] == pytest.approx(100 * (table.oracle_actions() == 0).mean())


def test_verdicts_apply_the_books_rule_seed_by_seed(setup):
    from fgpo_core.evaluation.difference import compare
    from fgpo_core.reports.ablation import verdicts

    st, table, scores, picks = setup
    v = verdicts(scores, "fgpo", ["fgpo", "fgpo-noT1", "grpo", "absent"])
    assert list(v.index) == ["fgpo-noT1", "grpo"]  # the reference and absent methods are left out
    right = lambda m: [table.correct[np.arange(N), p] for p in picks[m]]  # noqa: E731
    want = compare(right("grpo"), right("fgpo"))
    assert v.loc["grpo", "gap (points)"] == pytest.approx(want.gap)
    assert v.loc["grpo", "p over seeds"] == pytest.approx(want.p_seeds)
    assert v.loc["grpo", "seeds with McNemar p < 0.05"] == f"{want.seeds_significant} of 2"
    assert v.loc["grpo", "difference"] == want.is_difference
    assert v["difference"].dtype == bool
