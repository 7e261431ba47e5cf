"""The grid of reasoners by suites read back (fgpo_core.reports.grid): cells scored by looking picks
up in another reasoner's table, fixed subsets chosen on the training table or with hindsight,
counts, the transfer matrix, the figure, and the grid's method names."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fgpo_core.experiments import fair_seeds
from fgpo_core.experiments.study_results import Study
from fgpo_core.reports import grid as G
from fgpo_core.table.reward_table import RewardTable

METHODS = {
    "fgpo": "fgpo-ent0.1-lr0.03",
    "sampled": "rloo-klu0.1-lr0.03",
    "grpo": "grpo-ent0.1-lr0.03",
    "grpo_plain": "grpo-noreg-lr0.01",
}


def _table(correct, ids, families=None):
    correct = np.asarray(correct, bool)
    fam = np.asarray(families if families is not None else ["f"] * len(ids))
    return RewardTable(correct=correct, n_tools=2, family=fam, question_ids=np.asarray(ids))


def _study(picks: dict) -> Study:
    """``picks[(method, suite)]`` = ``[seeds, Q]`` masks over questions q0..q{Q-1} of that suite."""
    rows = []
    for (m, suite), p in picks.items():
        for seed, row in enumerate(np.atleast_2d(p)):
            for i, mask in enumerate(row):
                rows.append(
                    {"method": m, "seed": seed, "suite": suite, "question_id": f"{suite}{i}", "mask": int(mask)}
                )
    manifest = {"config": {"methods": ",".join(METHODS.values())}}
    return Study(manifest, pd.DataFrame(rows), None, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())


def _toy_grid():
    # reasoner "a": subset 1 is right on every question, subset 2 on none; "b": the reverse
    Q = 8
    right1 = np.tile([False, True, False, False], (Q, 1))
    right2 = np.tile([False, False, True, False], (Q, 1))
    tables = {}
    for r, c in (("a", right1), ("b", right2)):
        tables[r] = {s: _table(c, [f"{s}{i}" for i in range(Q)]) for s in ("train", "core", "mosaic")}
    picks = {}
    for suite in ("core", "mosaic"):
        picks[(METHODS["fgpo"], suite)] = np.ones((2, Q), int)  # subset 1, both seeds
        picks[(METHODS["sampled"], suite)] = np.array([[1] * Q, [2] * Q])  # right on one seed of a
        picks[(METHODS["grpo"], suite)] = np.full((2, Q), 2)  # subset 2
        picks[(METHODS["grpo_plain"], suite)] = np.array([[2] * Q, [1] * Q])
    studies = {"a": _study(picks), "b": _study({k: 3 - v for k, v in picks.items()})}
    return G.Grid(["a", "b"], studies, tables, {r: dict(METHODS) for r in "ab"}, ["core", "mosaic"])


def test_role_of():
    assert [G.role_of(m) for m in METHODS.values()] == list(G.ROLES)
    assert G.role_of("dapo-noreg") == "sampled"


def test_cells_look_picks_up_in_the_scored_reasoners_table():
    cells = G.grid_cells(_toy_grid(), resamples=200)
    assert len(cells) == 4 * 3  # 2 x 2 pairs, 2 suites and pooled
    own = cells[(cells.trained == "a") & (cells.scored == "a") & (cells.suite == "core")].iloc[0]
    assert (own.fgpo, own.sampled, own.grpo) == (100.0, 50.0, 0.0)
    assert own.fixed == 100.0 and own.hindsight == 100.0  # subset 1 is best on a's training table
    assert own.vs_grpo.gap == 100.0 and own.vs_grpo.a_better and own.grpo_plain == 50.0
    assert own.vs_fixed.gap == 0.0 and not own.vs_fixed.is_difference
    moved = cells[(cells.trained == "a") & (cells.scored == "b") & (cells.suite == "core")].iloc[0]
    assert (moved.fgpo, moved.grpo, moved.fixed) == (0.0, 100.0, 100.0)  # a's picks, b's answers
    assert moved.vs_grpo.b_better
    pooled = cells[(cells.trained == "b") & (cells.scored == "b") & (cells.suite == "pooled")].iloc[0]
    assert pooled.questions == 16 and pooled.fgpo == 100.0


def test_counts_matrix_and_margins():
    cells = G.grid_cells(_toy_grid(), resamples=200)
    counts = G.cell_counts(cells)
    assert counts.loc["grpo", "cells"] == 8  # pooled rows left out
    assert counts.loc["grpo", "ahead"] == 4 and counts.loc["grpo", "behind, a difference"] == 4
    m = G.transfer_matrix(cells, "core")
    assert m.loc["a", "a"] == 100.0 and m.loc["a", "b"] == 0.0 and m.loc["b", "a"] == 0.0
    gaps = G.transfer_matrix(cells, "core", "vs_grpo")
    assert gaps.loc["b", "b"] == 100.0
    f = G.margin_frame(cells)
    assert {"gap", "low", "high", "difference"} <= set(f.columns) and f.difference.all()


def test_figure_has_alt_text_and_three_panels():
    from fgpo_core.book import paper
    from fgpo_core.book.plots_grid import plot_grid

    cells = G.grid_cells(_toy_grid(), resamples=200)
    per = cells[cells.suite != "pooled"]
    own = G.margin_frame(per[per.trained == per.scored]).assign(row=lambda f: f.scored)
    moved = G.margin_frame(per[per.trained == "a"]).assign(row=lambda f: f.scored)
    strips = {"own": own, "moved": moved}
    fig = plot_grid(own, moved, strips, paper.TRANSFER, ["a", "b"], ["core", "mosaic"], "a")
    assert len(fig.axes) == 4  # two heatmaps, their colour bar, the margins
    assert "heatmaps" in getattr(fig, "_fgpo_alt")


def test_load_grid_names_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match="no grid study for x"):
        G.load_grid(tmp_path, tmp_path, ["x"])


def test_grid_methods_refuses_a_study_without_the_comparisons(tmp_path, capsys):
    assert fair_seeds.main([]) == 2
    assert "--grid" in capsys.readouterr().err


def test_domain_rows_pool_the_suites_by_domain():
    g = _toy_grid()
    domains = {s: {f"{s}{i}": ("ID" if i < 6 else "OOD") for i in range(8)} for s in g.suites}
    cells = G.grid_cells(g, pairs=[("a", "a")], domains=domains, resamples=200)
    assert cells.suite.tolist() == ["core", "mosaic", "pooled", "in domain", "out of domain"]
    assert cells.set_index("suite").loc[["in domain", "out of domain"], "questions"].tolist() == [12, 4]
    assert G.cell_counts(cells).loc["grpo", "cells"] == 2


def test_reader_tables_and_profile(tmp_path):
    import json

    g = _toy_grid()
    cells = G.grid_cells(g, resamples=200)
    t, gaps = G.cell_table(cells[cells.trained == cells.scored], g)
    assert len(t) == 4 and t["FGPO"].tolist() == [100.0] * 4 and len(gaps) == 4
    assert gaps["− (GRPO + bonus)"].iloc[0].endswith("*")  # a difference is starred
    tt = G.transfer_table(cells, g)
    assert tt.columns.tolist() == ["suite", "trained on", "a", "b"] and len(tt) == 4
    assert not G.gap_text(cells.vs_fixed.iloc[0]).endswith("*")  # no difference, no star
    for r, (calls, secs) in {"a": (32, 4.0), "b": (0, 0.0)}.items():
        for s in ("core", "train"):
            (tmp_path / r / s).mkdir(parents=True)
            build = {"reasoner_calls": calls, "seconds": secs} if calls else None
            (tmp_path / r / s / "manifest.json").write_text(json.dumps({"build": build}))
    g.table_root = str(tmp_path)
    p = G.reasoner_profile(g)
    assert p.loc["a", "calls per second"] == 8.0 and np.isnan(p.loc["b", "calls per second"])
    assert p.loc["a", "oracle"] == 100.0 and p.loc["a", "no tool"] == 0.0


def test_the_committed_grid_trains_the_fair_tests_choices():
    """Every committed grid study trains exactly the methods the committed fair test names for it."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    names = fair_seeds.grid_methods(
        root / "runs/cpu/fair", root / "data/tables/cpu/reader", root / "data/benchmarks/cpu"
    )
    assert [G.role_of(n) for n in names] == list(G.ROLES)
    studies = sorted((root / "runs/cpu/grid").glob("*/manifest.json"))
    assert len(studies) >= 2
    for m in studies:
        cfg = json.loads(m.read_text())["config"]
        assert cfg["methods"] == ",".join(names) and cfg["dev_suite"] == "indev", m.parent.name
