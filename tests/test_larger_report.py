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
