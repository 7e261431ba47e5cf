"""The in/out-of-domain split agrees with an independent computation on the committed study."""

import numpy as np
import pytest

from fgpo_core.book.build import REPO_ROOT
from fgpo_core.experiments.domains import (
    best_fixed_subset,
    domain_accuracy,
    domain_verdicts,
    method_correct,
    split_scores,
    study_training_table,
)
from fgpo_core.experiments.study import load_study
from fgpo_core.reports.study import study_scores
from fgpo_core.table import load_tables

SUITES = ["core", "microbe", "mosaic"]


@pytest.fixture(scope="module")
def committed():
    st = load_study(REPO_ROOT / "runs/cpu/study-first-pool")
    tables = load_tables({"r": str(REPO_ROOT / "data/tables/cpu/reader")}, SUITES + ["train"])["r"]
    return st, tables, set(study_training_table(st, tables["train"]).family)


def test_pooled_accuracy_is_the_question_weighted_mean_of_the_suites(committed):
    st, tables, fams = committed
    acc = domain_accuracy(st, tables, ["fgpo", "grpo"], SUITES, fams)
    sc = study_scores(st, tables)
    for m in ("fgpo", "grpo"):
        f = sc[sc.method == m]
        weighted = (f.accuracy * f.n).groupby(f.seed).sum() / f.n.groupby(f.seed).sum()
        assert acc.loc[m, "pooled"] == pytest.approx(weighted.mean())
    q = acc.loc["questions"]
    assert q["pooled"] == q["in domain"] + q["out of domain"] == sc[(sc.method == "fgpo") & (sc.seed == 0)].n.sum()


def test_splits_follow_the_training_families_and_the_cross_organism_suite(committed):
    st, tables, fams = committed
    assert fams == {"cpg", "promoter", "repeat", "splice"}
    acc = domain_accuracy(st, {"core": tables["core"]}, ["fgpo"], ["core"], fams)
    core = tables["core"]
    ids, picks = st.pick_matrix("core", "fgpo")
    sel = core.select(ids)
    seen = np.isin(sel.family, sorted(fams))
    by_hand = np.mean([100 * sel.correct[np.arange(len(ids)), p][seen].mean() for p in picks])
    assert acc.loc["fgpo", "in domain"] == pytest.approx(by_hand)
    assert acc.loc["questions", "in domain"] == seen.sum() == 600
    pooled = domain_accuracy(st, tables, ["fgpo"], SUITES, fams).loc["questions"]
    assert pooled["in domain"] == 600 + 375  # core's and mosaic's training families; microbe is all OOD


def test_best_fixed_is_the_argmax_and_verdicts_are_antisymmetric(committed):
    st, tables, fams = committed
    ids = {s: st.pick_matrix(s, "fgpo")[0] for s in SUITES}
    best = best_fixed_subset(tables, ids)
    pooled = np.concatenate([tables[s].select(ids[s]).correct for s in SUITES]).mean(0)
    assert pooled[best] == pooled.max()
    v = domain_verdicts(st, tables, "fgpo", ["grpo"], SUITES, fams)
    w = domain_verdicts(st, tables, "grpo", ["fgpo"], SUITES, fams)
    for split in ("pooled", "in domain", "out of domain"):
        assert v[("grpo", split)].gap == pytest.approx(-w[("fgpo", split)].gap)
        assert v[("grpo", split)].is_difference == w[("fgpo", split)].is_difference
    assert len(method_correct(st, tables, "fgpo", ids)) == st.manifest["config"]["seeds"]


def test_a_study_cannot_claim_more_training_questions_than_the_table_holds(committed):
    st, tables, _ = committed
    with pytest.raises(ValueError):
        study_training_table(st, tables["train"].select(tables["train"].question_ids[:10]))


def test_split_scores_read_a_split_as_a_suite(committed):
    """Each split's rows agree with domain_accuracy and with method_correct question by question,
    and the pooled tools per question are the question-weighted mean of the suites'."""
    st, tables, fams = committed
    sp = split_scores(st, tables, SUITES, fams)
    acc = domain_accuracy(st, tables, ["fgpo", "grpo"], SUITES, fams)
    sc = study_scores(st, tables)
    for m in ("fgpo", "grpo"):
        for split in ("pooled", "in domain", "out of domain"):
            assert sp[(sp.method == m) & (sp.suite == split)].accuracy.mean() == pytest.approx(acc.loc[m, split])
        pooled = sp[(sp.method == m) & (sp.suite == "pooled")].sort_values("seed")
        for seed, vec in zip(pooled.seed, pooled.correct_vector):
            ids = {s: np.asarray(st.pick_matrix(s, m)[0]) for s in SUITES}
            np.testing.assert_array_equal(vec, method_correct(st, tables, m, ids)[seed])
        f = sc[(sc.method == m) & (sc.seed == 0)]
        assert pooled.tools.iloc[0] == pytest.approx((f.tools * f.n).sum() / f.n.sum())


def test_a_spread_study_trained_on_every_family_of_the_pool():
    st = load_study(REPO_ROOT / "runs/cpu/larger-eight")
    assert st.manifest["config"]["train_spread"] and st.manifest["n_questions"]["train"] == 500
    train = load_tables({"r": str(REPO_ROOT / "data/tables/cpu/reader")}, ["train"])["r"]["train"]
    used = study_training_table(st, train)
    ids = list(train.question_ids)
    # evenly spread: every family of the pool, the regulator family appended last included
    assert set(used.family) == set(train.family) and "regulator" in set(used.family)
    assert used.question_ids[0] == ids[0] and used.question_ids[-1] == ids[-1]
