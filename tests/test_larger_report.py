"""Past enumeration's read-back: each tool's effect on the reader against brute force, the
nearest-budget rival and the paired tests against their definitions, the findings' words."""

import itertools

import numpy as np
import pandas as pd
import pytest

from fgpo_core.evaluation.metrics import mcnemar
from fgpo_core.reports.larger import budget_tests, nearest_budget, tool_effects
from fgpo_core.table import RewardTable


def test_tool_effects_equal_brute_force_over_every_subset_pair():
    rng = np.random.default_rng(0)
    n, N = 4, 50
    correct = rng.random((N, 2**n)) < 0.5
    t = RewardTable(correct, n, question_ids=np.array([f"q{i}" for i in range(N)]))
    eff = tool_effects(t)
    assert list(eff.index) == t.names()
    for i, name in enumerate(t.names()):
        diffs = []
        for rest in itertools.product([0, 1], repeat=n - 1):
            bits = list(rest[:i]) + [0] + list(rest[i:])
            a = sum(b << j for j, b in enumerate(bits))
            diffs.append(correct[:, a | (1 << i)].astype(int) - correct[:, a].astype(int))
        d = np.stack(diffs, 1)
        assert eff.loc[name, "marginal"] == pytest.approx(100 * d.mean())
        assert eff.loc[name, "helps"] == pytest.approx(100 * (d > 0).mean())
        assert eff.loc[name, "hurts"] == pytest.approx(100 * (d < 0).mean())
        assert eff.loc[name, "alone"] == pytest.approx(100 * correct[:, 1 << i].mean())
        assert eff.loc[name, "all_but"] == pytest.approx(100 * correct[:, 15 & ~(1 << i)].mean())


def test_a_tool_that_flips_right_answers_wrong_is_a_distractor():
    masks = np.arange(8)
    correct = np.tile(((masks & 4) == 0) & (masks > 0), (10, 1))  # tool 3 ruins every subset it joins
    eff = tool_effects(RewardTable(correct, 3, question_ids=np.array([f"q{i}" for i in range(10)])))
    assert eff.marginal.iloc[2] < 0 < eff.marginal.iloc[0] and eff.hurts.iloc[2] > 0 == eff.hurts.iloc[0]


def _budget():
    return pd.DataFrame(
        {"family": ["fgpo", "grpo", "grpo", "shortlist-top"], "reward_calls": [1000.0, 20.0, 200.0, 150.0]},
        index=["fgpo", "grpo", "grpo-e80", "shortlist-top16"],
    ).assign(calls_per_question=lambda d: d.reward_calls / 10)


def test_nearest_budget_is_the_family_member_closest_in_log_calls():
    b = _budget()
    assert nearest_budget(b, "shortlist-top16") == "grpo-e80"
    assert nearest_budget(b, "fgpo") == "grpo-e80"
    assert nearest_budget(b, "grpo") is None  # its own family
    assert nearest_budget(b.drop(columns=[]).iloc[[0, 3]], "fgpo") is None  # no GRPO at all


def test_budget_tests_are_mcnemar_per_seed_against_the_named_or_nearest_rival():
    rng = np.random.default_rng(1)
    rows = []
    vecs = {}
    for m in _budget().index:
        for seed in range(3):
            v = rng.random(40) < (0.7 if m == "shortlist-top16" else 0.4)
            vecs[m, seed] = v
            rows.append({"method": m, "suite": "core", "seed": seed, "accuracy": 100 * v.mean(), "correct_vector": v})
    scores = pd.DataFrame(rows)
    t = budget_tests(scores, _budget(), family="grpo")
    assert set(t.index) == {"fgpo", "shortlist-top16"} and (t.rival == "grpo-e80").all()
    p = [mcnemar(vecs["shortlist-top16", s], vecs["grpo-e80", s])["p_value"] for s in range(3)]
    assert t.loc["shortlist-top16", "median p"] == pytest.approx(np.median(p))
    diff = np.mean([100 * (vecs["shortlist-top16", s].mean() - vecs["grpo-e80", s].mean()) for s in range(3)])
    assert t.loc["shortlist-top16", "difference (points)"] == pytest.approx(diff)
    e = budget_tests(scores, _budget(), rival="fgpo")
    assert "fgpo" not in e.index and (e.rival == "fgpo").all() and len(e) == 3
    with pytest.raises(ValueError, match="no method"):
        budget_tests(scores, _budget(), rival="sft")


def test_tool_rates_count_the_picks_holding_the_tool_per_method_and_family():
    from fgpo_core.reports.larger import tool_rates

    rng = np.random.default_rng(2)
    ids = [f"q{i}" for i in range(12)]
    family_of = pd.Series(["cpg"] * 6 + ["tf_motif"] * 6, index=ids)
    rows = [
        {"method": m, "seed": s, "question_id": q, "mask": int(rng.integers(16))}
        for m in ("fgpo", "grpo", "sft")
        for s in range(2)
        for q in ids
    ]
    picks = pd.DataFrame(rows)
    rates = tool_rates(picks, family_of, 2, ["grpo", "fgpo"])
    assert list(rates.index) == ["grpo", "fgpo"] and list(rates.columns) == ["CpG", "TF-motif"]
    for m in ("grpo", "fgpo"):
        for fam, name in (("cpg", "CpG"), ("tf_motif", "TF-motif")):
            held = [(r["mask"] >> 2) & 1 for r in rows if r["method"] == m and family_of[r["question_id"]] == fam]
            assert rates.loc[m, name] == pytest.approx(100 * np.mean(held))


def test_uniform_dead_is_the_chance_that_every_draw_falls_in_one_reward_class():
    from fgpo_core.reports.larger import uniform_dead

    rng = np.random.default_rng(3)
    correct = rng.random((20, 8)) < 0.4
    t = RewardTable(correct, 3, question_ids=np.array([f"q{i}" for i in range(20)]))
    for kind in ("eq1", "differential"):
        r = t.rewards(kind)
        direct = [sum((np.isclose(row, v).sum() / 8) ** 6 for v in np.unique(row)) for row in r]
        assert uniform_dead(t, kind) == pytest.approx(100 * np.mean(direct))
