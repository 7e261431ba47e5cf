"""Every figure of the book reads at the page's width: drawn at the text column's width, no text under
9 points as displayed, alt text that says what it shows, and the methods it draws in colours at
least MIN_DELTA_E apart (CIEDE2000, checked against Sharma et al.'s published test pairs)."""

import base64
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fgpo_core.book import plots, plots_lm  # noqa: E402
from fgpo_core.book.palette import (
    FAMILY_STYLE,
    MIN_DELTA_E,
    checked_study_palette,
    set_style,  # noqa: E402
    spare_colour,
    variant_styles,
)
from fgpo_core.book.palette_check import ciede2000, delta_e, hex_to_lab, too_close  # noqa: E402
from fgpo_core.book.plots_page import (
    COLUMN_PX,
    MIN_FONT_PT,
    alt_text,
    legibility,
    page_png,  # noqa: E402
    set_alt,
)

HEAD = ["fgpo", "grpo", "grpo-eq1", "rloo", "dapo", "sft", "dpo"]
"""The methods the head study draws on one figure."""
PROPOSED = {"grpo-eq1": "#6b1a10", "rloo": "#f2a33a", "dapo": "#66a61e", "rloo-kl": "#8e0152"}
"""Registry colours that keep every two of the head study's methods apart (proposed for the registry)."""


@pytest.fixture
def proposed(monkeypatch):
    """The registry with :data:`PROPOSED`'s colours, so the figures' layout is tested whatever the
    registry's colours are (their distance has its own test)."""
    import dataclasses

    from fgpo_core.core.registry import ESTIMATORS

    for name, colour in PROPOSED.items():
        if name in ESTIMATORS:
            monkeypatch.setitem(ESTIMATORS, name, dataclasses.replace(ESTIMATORS[name], colour=colour))


@pytest.fixture(autouse=True)
def _style():
    set_style()
    yield
    plt.close("all")


@pytest.mark.parametrize(
    "lab1, lab2, expected",
    [  # Sharma, Wu and Dalal (2005), Table 1: pairs 1-3, 7, 17-20
        ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
        ((50, 3.1571, -77.2803), (50, 0, -82.7485), 2.8615),
        ((50, 2.8361, -74.0200), (50, 0, -82.7485), 3.4412),
        ((50, 0, 0), (50, -1, 2), 2.3669),
        ((50, 2.5, 0), (73, 25, -18), 27.1492),
        ((50, 2.5, 0), (61, -5, 29), 22.8977),
        ((50, 2.5, 0), (56, -27, -3), 31.9030),
        ((50, 2.5, 0), (58, 24, 15), 19.4535),
    ],
)
def test_ciede2000_matches_the_published_test_pairs(lab1, lab2, expected):
    assert ciede2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert ciede2000(lab2, lab1) == pytest.approx(expected, abs=1e-4)


def test_lab_of_white_and_red_and_the_distance_check():
    assert hex_to_lab("#ffffff") == pytest.approx((100, 0, 0), abs=1e-3)
    assert hex_to_lab("#ff0000") == pytest.approx((53.24, 80.09, 67.20), abs=0.01)  # the sRGB red's CIELAB
    assert delta_e("#c8553d", "#c8553d") == 0
    assert too_close({"a": "#e59a52", "b": "#d4a017", "c": "#1b7f79"}) == [("a", "b", 12.4)]
    assert too_close({"a": "#1b7f79", "b": "#1b7f79"}) == []  # one colour on purpose: variants, told apart otherwise


def test_the_head_studys_methods_are_told_apart_by_colour():
    """Fails while the registry gives two of the head study's methods look-alike colours (the
    report's proposal: GRPO (Eq. 1) #6b1a10, RLOO #f2a33a, GRPO + dynamic sampling #66a61e,
    RLOO + KL #8e0152)."""
    checked_study_palette(HEAD)
    with pytest.raises(ValueError, match="too close"):
        plots.check_distinct({"one red": "#c8553d", "another": "#c4573f"})


def test_past_enumerations_families_and_spare_colours_are_apart():
    assert too_close({name: c for name, c, _ in FAMILY_STYLE.values()}) == []
    taken = ["#1b7f79", "#c8553d"]
    for _ in range(5):
        c = spare_colour(taken)
        assert min(delta_e(c, t) for t in taken) >= MIN_DELTA_E
        taken.append(c)


def test_variants_of_one_colour_differ_by_marker_and_dash():
    styles = variant_styles({f"FGPO {i}": "#1b7f79" for i in range(5)} | {"GRPO": "#c8553d"})
    fgpo = [styles[f"FGPO {i}"] for i in range(5)]
    assert len({m for _, m in fgpo}) == 5 and len({str(ls) for ls, _ in fgpo}) == 5


def check_page(fig) -> dict:
    """The figure as a chapter stores it, checked as the page shows it."""
    _, meta = page_png(fig)
    assert meta["width"] <= COLUMN_PX / 0.9, f"drawn {meta['width']} px wide, shown at {COLUMN_PX}"
    assert meta["fgpo"]["min_font_pt"] >= MIN_FONT_PT, meta
    assert len(meta["alt"].split()) >= 8 and ".png" not in meta["alt"]
    return meta


def test_a_wide_figure_with_small_text_fails_the_page_check():
    fig, ax = plt.subplots(figsize=(13, 4))
    ax.plot([0, 1], [0, 1], label="x")
    ax.legend(fontsize=7)
    _, meta = page_png(fig)
    assert meta["width"] > COLUMN_PX and meta["fgpo"]["min_font_pt"] < 5
    with pytest.raises(AssertionError):
        check_page(fig)
    fig, ax = plt.subplots()
    ax.set(title="Accuracy", xlabel="epoch", ylabel="accuracy (%)")
    assert alt_text(fig) == "A chart: Accuracy (accuracy (%) against epoch)."
    assert alt_text(set_alt(fig, "what  it\nshows")) == "what it shows"
    assert legibility(fig, png_width=1376)["scale"] == pytest.approx(0.5, abs=0.001)


def _dev(methods, epochs=4, seeds=2):
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        [
            {
                "method": m,
                "epoch": e,
                "seed": s,
                "accuracy": 40 + rng.random() * 10,
                "dead_eq1": rng.random() * 50,
                "dead_differential": rng.random() * 80,
                "entropy": 2 - e / 4,
                "tools": 1.5,
            }
            for m in methods
            for e in range(epochs)
            for s in range(seeds)
        ]
    )


def test_the_proposed_colours_keep_every_estimator_apart(proposed):
    from fgpo_core.core.registry import ESTIMATORS

    checked_study_palette([name for name, est in ESTIMATORS.items() if not est.dial])


def test_the_study_figures_fit_the_page(proposed):
    labels = {m: m.upper() for m in HEAD}
    check_page(plots.plot_study_curves(_dev(HEAD), HEAD, labels, visits_per_epoch=2002))
    suites = ["core", "taxonomy", "tf_motif"]
    means = pd.DataFrame(50.0, index=HEAD, columns=suites)
    base = pd.DataFrame(
        [
            {"suite": s, "method": m, "accuracy": a}
            for s in suites
            for m, a in (("No-Tool", 30), ("All-Tools", 45), ("BestFixed*", 50))
        ]
    )
    check_page(plots.plot_study_accuracy(means, means * 0 + 2, base, HEAD, labels))
    fams = ["promoter", "splice", "taxonomy", "tf_motif"]
    rates = {
        n: pd.DataFrame(np.full((4, 4), v), index=fams, columns=["T1", "T2", "T3", "T4"])
        for n, v in (("SFT", 10.0), ("GRPO + dynamic sampling", 40.0), ("FGPO", 80.0))
    }
    check_page(plots.plot_tool_rates(rates, "Tool calls per family on core"))
    fixed = pd.Series(np.linspace(30, 60, 16), index=[f"subset {i}" for i in range(16)])
    scores = pd.DataFrame({"method": ["FGPO"] * 3 + ["GRPO"] * 3, "accuracy": [55, 56, 57, 50, 51, 49]})
    check_page(plots.plot_subsets_and_methods(fixed, scores, 80.0))


def test_the_race_and_the_estimator_study_fit_the_page():
    order = ["FGPO", "k-subset k=2", "k-subset k=4", "GRPO (Eq. 1 reward)", "GRPO (differential)"]
    evals = pd.DataFrame(
        [
            {
                "arm": a,
                "epoch": e,
                "run": r,
                "accuracy": 40 + e,
                "reward_evaluations": 10 * (e + 1),
                "dead_G6": 5.0 * e,
                "entropy": 2 - e / 5,
            }
            for a in order
            for e in range(5)
            for r in (0, 1)
        ]
    )
    steps = pd.DataFrame(
        [{"arm": a, "epoch": e / 2, "run": 0, "dead_observed": 20.0} for a in order[3:] for e in range(10)]
    )
    race = SimpleNamespace(
        evals=evals, steps=steps, order=order, table=SimpleNamespace(ceilings=lambda: {"oracle": 80.0, "no_tool": 35.0})
    )
    fig = plots.plot_race(race)
    check_page(fig)
    observed = fig.axes[4]  # the observed dead groups in a panel of their own, one line per sampled arm
    assert "observed" in observed.get_title() and len(observed.get_lines()) == len(order[3:])
    assert "closed form" in fig.axes[2].get_title() and "observed" not in fig.axes[2].get_title()
    est = ["GRPO G=2", "GRPO G=6", "k=2", "k=16 (exact)"]
    study = pd.DataFrame(
        [
            {"policy": p, "estimator": e, "cosine": c}
            for p in ("uniform policy", "trained policy")
            for e in est
            for c in np.linspace(-0.5, 1, 8)
        ]
    )
    check_page(plots.plot_estimator_study(study, est))


def test_the_comparison_figures_fit_the_page():
    panel = {
        "x": [1, 2, 4],
        "mean": [50, 51, 52],
        "sd": [1, 1, 1],
        "xlabel": "k",
        "paper": {2: 49.6, 4: 50.5},
        "log_x": True,
        "refs": {"All-Tools": 45.0},
    }
    titles = ("coverage dial", "parsimony", "entropy bonus", "GRPO's group size", "data scale")
    check_page(plots.plot_ablation_panels([{**panel, "title": t} for t in titles], questions="all test questions"))
    f = pd.DataFrame({"ID": [60, 62, 65], "ID sd": 1.0, "OOD": [40, 38, 35], "OOD sd": 1.0}, index=[1, 2, 4])
    check_page(
        plots.plot_id_ood_panels(
            [
                {"title": "more SFT epochs", "xlabel": "SFT epochs", "series": {"SFT": f}},
                {
                    "title": "fixed budget",
                    "xlabel": "share (%)",
                    "series": {"SFT then FGPO": f, "SFT then GRPO": f + 1},
                },
            ]
        )
    )
    traj = {
        "FGPO from SFT 1 ep.": f.reset_index(),
        "GRPO from SFT 1 ep.": f.reset_index() + 1,
        "SFT, epoch by epoch": f.reset_index() - 1,
    }
    check_page(plots.plot_id_ood_plane(traj))
    idx = pd.MultiIndex.from_product([["start", "sft", "fgpo", "grpo", "sft+fgpo"], [4, 16, 64]])
    t = pd.DataFrame({"ID": np.linspace(40, 60, len(idx)), "OOD": np.linspace(20, 40, len(idx))}, index=idx)
    check_page(plots.plot_lm_companion(t))
    ckpt = pd.DataFrame(
        [{"method": m, "epoch": e, "accuracy": 40 + e, "tools": 2.0} for m in ("fgpo", "grpo") for e in range(1, 5)]
    )
    paper = {"steps": (25, 50, 75, 100), "accuracy": (42, 44, 45, 45), "tools": (1, 2, 2, 2)}
    check_page(plots.plot_checkpoints(ckpt, {"fgpo": "FGPO", "grpo": "GRPO"}, paper))


def test_the_past_enumeration_figures_fit_the_page():
    rows = [
        {"family": fam, "calls_per_question": c, "accuracy": 40 + i, "accuracy_sd": 1.0}
        for i, (fam, c) in enumerate(
            [("fgpo", 64), ("shortlist-top", 8), ("shortlist-grow", 16), ("dial", 4), ("grpo", 6)]
        )
    ]
    check_page(plots.plot_budget({6: pd.DataFrame(rows), 8: pd.DataFrame(rows)}, {6: 30.0, 8: 31.0}))
    cols = ["fgpo", "shortlist-top4", "shortlist-top8", "shortlist-grow8", "fgpo-k4", "fgpo-k8", "grpo"]
    seen = {n: pd.DataFrame(50.0, index=range(1, 6), columns=cols) for n in (6, 8, 10)}
    check_page(plots.plot_shortlist_coverage(seen, last_epoch=4))


def test_the_lm_figures_fit_the_page():
    dev = pd.DataFrame({"epoch": [0, 1, 2], "dev_mass_mean": [0.1, 0.8, 0.96], "dev_mass_min": [0.05, 0.6, 0.9]})
    steps = pd.DataFrame({"stage": [1, 1, 2, 2], "epoch_float": [0.5, 1, 1.5, 2], "train_mass": [0.2, 0.7, 0.9, 0.97]})
    check_page(plots_lm.plot_warmup(dev, steps))
    runs = [f"FGPO (lr={lr})" for lr in ("1e-05", "3e-05", "1e-04", "3e-04", "1e-03")] + ["GRPO (lr=1e-05)"]
    d = pd.DataFrame(
        [
            {
                "run": r,
                "step": s,
                "visits": 16 * s,
                "generation": 40.0 + s,
                "format_failures": 2.0,
                "tools": 2.0,
                "kept": s == 2,
                "stopped": False,
            }
            for r in runs
            for s in range(4)
        ]
    )
    logs = {r: pd.DataFrame({"visits": [16, 32], "p_gen_mass": [0.9, 0.95]}) for r in runs[:5]}
    fig = plots_lm.plot_lm_dev(d, logs)
    check_page(fig)
    lines = fig.axes[0].get_lines()[:6]  # five FGPO variants and GRPO: a colour and a marker each
    assert len({ln.get_marker() for ln in lines}) == 6
    assert len({ln.get_color() for ln in lines}) == 6
    assert lines[0].get_color() == plots_lm.color("FGPO")  # the method's first run keeps its colour
    course = pd.DataFrame(
        [
            {"run": r, "step": s, "visits": 16 * s, "cpu_hours": s / 4, "generation": 40.0 + s, "kept": s == 3}
            for r in ("FGPO + format term", "GRPO")
            for s in range(5)
        ]
    )
    dead = pd.DataFrame({"visits": [16, 32], "recount": [0.2, 0.5]})
    check_page(plots_lm.plot_pool_course(course, {"All-Tools": 45.0}, dead))


def test_the_page_gives_each_output_picture_its_alt_text_width_and_link(tmp_path):
    """The Sphinx extension reads each picture's metadata from the executed notebook (by the hash
    MyST-NB names it with) and gives the image node its alt text, its displayed width (so Sphinx
    links it to the full picture) and the small-text class where its text is too small."""
    import hashlib
    import json

    from docutils import nodes

    from fgpo_core.book.plots_page import SMALL_TEXT_CLASS, _dress_images, output_images

    fig, ax = plt.subplots(figsize=(13, 3))
    ax.set(title="A wide one", xlabel="x", ylabel="y")
    data, meta = page_png(fig)
    raw = base64.b64decode(data)
    digest = hashlib.sha256(raw).hexdigest()
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {"output_type": "display_data", "data": {"image/png": data}, "metadata": {"image/png": meta}}
                ],
            }
        ],
        "metadata": {},
    }
    (tmp_path / "c.ipynb").write_text(json.dumps(nb))
    assert output_images(tmp_path / "c.ipynb")[digest]["alt"] == "A chart: A wide one (y against x)."
    doctree = nodes.document(None, None)
    shown, other = nodes.image(uri=f"../build/{digest}.png"), nodes.image(uri="logo.png")
    doctree += [shown, other]
    env = SimpleNamespace(docname="c", doc2path=lambda name: tmp_path / f"{name}.ipynb")
    _dress_images(SimpleNamespace(env=env), doctree)
    assert shown["alt"] == meta["alt"] and shown["width"] == f"{meta['width']}px"
    assert SMALL_TEXT_CLASS in shown["classes"] and "alt" not in other and "width" not in other
