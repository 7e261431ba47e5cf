"""The fair test's small page tables and figures (fgpo_core.reports.fair_tables,
fgpo_core.book.plots_fair)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fgpo_core.reports import fair
from fgpo_core.reports.fair_tables import cell_accuracies, estimator_of


def test_estimator_of_drops_regularizer_and_rate():
    assert estimator_of("rloo-ent0.1-lr0.03") == "RLOO"
    assert estimator_of("fgpo-noreg") == "FGPO"
    assert estimator_of("rloo-eq1-klu0.03") == "RLOO (Eq. 1)"


def _fair_test():
    correct = {
        "a": np.array([[1, 1, 0, 0], [1, 0, 0, 0]], bool),
        "b": np.array([[0, 0, 1, 1]], bool),
    }
    return fair.FairTest(
        study=None,
        cells=pd.DataFrame(),
        pairs={},
        correct=correct,
        suites=np.array(["core"] * 4),
        families=np.array(["cpg"] * 4),
        ids=np.arange(4),
        in_domain=np.array([True, True, False, False]),
        test_suites=["core"],
    )


def test_cell_accuracies_split_by_domain_and_count_seeds():
    t = cell_accuracies(_fair_test(), {"b": "B", "a": "A"})
    assert t["method"].tolist() == ["B", "A"]
    a = t.set_index("method").loc["A"]
    assert a["pooled (%)"] == pytest.approx(37.5)
    assert a["in domain (%)"] == pytest.approx(75.0) and a["out of domain (%)"] == pytest.approx(0.0)
    assert a["seeds"] == 2 and t.set_index("method").loc["B", "seeds"] == 1
    with pytest.raises(ValueError, match="holds no method"):
        cell_accuracies(_fair_test(), {"c": "C"})


def test_learning_curves_have_readable_log_ticks_and_standard_error_bands():
    from fgpo_core.book.plots_fair import plot_learning_curves

    rows = [
        {
            "method": m,
            "seed": s,
            "step": k,
            "visits": 1000 * k,
            "reward_evaluations": 6000 * k * (1 + (m == "fgpo")),
            "accuracy": 50 + k + 3 * s,
        }
        for m in ("fgpo", "grpo")
        for s in range(4)
        for k in (2, 5, 10, 20, 50)
    ]
    fig = plot_learning_curves(pd.DataFrame(rows), ["fgpo", "grpo"], {"fgpo": "FGPO", "grpo": "GRPO"})
    right = fig.axes[1]
    labels = [t.get_text() for t in right.get_xticklabels() if t.get_text()]
    lo, hi = right.get_xlim()
    shown = [x for x in right.get_xticks() if lo <= x <= hi]
    assert len(shown) >= 4 and len(labels) >= 4
    v = right.collections[0].get_paths()[0].vertices
    width = max(np.ptp(v[v[:, 0] == x, 1]) for x in np.unique(v[:, 0]))
    assert 0 < width < 9  # the seeds span 9 points at each step; a band of +-1 s.e. is narrower


def test_routing_grid_has_a_colour_bar():
    from fgpo_core.book.plots_fair import plot_routing

    r = pd.DataFrame([[10.0, 90.0], [50.0, 0.0]], index=["CpG", "TF-motif"], columns=["T1", "T2"])
    fig = plot_routing({"FGPO": r, "GRPO": r * 0.5}, "Tool calls")
    assert len(fig.axes) == 2 and "% of questions" in fig.axes[1].get_ylabel()


def test_log_ticks_are_round_and_do_not_crowd():
    from fgpo_core.book.plots_fair import log_ticks

    assert log_ticks(13_000, 380_000) == [20_000, 50_000, 100_000, 200_000]
    assert log_ticks(2_000, 9_000) == [2_000, 3_000, 5_000]
    with pytest.raises(ValueError, match="log axis"):
        log_ticks(0, 10)
