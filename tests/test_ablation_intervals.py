"""The appendix read by the book's rule (fgpo_core.reports.ablation_intervals) and its figure
(fgpo_core.book.plots_appendix), on hand-made studies whose answers are known."""

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fgpo_core.reports.ablation_intervals import (
    HOLM_MARK,
    add_methods,
    interval_table,
    mean_tools,
    signed_interval,
    study_test,
    weight_grid,
)
from fgpo_core.table import RewardTable

SUITES = ("core", "microbe")
N = 30  # questions per suite


def _tables(rng):
    out = {}
    for s in SUITES:
        ids = np.array([f"{s}{i}" for i in range(N)])
        fam = np.where(np.arange(N) < 20, "promoter", "taxonomy")
        out[s] = RewardTable(rng.random((N, 16)) < 0.5, 4, family=fam, question_ids=ids)
    return out


def _study(picks: dict):
    """A study of ``method -> [seeds][suite] -> masks`` (questions in each table's order)."""
    rows = []
    for m, seeds in picks.items():
        for seed, by_suite in enumerate(seeds):
            for s in SUITES:
                ids = [f"{s}{i}" for i in range(N)]
                rows.append(
                    pd.DataFrame({"method": m, "seed": seed, "suite": s, "question_id": ids, "mask": by_suite[s]})
                )
    return SimpleNamespace(picks=pd.concat(rows, ignore_index=True), manifest={"config": {"suites": ",".join(SUITES)}})


@pytest.fixture
def setup():
    rng = np.random.default_rng(1)
    tables = _tables(rng)
    picks = {
        "fgpo-noreg": [{s: np.full(N, 3) for s in SUITES}, {s: np.full(N, 5) for s in SUITES}],
        "fgpo-ent0.1": [{s: rng.integers(0, 16, N) for s in SUITES} for _ in range(2)],
        "grpo-noreg": [{s: np.full(N, 15) for s in SUITES} for _ in range(2)],
    }
    domains = {s: {f"{s}{i}": "ID" if i < 20 else "OOD" for i in range(N)} for s in SUITES}
    return tables, picks, domains


def test_a_study_reads_as_pooled_correctness_beside_fixed_subsets(setup):
    tables, picks, domains = setup
    ft = study_test(_study(picks), tables, domains, {"No-Tool": 0, "All": -1, "BestFixed*": "best"})
    rows = np.concatenate([tables[s].correct for s in SUITES])
    # each seed's correctness, independently: the table's entry at the picked subset
    for m, seeds in picks.items():
        want = np.stack([np.concatenate([tables[s].correct[np.arange(N), p[s]] for s in SUITES]) for p in seeds])
        assert np.array_equal(ft.correct[m], want)
    assert np.array_equal(ft.correct["No-Tool"][0], rows[:, 0]) and ft.correct["No-Tool"].shape == (1, 2 * N)
    assert np.array_equal(ft.correct["All"][0], rows[:, 15])
    assert ft.correct["BestFixed*"].mean() == rows.mean(0).max()
    assert ft.in_domain.sum() == 40 and list(ft.suites[:N]) == ["core"] * N
    assert ft.accuracy("grpo-noreg") == pytest.approx(100 * rows[:, 15].mean())
    # a gap with its interval, and the domain split, through the fair test's comparisons
    c = ft.comparisons({"a": ("grpo-noreg", "No-Tool")}, resamples=200).set_index("split")
    assert c.loc["pooled", "gap"] == pytest.approx(100 * (rows[:, 15].mean() - rows[:, 0].mean()))
    assert c.loc["in domain", "gap"] == pytest.approx(
        100 * (rows[ft.in_domain, 15].mean() - rows[ft.in_domain, 0].mean())
    )
    with pytest.raises(ValueError, match="domain rule names no question"):
        study_test(_study(picks), tables, {s: {} for s in SUITES})


def test_added_methods_line_up_with_the_pooled_questions(setup):
    tables, picks, domains = setup
    st = _study(picks)
    small = _study({"fgpo-noreg": picks["fgpo-noreg"]})
    ft = study_test(small, tables, domains)
    ft.study = st
    add_methods(ft, tables, ["grpo-noreg"])
    assert np.array_equal(ft.correct["grpo-noreg"], study_test(st, tables, domains).correct["grpo-noreg"])


def test_the_weight_grid_reads_each_weight_and_leaves_missing_ones_empty(setup):
    tables, picks, domains = setup
    ft = study_test(_study(picks), tables, domains)
    g = weight_grid(ft, ["fgpo", "grpo"], "ent", [0.01, 0.1])
    assert g.loc["fgpo", "none"] == pytest.approx(ft.accuracy("fgpo-noreg"))
    assert g.loc["fgpo", 0.1] == pytest.approx(ft.accuracy("fgpo-ent0.1"))
    assert np.isnan(g.loc["fgpo", 0.01]) and np.isnan(g.loc["grpo", 0.1])


def test_tools_per_question_count_the_picked_tools(setup):
    tables, picks, domains = setup
    st = _study(picks)
    assert mean_tools(st, "fgpo-noreg", SUITES) == pytest.approx(2.0)  # masks 3 and 5: two tools each
    assert mean_tools(st, "grpo-noreg", ["core"]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="no picks"):
        mean_tools(st, "sft", SUITES)


def test_the_interval_table_marks_what_survives_holm():
    rows = []
    for name, p in (("a", 0.001), ("b", 0.3)):
        for split in ("pooled", "in domain", "out of domain"):
            rows.append({"comparison": name, "split": split, "gap": 1.25, "low": -0.5, "high": 2.0, "p_holm": p})
    t = interval_table(pd.DataFrame(rows), {"b": "B", "a": "A"}, extra={"accuracy (%)": {"a": 50.0, "b": 40.0}})
    assert list(t.index) == ["B", "A"] and list(t["accuracy (%)"]) == [40.0, 50.0]
    assert t.loc["A", "pooled (points)"] == "+1.2 [\u22120.5, +2.0]" + HOLM_MARK
    assert t.loc["B", "in domain (points)"] == "+1.2 [\u22120.5, +2.0]"
    with pytest.raises(ValueError, match="no comparison named 'x'"):
        interval_table(pd.DataFrame(rows), {"x": "X"})


def test_a_gap_that_rounds_to_zero_reads_plus_zero_as_in_the_prose():
    assert signed_interval(-0.04, -1.06, 0.96) == "+0.0 [\u22121.1, +1.0]"
    # an end that would read 0.0 is written in two decimals, keeping its sign
    assert signed_interval(-0.06, -0.04, 0.2) == "\u22120.06 [\u22120.04, +0.20]"
    assert signed_interval(6.5, 0.04, 15.2) == "+6.50 [+0.04, +15.20]"
    assert signed_interval(0.001, -0.001, 0.9) == "+0.00 [\u22120.00, +0.90]"
    rows = [{"comparison": "a", "split": "pooled", "gap": -0.01, "low": -0.7, "high": 0.7, "p_holm": 1.0}]
    assert interval_table(pd.DataFrame(rows), {"a": "A"}, ("pooled",)).loc["A", "pooled (points)"] == (
        "+0.0 [\u22120.7, +0.7]"
    )


def test_the_appendix_figure_fits_the_page_and_refuses_look_alike_series():
    from fgpo_core.book.palette import color
    from fgpo_core.book.plots_appendix import plot_appendix_panels
    from fgpo_core.book.plots_page import COLUMN_PX, MIN_FONT_PT, page_png

    s = {"label": "FGPO", "colour": color("FGPO"), "mean": [50, None, 52], "err": [1, 0, 1]}
    panels = [
        {"title": "dial", "xlabel": "k", "x": [2, 4, 16], "log_x": True, "paper": {2: 49.6, 16: 52.6}, "series": [s]},
        {
            "title": "weight",
            "xlabel": "β",
            "x": [0, 0.01, 0.1],
            "categorical": True,
            "series": [s, {**s, "label": "GRPO", "colour": color("GRPO"), "err": None}],
        },
        {"title": "λ", "xlabel": "λ", "x": [0, 0.1], "series": [{**s, "mean": [55, 56], "err": None}]},
    ]
    fig = plot_appendix_panels(panels, alt="Three panels of accuracy against the ablations' settings.")
    _, meta = page_png(fig)
    assert meta["width"] <= COLUMN_PX / 0.9 and meta["fgpo"]["min_font_pt"] >= MIN_FONT_PT
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()][:2] == ["FGPO", "GRPO"]  # each label once
    assert not fig.axes[3].get_visible()  # the fourth slot of the 2 x 2 grid stays empty
    with pytest.raises(ValueError, match="two styles"):
        plot_appendix_panels([{**panels[0], "series": [s, {**s, "ls": "--"}]}], alt="x")
    with pytest.raises(ValueError, match="drawn alike"):
        plot_appendix_panels([{**panels[0], "series": [s, {**s, "label": "other"}]}], alt="x")
