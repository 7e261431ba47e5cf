"""The fair test read back for a page: labels, gap tables, learning curves, signal summaries and the
first page's rows (fgpo_core.reports.fair)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fgpo_core.reports import fair


def test_interval_text_and_labels():
    assert fair.interval_text(0.25, -0.61, 1.04) == "+0.2 [\u22120.6, +1.0]"
    assert fair.cell_label("rloo-ent0.1") == "RLOO + entropy bonus 0.1"
    assert fair.cell_label("fgpo-noreg-lr0.03") == "FGPO, no regularizer"
    assert fair.cell_label("rloo-eq1-klu0.03") == "RLOO (Eq. 1) + KL to uniform 0.03"
    with pytest.raises(ValueError, match="not a name of the fair test"):
        fair.cell_label("grpo-G16")


def test_comparison_table_marks_what_survives_holm():
    rows = []
    for name, p in (("a vs b", 0.001), ("c vs d", 0.2)):
        for split in ("pooled", "in domain", "out of domain"):
            rows.append({"comparison": name, "split": split, "gap": 1.0, "low": 0.2, "high": 1.8, "p_holm": p})
    t = fair.comparison_table(pd.DataFrame(rows), {"c vs d": "C", "a vs b": "A"})
    assert t.iloc[:, 0].tolist() == ["C", "A"]  # the order asked for
    assert t.loc[1, "pooled"].endswith("*") and not t.loc[0, "pooled"].endswith("*")
    with pytest.raises(ValueError, match="no comparison named"):
        fair.comparison_table(pd.DataFrame(rows), {"x": "X"})


def test_learning_curves_pool_the_suites_by_their_questions():
    ck = pd.DataFrame(
        {
            "method": "m",
            "seed": 0,
            "step": [10, 10, 20, 20],
            "suite": ["core", "microbe", "core", "microbe"],
            "family": "f",
            "n": [30, 10, 30, 10],
            "accuracy": [50.0, 10.0, 60.0, 20.0],
        }
    )
    cu = pd.DataFrame(
        {
            "method": "m",
            "seed": 0,
            "step": [5, 10, 20],
            "visits": [50, 100, 200],
            "reward_evaluations": [800, 1600, 3200],
        }
    )
    out = fair.learning_curves(SimpleNamespace(checkpoints=ck, curves=cu), ["m"])
    assert out.accuracy.tolist() == pytest.approx([40.0, 50.0])  # (30*50 + 10*10) / 40, (30*60 + 10*20) / 40
    assert out.visits.tolist() == [100, 200] and out.reward_evaluations.tolist() == [1600, 3200]
    with pytest.raises(ValueError, match="no checkpoints"):
        fair.learning_curves(SimpleNamespace(checkpoints=None, curves=cu), ["m"])


def test_signal_summary_reads_snr_on_live_questions_only():
    f = pd.DataFrame(
        {
            "estimator": "grpo",
            "regularizer": "none",
            "dead": [1.0, 0.5, 0.0, 0.5],
            "snr": [np.nan, 0.5, 4.0, 2.0],
            "live": [False, True, True, True],
            "entropy": [0.1, 0.2, 0.3, 0.4],
        }
    )
    s = fair.signal_summary(f, {"grpo": "GRPO"}).iloc[0]
    assert s["dead groups (%)"] == pytest.approx(50.0) and s["median SNR"] == pytest.approx(2.0)
    assert s["SNR below 1 (%)"] == pytest.approx(100 / 3) and s["regularizer"] == "none"


def test_headline_row_gaps_are_the_mean_differences():
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 200)) < 0.6, rng.random((3, 200)) < 0.5
    fixed = rng.random(200) < 0.55
    h = fair.headline_row(a, b, fixed, np.zeros(200, int), resamples=500)
    assert h["iv_other"].gap == pytest.approx(100 * (a.mean() - b.mean()))
    assert h["iv_fixed"].gap == pytest.approx(100 * (a.mean() - fixed.mean()))
    assert h["iv_other"].low <= h["iv_other"].gap <= h["iv_other"].high and h["seeds"] == 3
