"""fgpo_core.reports.extra: new estimators' studies beside the main policy-head study."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fgpo_core.core.registry import ESTIMATORS
from fgpo_core.reports import extra as xr

ROOT = Path(__file__).resolve().parents[1]
STUDY, RLOO_KL = ROOT / "runs/cpu/study", ROOT / "runs/cpu/study-rloo-kl"


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_registration_is_the_one_register_call_of_each_estimator(name):
    src = xr.registration(name)
    tree = ast.parse(src)
    assert len(tree.body) == 1
    call = tree.body[0].value
    assert call.func.id == "register" and call.args[0].args[0].value == name


def test_registration_of_an_unknown_estimator_is_refused():
    with pytest.raises(ValueError, match="no register"):
        xr.registration("no-such-estimator")


def test_estimators_of_method_names_come_from_the_registry_once_each():
    ests = xr.new_estimators(["grpo-clip-u2", "grpo-clip", "rloo-kl", "sft-e4+fgpo"])
    assert [e.name for e in ests] == ["grpo-clip", "rloo-kl", "fgpo"]


def test_pairs_compare_with_fgpo_grpo_and_the_composed_estimator_where_shown():
    shown = ["fgpo", "grpo", "rloo"]
    assert xr.extra_pairs(["rloo-kl", "grpo-clip-u2"], shown) == {
        "rloo-kl - fgpo": ("rloo-kl", "fgpo"),
        "rloo-kl - grpo": ("rloo-kl", "grpo"),
        "rloo-kl - rloo": ("rloo-kl", "rloo"),
        "grpo-clip-u2 - fgpo": ("grpo-clip-u2", "fgpo"),
        "grpo-clip-u2 - grpo": ("grpo-clip-u2", "grpo"),
    }
    assert xr.extra_pairs(["rloo-kl"], ["fgpo"]) == {"rloo-kl - fgpo": ("rloo-kl", "fgpo")}


def test_split_accuracy_is_the_mean_and_spread_of_the_seeds_accuracies():
    rng = np.random.default_rng(0)
    c = {"a": rng.random((3, 40)) < 0.6, "b": rng.random((1, 40)) < 0.3}
    masks = {"pooled": np.ones(40, bool), "half": np.arange(40) < 20}
    mean, sd = xr.split_accuracy(c, masks), xr.split_accuracy(c, masks, sd=True)
    for m, x in c.items():
        for k, mask in masks.items():
            per_seed = [100 * sum(row[mask]) / mask.sum() for row in x]
            assert mean.loc[m, k] == pytest.approx(sum(per_seed) / len(per_seed))
            assert sd.loc[m, k] == pytest.approx(np.std(per_seed, ddof=1) if len(per_seed) > 1 else 0.0)


def test_gap_table_and_findings_read_the_intervals_without_negative_zero():
    gaps = pd.DataFrame(
        {
            "a": ["n", "n"],
            "b": ["fgpo", "fgpo"],
            "split": ["pooled", "in domain"],
            "gap": [-0.04, 2.0],
            "low": [-1.26, 0.5],
            "high": [1.0, 3.5],
            "verdict": ["undecided", "a difference"],
        }
    )
    t = xr.gap_table(gaps, str.upper)
    assert list(t.columns) == ["pooled", "in domain"]
    assert t.loc["N − FGPO", "pooled"] == "+0.0 [-1.3, +1.0], undecided"
    acc = pd.DataFrame({"pooled": [50.0], "in domain": [40.0], "out of domain": [60.0]}, index=["n"])
    assert xr.findings(acc, gaps, ["n"], str.upper) == (
        "N scores 50.0% over all test questions (40.0% in domain, "
        "60.0% out of domain); pooled, minus FGPO +0.0 points "
        "[-1.3, +1.0], undecided."
    )


def test_last_epoch_averages_the_last_epoch_of_the_sampled_methods_only():
    curves = pd.DataFrame(
        {
            "method": ["s"] * 4 + ["e"] * 4,
            "step": [1, 2, 3, 4] * 2,
            "dead_observed": [90, 80, 20, 10] + [np.nan] * 4,
            "entropy": [0.1, 0.2, 1.0, 2.0] * 2,
        }
    )
    study = types.SimpleNamespace(curves=curves)
    out = xr.last_epoch({"s": study, "e": study}, epochs=2)
    assert list(out.index) == ["s"]
    assert out.loc["s", "dead_observed"] == 15 and out.loc["s", "entropy"] == 1.5


def test_extra_studies_skips_missing_folders_and_refuses_a_method_twice(tmp_path):
    assert xr.extra_studies("") == {} and xr.extra_studies(str(tmp_path)) == {}
    if not (RLOO_KL / "manifest.json").exists():
        pytest.skip("the committed rloo-kl study is not here")
    assert list(xr.extra_studies(f"{tmp_path},{RLOO_KL}")) == ["rloo-kl"]
    with pytest.raises(ValueError, match="two of the extra studies"):
        xr.extra_studies(f"{RLOO_KL},{RLOO_KL}")


def test_pooled_correct_agrees_with_the_chapters_per_method_lookup():
    if not (STUDY / "manifest.json").exists() or not (RLOO_KL / "manifest.json").exists():
        pytest.skip("the committed studies are not here")
    from fgpo_core.experiments.domains import method_correct
    from fgpo_core.experiments.study import load_study
    from fgpo_core.table import load_tables

    st, kl = load_study(STUDY), load_study(RLOO_KL)
    suites = ["microbe"]
    tables = load_tables({"r": ROOT / "data/tables/cpu/reader"}, suites)["r"]
    ids, correct, suite_of, family_of = xr.pooled_correct(st, tables, suites, {"rloo-kl": kl, "fgpo": st})
    for m, study in (("rloo-kl", kl), ("fgpo", st)):
        assert np.array_equal(correct[m], np.stack(method_correct(study, tables, m, ids)))
    assert len(suite_of) == len(family_of) == correct["fgpo"].shape[1] == len(ids["microbe"])
    assert list(family_of) == list(tables["microbe"].select(ids["microbe"]).family)


def test_settings_differ_names_each_setting_a_study_does_not_share():
    main = types.SimpleNamespace(
        manifest={"config": {"seeds": 5, "lrs": "3e-2", "epochs": 20}, "n_questions": {"t": 9}}
    )
    same = types.SimpleNamespace(
        manifest={"config": {"seeds": 5, "lrs": "3e-2", "epochs": 20, "methods": "x"}, "n_questions": {"t": 9}}
    )
    other = types.SimpleNamespace(
        manifest={"config": {"seeds": 3, "lrs": "3e-2", "epochs": 20}, "n_questions": {"t": 8}}
    )
    assert xr.settings_differ(main, same) == []
    assert xr.settings_differ(main, other) == ["seeds", "n_questions"]
