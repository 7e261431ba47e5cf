"""The domain rule by family and organism, and the nearest-neighbour measure of TF-motif's twin."""

from pathlib import Path

import numpy as np
import pytest

from fgpo_core.evaluation.domains import (
    domain_class,
    domain_of,
    question_domain,
    question_domains,
    question_organism,
    training_seen,
)
from fgpo_core.experiments.domains import domain_counts, nearest_training, twin_measure
from fgpo_core.genomics.benchmarks.schema import Question

ROOT = Path(__file__).resolve().parent.parent
CPU = ROOT / "data" / "benchmarks" / "cpu"
FEATS = ROOT / "data" / "features" / "cpu" / "minilm"
EC, BA, CD, KZ, HS = (
    "Escherichia coli",
    "Bacillus amyloliquefaciens",
    "Corynebacterium diphtheriae",
    "Kutzneria sp. 744",
    "Homo sapiens",
)


def q(family, shape="describe", organism=None, answer_label=None, options=None, qid="q", suite="s"):
    prov = {"answer_label": answer_label or "x"}
    if organism:
        prov["organism"] = organism
    if options:
        prov["options"] = {L: {"organism": o} for L, o in zip("ABCD", options)}
        prov["option_labels"] = dict(zip("ABCD", options))
    seqs = {L: "ACGT" * 10 for L in "ABCD"} if shape == "select" else {"": "ACGT" * 10}
    return Question(qid, suite, "test", family, shape, "?", {L: L for L in "ABCD"}, "A", seqs, prov)


TRAIN = [
    q("promoter", organism=EC),
    q("promoter", "select", options=[BA, EC, EC, BA]),
    q("splice"),
    q("cpg"),
    q("repeat"),
    q("regulator"),
]


def test_training_organisms_and_families_come_from_the_pool():
    seen = training_seen(TRAIN)
    assert seen["organisms"] == {EC, BA, HS}
    assert seen["families"] == {"promoter", "splice", "cpg", "repeat", "regulator"}


@pytest.mark.parametrize(
    "question, cls, domain",
    [
        (q("splice"), "seen family and organism", "ID"),
        (q("promoter", organism=BA), "seen family and organism", "ID"),
        (q("promoter", "select", options=[CD, CD, CD, CD]), "new organism", "OOD"),
        (q("promoter", organism=CD), "new organism", "OOD"),
        (q("taxonomy", answer_label=EC), "seen organism asked about", "ID"),
        (q("taxonomy", "select", answer_label=BA, options=[BA, CD, KZ, EC]), "seen organism asked about", "ID"),
        (q("taxonomy", answer_label=KZ), "new family", "OOD"),
        (q("taxonomy", answer_label=CD), "new family", "OOD"),
        (q("tf_motif"), "twin family", "OOD"),
    ],
)
def test_known_answers(question, cls, domain):
    seen = training_seen(TRAIN)
    assert domain_class(question, seen) == cls and question_domain(question, seen) == domain


def test_the_rule_reads_no_suite_and_the_former_rule_is_kept():
    seen = training_seen(TRAIN)
    for suite in ("core", "microbe", "mosaic"):
        assert question_domain(q("taxonomy", answer_label=EC, suite=suite), seen) == "ID"
    assert domain_of("microbe", "taxonomy", seen["families"]) == "OOD"
    assert domain_of("core", "splice", seen["families"]) == "ID"
    assert question_organism(q("promoter", "select", options=[CD, EC, EC, EC])) == CD  # the answer's (A)
    # without the regulator family in training, TF-motif has no twin: a new family
    assert domain_class(q("tf_motif"), training_seen(TRAIN[:-1])) == "new family"


@pytest.mark.skipif(not (CPU / "manifest.json").exists(), reason="the committed cpu-profile benchmarks are not present")
def test_the_committed_suites_under_the_rule():
    from fgpo_core.genomics.benchmarks import load_benchmark

    _, suites = load_benchmark(CPU)
    tests = {s: suites[s] for s in ("core", "microbe", "mosaic")}
    ids = question_domains(tests, suites["train"])
    n_id = {s: sum(v == "ID" for v in d.values()) for s, d in ids.items()}
    # microbe: its 112 taxonomy questions of E. coli and B. amyloliquefaciens (training organisms);
    # core: 600 of the training families and 120 taxonomy questions of training organisms (human included)
    assert n_id == {"core": 720, "microbe": 112, "mosaic": 375}
    counts = domain_counts(tests, suites["train"])
    twin = counts[counts["class"] == "twin family"]
    assert set(twin.family) == {"tf_motif"} and twin.n.sum() == 325
    assert counts[(counts.suite == "microbe") & (counts.former == "ID")].empty  # the former rule: all OOD
    if "indev" in suites:
        assert set(question_domains({"indev": suites["indev"]}, suites["train"])["indev"].values()) == {"ID"}


def test_nearest_training_matches_brute_force():
    rng = np.random.default_rng(0)
    tr, te = rng.normal(size=(50, 8)), rng.normal(size=(30, 8))
    idx, dist = nearest_training(tr, te, chunk=7)
    cos = np.array([[x @ y / np.linalg.norm(x) / np.linalg.norm(y) for y in tr] for x in te])
    assert np.array_equal(idx, cos.argmax(1)) and np.allclose(dist, 1 - cos.max(1))
    with pytest.raises(ValueError):
        nearest_training(tr, rng.normal(size=(3, 5)))


class _Feats(dict):
    def rows(self, suite, ids):
        pos = {x: i for i, x in enumerate(self[suite][0])}
        return self[suite][1][[pos[i] for i in ids]]


def test_twin_measure_on_features_with_known_neighbours():
    """TF-motif describe questions sit next to regulator ones, select ones next to repeat ones;
    taxonomy sits next to promoter; the shares and distances are read off."""
    train = [q("regulator", qid="r1"), q("repeat", qid="p1"), q("promoter", organism=EC, qid="m1")]
    tr_x = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    test = [
        q("tf_motif", qid="t1"),
        q("tf_motif", qid="t2"),
        q("tf_motif", "select", qid="t3"),
        q("taxonomy", answer_label=EC, qid="x1"),
    ]
    te_x = np.array([[1.0, 0.1, 0], [1.0, 0, 0], [0.1, 1.0, 0], [0, 0.2, 1.0]])
    feats = _Feats(train=(["r1", "p1", "m1"], tr_x), core=(["t1", "t2", "t3", "x1"], te_x))
    t = twin_measure(feats, {"core": test}, train).set_index(["family", "shape"])
    assert t.loc[("tf_motif", "all"), "n"] == 3 and t.loc[("tf_motif", "all"), "twin"] == "regulator"
    assert t.loc[("tf_motif", "all"), "nn_twin"] == pytest.approx(200 / 3)
    assert t.loc[("tf_motif", "describe"), "nn_twin"] == 100.0 and t.loc[("tf_motif", "select"), "nn_top"] == "repeat"
    assert t.loc[("tf_motif", "describe"), "dist_median"] == pytest.approx((1 - 1 / np.sqrt(1.01)) / 2)
    assert np.isnan(t.loc[("taxonomy", "all"), "nn_twin"]) and t.loc[("taxonomy", "all"), "nn_top"] == "promoter"


@pytest.mark.skipif(not (FEATS / "manifest.json").exists(), reason="the committed MiniLM features are not present")
def test_every_tf_motif_describe_question_has_a_regulator_neighbour():
    from fgpo_core.genomics.benchmarks import load_benchmark
    from fgpo_core.selectors.features import load_features

    _, suites = load_benchmark(CPU)
    t = twin_measure(
        load_features(FEATS),
        {s: suites[s] for s in ("core", "mosaic")},
        suites["train"],
        families=["tf_motif", "taxonomy"],
    ).set_index(["family", "shape"])
    assert t.loc[("tf_motif", "describe"), "nn_twin"] == 100.0
    assert t.loc[("taxonomy", "all"), "nn_same"] == 0.0
