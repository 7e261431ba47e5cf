"""The policy-head selector: its head, its training loop for every method, the feature cache and
`fgpo study` end to end at toy scale."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from fgpo_core.algorithms.head import METHODS, HeadConfig, method_kind, parse_method, train_head
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


@pytest.mark.parametrize("method", METHODS)
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
    kind, k = method_kind(method)
    per_visit = {"fgpo": k or 16, "grpo": 6, "grpo-eq1": 6, "rloo": 6, "sft": 0, "dpo": 0}.get(kind)
    if per_visit is not None:
        assert a.reward_evaluations == per_visit * len(t.correct) * cfg.epochs
    else:  # dynamic sampling pays for every group it draws
        assert a.reward_evaluations >= 6 * len(t.correct) * cfg.epochs
    sampled = kind in ("grpo", "grpo-eq1", "rloo", "dapo")
    assert ("dead_observed" in a.steps) == sampled
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
    assert parse_method("fgpo-k4-beta0.08-T0.7").config(base).beta == 0.08
    assert parse_method("fgpo-k4-beta0.08-T0.7").k == 4
    assert parse_method("fgpo-T0.7").config(base).temperature == 0.7
    assert parse_method("dpo-beta0.1").config(base).dpo_beta == 0.1  # DPO's beta, not the entropy bonus
    assert parse_method("dpo-beta0.1").config(base).beta == base.beta
    g = parse_method("grpo-eq1-G16-h64")
    assert (g.base, g.config(base).G, g.config(base).hidden, g.config(base).method) == ("grpo-eq1", 16, 64,
                                                                                          "grpo-eq1-G16-h64")
    s = parse_method("fgpo-noT3-n250-e8")
    assert (s.drop_tool, s.n_train, s.config(base).epochs) == (3, 250, 8)
    for bad in ("ppo", "fgpox", "fgpo-zz", "grpo-G1.5", "fgpo-noT0", "fgpo-n0", "fgpo-k", "fgpo-lambda"):
        with pytest.raises(ValueError):
            parse_method(bad)


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
    from helpers import HashReasoner

    import fgpo_core.selectors.features as features
    from fgpo_core.experiments.study import StudyConfig, load_study, run_study
    from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
    from fgpo_core.table.build import build_table, merge_table

    bench, _ = ci_bench
    _, suites = load_benchmark(bench)
    lib = tool_library_for(bench)
    sizes = {"train": 24, "dev": 8, "core": 8, "microbe": 8}
    for s, n in sizes.items():
        build_table(suites[s][:n], lib, HashReasoner(), tmp_path / "tables" / s, progress=False)
        merge_table(tmp_path / "tables" / s)

    class Fake:  # a stand-in encoder: features from a hash of the prompt (no model needed)
        fingerprint = "fake"

        def __call__(self, texts):
            return np.stack([np.random.default_rng(abs(hash(t)) % 2 ** 32).normal(size=8) for t in texts])

    features.build_features({s: suites[s][:n] for s, n in sizes.items()}, tmp_path / "feat", "minilm", progress=False,
                            model=Fake())
    cfg = StudyConfig(methods="fgpo,grpo,sft,fgpo-k2", seeds=2, lrs="1e-2,1e-1", epochs=2,
                      table_dir=str(tmp_path / "tables"), features_dir=str(tmp_path / "feat"), bench_dir=str(bench),
                      suites="core,microbe", n_train=24, n_dev=8, n_test=8, out_dir=str(tmp_path / "study"))
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
    with pytest.raises(ValueError, match="no features for suite 'mosaic'"):
        features.load_features(tmp_path / "feat").rows("mosaic", ["x"])
    # a feature cache of other questions is refused
    with pytest.raises(ValueError, match="other questions"):
        features.load_features(tmp_path / "feat", {"core": suites["core"][1:9]})
    assert json.loads((tmp_path / "feat" / "manifest.json").read_text())["encoder"] == "minilm"

    # ablations are method names: a dropped tool, fewer training questions, a modified setting,
    # with checkpoints scored on every test suite
    abl = StudyConfig(**{**cfg.__dict__, "methods": "fgpo-noT1,fgpo-n12,grpo-G2,dpo-beta0.1", "seeds": 1,
                         "lrs": "1e-1", "checkpoints": 2, "out_dir": str(tmp_path / "abl")})
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
    two = StudyConfig(**{**abl.__dict__, "methods": "sft-e1-lr0.3+fgpo-e2,sft-e1-lr0.3", "keep": "last",
                         "out_dir": str(tmp_path / "two")})
    run_study(two, progress=False)
    tw = load_study(tmp_path / "two")
    assert tw.sweep.set_index("method").loc["sft-e1-lr0.3+fgpo-e2", "reward_evaluations"] == 24 * 16 * 2
    assert tw.sweep.best_step.tolist() == [4, 2]  # keep = last: the final step (2 a epoch) of the last stage
    c2 = tw.checkpoints[(tw.checkpoints.family == "all") & (tw.checkpoints.method == "sft-e1-lr0.3+fgpo-e2")]
    assert sorted(c2.epoch.unique()) == [0.5, 1.0, 2.0, 3.0] and set(c2.stage) == {0, 1}
    first = c2[(c2.stage == 0) & (c2.epoch == 1.0)].set_index("suite").accuracy
    alone = tw.checkpoints[(tw.checkpoints.family == "all") & (tw.checkpoints.method == "sft-e1-lr0.3")
                           & (tw.checkpoints.epoch == 1.0)].set_index("suite").accuracy
    pd.testing.assert_series_equal(first, alone)  # the pipeline's first stage is the plain SFT run
