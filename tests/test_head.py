"""The policy-head selector: its head, its training loop for every method, the feature cache and
`fgpo study` end to end at toy scale."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from fgpo_core.algorithms.head import HeadConfig, method_kind, parse_method, train_head
from fgpo_core.core.method_names import ALL_METHODS
from fgpo_core.core.settings import EstimatorSettings
from fgpo_core.selectors.head import PolicyHead
from fgpo_core.table import RewardTable


def family_problem(n=160, seed=0):
    """Questions of four families; in family f only subsets containing tool f are right.
    Features: the family one-hot plus noise. The best fixed subset is the all-tools one, a
    per-family choice of one tool is optimal (fewer tools under Eq. 1)."""
    rng = np.random.default_rng(seed)
    fam = rng.integers(0, 4, n)
    masks = np.arange(16)
    correct = (masks[None, :] >> fam[:, None]) & 1 == 1
    x = np.eye(4)[fam] + 0.1 * rng.normal(size=(n, 4))
    ids = np.array([f"q{seed}-{i}" for i in range(n)])
    return x.astype(np.float32), RewardTable(correct, 4, question_ids=ids), fam


def test_head_starts_uniform_and_scales_by_temperature():
    h = PolicyHead(5, 16, hidden=8, temperature=0.5)
    x = torch.randn(3, 5)
    torch.testing.assert_close(h.q(x), torch.full((3, 16), 1 / 16))
    with pytest.raises(ValueError):
        PolicyHead(5, 16, temperature=0)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_method_trains_deterministically_and_learns_the_family_rule(method):
    x, t, fam = family_problem()
    dx, dt, dfam = family_problem(64, seed=1)
    cfg = HeadConfig(method=method, lr=0.1, epochs=6, seed=3)
    a, b = train_head(x, t, dx, dt, cfg), train_head(x, t, dx, dt, cfg)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    assert a.best_step == b.best_step
    first, best = a.dev.iloc[0], a.dev.set_index("step").loc[a.best_step]
    if method != "fgpo-k1":  # one subset per visit: the renormalised q is 1 on it, no gradient at all
        assert best["accuracy"] > first["accuracy"] or first["accuracy"] == 100.0
    spec = parse_method(method)
    kind = spec.estimator.kind  # rewards read per question visit, by how the estimator reads the table
    per_visit = {"exact": 16, "budgeted": spec.k, "imitation": 0, "sampled": 6}[kind]
    if "dropped" not in a.steps:
        assert a.reward_evaluations == per_visit * len(t.correct) * cfg.epochs
    else:  # dynamic sampling pays for every group it draws
        assert a.reward_evaluations >= 6 * len(t.correct) * cfg.epochs
    assert ("dead_observed" in a.steps) == (kind == "sampled")
    assert {"J", "entropy", "top_mass", "tools", "dead_eq1", "dead_differential"} <= set(a.steps)


def test_fgpo_answers_every_family_right_and_parsimony_lowers_its_tools():
    x, t, fam = family_problem()
    dx, dt, dfam = family_problem(64, seed=1)
    tools = {}
    for lam in (0.0, 0.5):
        run = train_head(x, t, dx, dt, HeadConfig(method="fgpo", lr=0.3, epochs=20, lam=lam))
        picks = run.q(dx).argmax(1)
        assert ((picks >> dfam) & 1 == 1).all()  # every pick contains the family's own tool: right
        tools[lam] = dt.space.sizes[picks].mean()
    assert tools[0.5] < tools[0.0] - 0.5


def test_method_modifiers_parse_into_the_settings_they_name():
    base = HeadConfig()
    assert parse_method("fgpo-lambda0").config(base).lam == 0.0
    c = parse_method("fgpo-k4-beta0.08-T0.7").config(base)
    assert (c.settings.regularizer, c.settings.weight, c.settings.k, c.temperature) == ("ent", 0.08, 4, 0.7)
    assert parse_method("fgpo-k4-beta0.08-T0.7").k == 4
    assert parse_method("fgpo-T0.7").config(base).temperature == 0.7
    d = parse_method("dpo-beta0.1").config(base).settings
    assert d.dpo_beta == 0.1 and d.regularizer is None  # DPO's beta, not the entropy bonus
    g = parse_method("grpo-eq1-G16-h64")
    assert (g.base, g.config(base).settings.G, g.config(base).hidden, g.config(base).method) == (
        "grpo-eq1",
        16,
        64,
        "grpo-eq1-G16-h64",
    )
    s = parse_method("fgpo-noT3-n250-e8")
    assert (s.drop_tool, s.n_train, s.config(base).epochs) == (3, 250, 8)
    for bad in (
        "ppo",
        "fgpox",
        "fgpo-zz",
        "grpo-G1.5",
        "fgpo-noT0",
        "fgpo-n0",
        "fgpo-k",
        "fgpo-lambda",
        "fgpo-G16",
        "grpo-lambda0.05",
        "dpo-G4",
        "fgpo-u0",
    ):
        with pytest.raises(ValueError):
            parse_method(bad)
    # the flat keywords of older configs still mean what they meant
    assert HeadConfig(G=4, dpo_beta=0.1, max_draws=2).settings == EstimatorSettings(G=4, dpo_beta=0.1, max_draws=2)
    assert HeadConfig(beta=0.03).settings == EstimatorSettings()
    assert HeadConfig(beta=0.0).settings == EstimatorSettings(regularizer="ent", weight=0.0)


@pytest.mark.parametrize("k", [1, 4, 8])
def test_best_seen_of_the_coverage_dial_matches_its_closed_form(k):
    """With one Eq. 1-optimal subset per question (the family problem under lambda > 0), k uniform
    draws out of 16 see it with probability k / 16; every draw of GRPO is logged the same way."""
    x, t, _ = family_problem(320)
    run = train_head(x, t, x[:16], t.subset(np.arange(16)), HeadConfig(method=f"fgpo-k{k}", lr=0.1, epochs=10))
    seen = run.steps["best_seen"].mean()
    sd = 100 * np.sqrt(k / 16 * (1 - k / 16) / (320 * 10))
    assert abs(seen - 100 * k / 16) < 4 * sd + 1e-9
    full = train_head(x, t, x[:16], t.subset(np.arange(16)), HeadConfig(method="fgpo", epochs=1))
    assert (full.steps["best_seen"] == 100).all()
    # GRPO's differential reward is indifferent between right subsets: it settles on a right one
    # that is not the parsimonious optimum, and its groups stop seeing the optimum at all
    g = train_head(x, t, x[:16], t.subset(np.arange(16)), HeadConfig(method="grpo", lr=0.3, epochs=5))
    assert g.steps["best_seen"].between(0, 100).all()
    assert g.steps["best_seen"].iloc[-20:].mean() < g.steps["best_seen"].iloc[:5].mean()
    assert g.steps["accuracy"].iloc[-20:].mean() > 90


def test_unknown_method_and_bad_k_are_refused():
    x, t, _ = family_problem(20)
    with pytest.raises(ValueError, match="unknown method"):
        method_kind("ppo")
    with pytest.raises(ValueError, match="coverage k"):
        train_head(x, t, x, t, HeadConfig(method="fgpo-k32"))


def test_study_end_to_end_resumes_and_writes_one_row_per_method_seed_suite_question(ci_bench, tmp_path):
    from helpers import toy_study_inputs

    import fgpo_core.selectors.features as features
    from fgpo_core.experiments.study import StudyConfig, load_study, run_study

    bench, _ = ci_bench
    suites = toy_study_inputs(bench, tmp_path, {"train": 24, "dev": 8, "core": 8, "microbe": 8})
    cfg = StudyConfig(
        methods="fgpo,grpo,sft,fgpo-k2",
        seeds=2,
        lrs="1e-2,1e-1",
        epochs=2,
        table_dir=str(tmp_path / "tables"),
        features_dir=str(tmp_path / "feat"),
        bench_dir=str(bench),
        suites="core,microbe",
        n_train=24,
        n_dev=8,
        n_test=8,
        out_dir=str(tmp_path / "study"),
    )
    run_study(cfg, progress=False)
    st = load_study(tmp_path / "study")
    assert list(st.picks.columns) == ["method", "seed", "suite", "question_id", "mask"]
    assert len(st.picks) == 4 * 2 * (8 + 8)
    assert st.picks["mask"].between(0, 15).all()
    assert set(st.manifest["chosen_lr"]) == {"fgpo", "grpo", "sft", "fgpo-k2"}
    assert len(st.sweep) == 4 * 2 * 2 and st.q_matrix("fgpo", 0).shape == (8, 16)
    np.testing.assert_allclose(st.q_matrix("grpo", 1).sum(1), 1.0, atol=1e-5)
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "study" / "parts").iterdir()}
    run_study(cfg, progress=False)  # resumed: every run is found in parts/ and reused
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "study" / "parts").iterdir()} == before
    pd.testing.assert_frame_equal(load_study(tmp_path / "study").picks, st.picks)
    # keeping a few policies leaves every other frame as it was
    from fgpo_core.experiments.study import keep_q

    with pytest.raises(ValueError, match="no policy of dpo"):
        keep_q(tmp_path / "study", ["dpo"])
    keep_q(tmp_path / "study", ["sft"])
    kept = load_study(tmp_path / "study")
    assert set(kept.q.method) == {"sft"} and kept.manifest["q_methods"] == ["sft"]
    np.testing.assert_array_equal(kept.q_matrix("sft", 0), st.q_matrix("sft", 0))
    pd.testing.assert_frame_equal(kept.curves, st.curves)
    keep_q(tmp_path / "study", [])
    assert load_study(tmp_path / "study").q is None
    with pytest.raises(ValueError, match="no features for suite 'mosaic'"):
        features.load_features(tmp_path / "feat").rows("mosaic", ["x"])
    # a feature cache of other questions is refused
    with pytest.raises(ValueError, match="other questions"):
        features.load_features(tmp_path / "feat", {"core": suites["core"][1:9]})
    assert json.loads((tmp_path / "feat" / "manifest.json").read_text())["encoder"] == "minilm"

    # ablations are method names: a dropped tool, fewer training questions, a modified setting,
    # with checkpoints scored on every test suite
    abl = StudyConfig(
        **{
            **cfg.__dict__,
            "methods": "fgpo-noT1,fgpo-n12,grpo-G2,dpo-beta0.1",
            "seeds": 1,
            "lrs": "1e-1",
            "checkpoints": 2,
            "out_dir": str(tmp_path / "abl"),
        }
    )
    run_study(abl, progress=False)
    ab = load_study(tmp_path / "abl")
    drop = ab.picks[ab.picks.method == "fgpo-noT1"]["mask"]
    assert ((drop & 1) == 0).all() and drop.between(0, 15).all()
    assert ab.q_matrix("fgpo-noT1", 0).shape == (8, 16) and (ab.q_matrix("fgpo-noT1", 0)[:, 1::2] == 0).all()
    ev = ab.sweep.set_index("method")["reward_evaluations"]
    assert ev["fgpo-n12"] == 12 * 16 * 2 and ev["grpo-G2"] == 24 * 2 * 2
    ck = ab.checkpoints
    assert st.checkpoints is None
    whole = ck[ck.family == "all"]
    assert len(whole) == 4 * 2 * 2 and set(ck.suite) == {"core", "microbe"} and ck.accuracy.between(0, 100).all()
    fam = ck[ck.family != "all"].groupby(["method", "step", "suite"]).n.sum()
    assert (fam == 8).all()  # the families of a suite partition its questions
    assert sorted(ck[ck.method == "fgpo-n12"].step.unique()) == [1, 2]  # 12 questions: one step an epoch
    with pytest.raises(ValueError, match="T1..T4"):
        run_study(StudyConfig(**{**abl.__dict__, "methods": "fgpo-noT5"}), progress=False)

    # stages of post-training: SFT for one epoch at its own rate, then FGPO in a fresh stacked head;
    # the final heads kept, checkpoints on one epoch axis
    two = StudyConfig(
        **{
            **abl.__dict__,
            "methods": "sft-e1-lr0.3+fgpo-e2,sft-e1-lr0.3",
            "keep": "last",
            "out_dir": str(tmp_path / "two"),
        }
    )
    run_study(two, progress=False)
    tw = load_study(tmp_path / "two")
    assert tw.sweep.set_index("method").loc["sft-e1-lr0.3+fgpo-e2", "reward_evaluations"] == 24 * 16 * 2
    assert tw.sweep.best_step.tolist() == [4, 2]  # keep = last: the final step (2 a epoch) of the last stage
    c2 = tw.checkpoints[(tw.checkpoints.family == "all") & (tw.checkpoints.method == "sft-e1-lr0.3+fgpo-e2")]
    assert sorted(c2.epoch.unique()) == [0.5, 1.0, 2.0, 3.0] and set(c2.stage) == {0, 1}
    first = c2[(c2.stage == 0) & (c2.epoch == 1.0)].set_index("suite").accuracy
    alone = (
        tw.checkpoints[
            (tw.checkpoints.family == "all") & (tw.checkpoints.method == "sft-e1-lr0.3") & (tw.checkpoints.epoch == 1.0)
        ]
        .set_index("suite")
        .accuracy
    )
    pd.testing.assert_series_equal(first, alone)  # the pipeline's first stage is the plain SFT run


def test_shortlist_top_keeps_the_policys_top_subsets_and_explores():
    from fgpo_core.algorithms.head import shortlist_top

    q = np.random.default_rng(0).dirichlet(np.ones(64), size=20)
    sl = shortlist_top(q, 8, np.random.default_rng(1))
    assert (sl.sum(1) == 8).all()
    top6 = np.argsort(-q, 1)[:, :6]  # K - K // 4 of the policy's most likely
    assert sl[np.arange(20)[:, None], top6].all()
    assert not (sl == shortlist_top(q, 8, np.random.default_rng(2))).all()  # the 2 uniform draws vary
    assert shortlist_top(q, 64, np.random.default_rng(1)).all()
    with pytest.raises(ValueError):
        shortlist_top(q, 65, np.random.default_rng(1))


def test_shortlist_grow_walks_the_lattice_from_single_tools_reading_only_paid_rewards():
    from fgpo_core.algorithms.head import shortlist_grow

    n, A = 4, 16
    q = np.full((1, A), 1.0 / A)
    first = shortlist_grow(None, q, np.zeros((1, A)), n, 5)
    assert sorted(np.flatnonzero(first[0])) == [0, 1, 2, 4, 8]  # the empty subset and the single tools
    rewards = np.full((1, A), np.nan)  # only the shortlist's rewards may be read
    rewards[0, [0, 1, 2, 4, 8]] = [0.0, 0.0, 0.9, 0.0, 0.5]
    second = shortlist_grow(first, q, rewards, n, 8)
    # the best two ({T2}: mask 2, {T4}: mask 8) and everything one tool from them
    want = {2, 8} | {2 ^ (1 << t) for t in range(n)} | {8 ^ (1 << t) for t in range(n)}
    assert set(np.flatnonzero(second[0])) == want
    small = shortlist_grow(first, q, rewards, n, 3)
    assert {2, 8} <= set(np.flatnonzero(small[0])) and small.sum() == 3
    # a uniform policy's ties go to random single tools, not always the first ones
    draws = {
        tuple(np.flatnonzero(shortlist_grow(None, q, rewards, n, 2, rng=np.random.default_rng(s))[0])) for s in range(8)
    }
    assert len(draws) > 1


@pytest.mark.parametrize("method", ["shortlist-top4", "shortlist-grow4"])
def test_shortlists_learn_the_family_rule_and_pay_only_for_what_they_read(method):
    x, t, fam = family_problem()
    dx, dt, dfam = family_problem(64, seed=1)
    run = train_head(x, t, dx, dt, HeadConfig(method=method, lr=0.3, epochs=12, seed=0))
    picks = run.q(dx).argmax(1)
    assert ((picks >> dfam) & 1 == 1).mean() > 0.9
    calls = run.extra["reward_calls"]
    assert 4 * len(x) <= calls < 16 * len(x)  # at least one shortlist per question, never the whole table
    assert run.steps["reward_calls"].is_monotonic_increasing and run.steps["reward_calls"].iloc[-1] == calls


def test_a_shortlist_of_every_subset_is_exact_fgpo_and_calls_are_counted_once():
    x, t, fam = family_problem(80)
    dx, dt, _ = family_problem(32, seed=1)
    exact = train_head(x, t, dx, dt, HeadConfig(method="fgpo", lr=0.1, epochs=3))
    full = train_head(x, t, dx, dt, HeadConfig(method="shortlist-top16", lr=0.1, epochs=3))
    pd.testing.assert_frame_equal(exact.dev, full.dev)  # the same run, step for step
    assert exact.extra["reward_calls"] == 80 * 16 and exact.reward_evaluations == 3 * 80 * 16
    g = train_head(x, t, dx, dt, HeadConfig(method="grpo", lr=0.1, epochs=3))
    assert g.extra["reward_calls"] <= min(g.reward_evaluations, 80 * 16)
    assert train_head(x, t, dx, dt, HeadConfig(method="sft", lr=0.1, epochs=1)).extra["reward_calls"] == 80 * 16


def test_a_larger_library_study_from_block_scores_charges_reasoner_calls(ci_bench, tmp_path):
    """Six tools (64 subsets) fused from block scores: the shortlists, the dial, GRPO and exact
    FGPO through `fgpo study`, each charged its distinct (question, subset) pairs; beyond five
    tools a study keeps picks, not whole policies."""
    from helpers import HashEncoder, HashFusionReader

    import fgpo_core.selectors.features as features
    from fgpo_core.experiments.study import StudyConfig, load_study, run_study
    from fgpo_core.genomics.benchmarks import load_benchmark
    from fgpo_core.genomics.tools import library_from_names
    from fgpo_core.table.fusion import score_blocks

    bench, _ = ci_bench
    _, suites = load_benchmark(bench)
    lib = library_from_names(["composition", "splice", "genes", "cpg_islands", "low_complexity", "restriction"])
    sizes = {"train": 24, "dev": 8, "core": 8}
    for s, n in sizes.items():
        score_blocks(suites[s][:n], lib, HashFusionReader(), tmp_path / "tables" / s, progress=False)

    features.build_features(
        {s: suites[s][:n] for s, n in sizes.items()},
        tmp_path / "feat",
        "minilm",
        n_tools=6,
        progress=False,
        model=HashEncoder(),
    )
    methods = "fgpo,grpo,fgpo-k8,shortlist-top8,shortlist-grow8"
    cfg = StudyConfig(
        methods=methods,
        seeds=1,
        lrs="1e-1",
        epochs=3,
        table_dir=str(tmp_path / "tables"),
        features_dir=str(tmp_path / "feat"),
        bench_dir=str(bench),
        suites="core",
        n_train=24,
        n_dev=8,
        n_test=8,
        out_dir=str(tmp_path / "study"),
    )
    run_study(cfg, progress=False)
    st = load_study(tmp_path / "study")
    assert st.q is None and st.picks["mask"].between(0, 63).all() and len(st.picks) == 5 * 8
    calls = st.sweep.set_index("method")["reward_calls"]
    assert calls["fgpo"] == 24 * 64
    assert 24 * 8 <= calls["shortlist-top8"] < 24 * 64 and 24 * 8 <= calls["shortlist-grow8"] < 24 * 64
    assert calls["grpo"] <= 24 * 6 * 3 and calls["fgpo-k8"] <= 24 * 8 * 3
    with pytest.raises(ValueError, match="picks only"):
        st.q_matrix("fgpo", 0)

    from fgpo_core.reports.larger import budget_table, library_rows, method_family, seen_by_epoch
    from fgpo_core.reports.study import label, study_scores
    from fgpo_core.table import load_table

    test = load_table(tmp_path / "tables" / "core")
    b = budget_table(st, study_scores(st, {"core": test}))
    assert b.loc["fgpo", "calls_per_question"] == 64 and b.loc["shortlist-grow8", "family"] == "shortlist-grow"
    assert b.accuracy.between(0, 100).all() and label("shortlist-top8") == "Shortlist (top) K=8"
    assert method_family("fgpo-k8") == "dial" and method_family("grpo-e40") == "grpo"
    seen = seen_by_epoch(st)
    assert (seen["fgpo"] == 100).all() and list(seen.index) == [1, 2, 3]
    lib = library_rows({6: test, 2: test.restrict_tools([0, 1])}, n_train=24)
    assert list(lib.index) == [2, 6] and lib.loc[6, "table_calls"] == 64 * 24
    assert (lib.oracle >= lib.best_fixed).all()
    import matplotlib

    matplotlib.use("Agg")
    from fgpo_core.book.plots import plot_budget

    fig = plot_budget({6: b}, no_tool={6: 25.0})
    assert len(fig.axes) == 1 and fig.axes[0].get_xscale() == "log"

    from fgpo_core.reports.larger import budget_tests, dead_by_epoch, tool_effects

    sc = study_scores(st, {"core": test})
    dead = dead_by_epoch(st)
    assert list(dead.columns) == ["grpo"] and dead.grpo.between(0, 100).all() and list(dead.index) == [1, 2, 3]
    ve = budget_tests(sc, b, rival="fgpo")
    vg = budget_tests(sc, b, family="grpo")
    assert set(ve.index) == set(b.index) - {"fgpo"} and "grpo" not in vg.index and (vg.rival == "grpo").all()
    effects = tool_effects(test)
    assert len(effects) == test.n_tools


def test_a_study_part_trained_by_other_training_code_is_trained_again(ci_bench, tmp_path, monkeypatch):
    """A part's resume key holds the digest of fgpo_core.core and fgpo_core.algorithms: the same
    study resumed under the same code reuses the part; under other code it trains it again."""
    from helpers import toy_study_inputs

    import fgpo_core.experiments.study as study
    from fgpo_core.experiments.study_inputs import training_code_digest

    digest = training_code_digest()
    assert digest == training_code_digest() and len(digest) == 16
    bench, _ = ci_bench
    toy_study_inputs(bench, tmp_path, {"train": 8, "dev": 4, "core": 4})
    cfg = study.StudyConfig(
        methods="fgpo",
        seeds=1,
        lrs="1e-1",
        epochs=1,
        table_dir=str(tmp_path / "tables"),
        features_dir=str(tmp_path / "feat"),
        bench_dir=str(bench),
        suites="core",
        n_train=8,
        n_dev=4,
        n_test=4,
        out_dir=str(tmp_path / "study"),
    )
    trained = []
    real = study.train_head
    monkeypatch.setattr(study, "train_head", lambda *a, **k: trained.append(1) or real(*a, **k))
    part = tmp_path / "study" / "parts" / "fgpo__lr0.1__s0.npz"

    def fingerprint():
        with np.load(part, allow_pickle=False) as z:
            return str(z["fingerprint"])

    study.run_study(cfg, progress=False)
    first = fingerprint()
    study.run_study(cfg, progress=False)  # same code: reused
    assert len(trained) == 1 and fingerprint() == first
    monkeypatch.setattr(study, "training_code_digest", lambda: "0" * 16)  # other training code
    study.run_study(cfg, progress=False)
    assert len(trained) == 2 and fingerprint() != first
