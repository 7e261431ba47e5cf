"""The chapter reports of the tool library and the benchmarks: the motif scan's expected chance
hits against an exhaustive count, and the benchmark page's tables on small known inputs."""

import itertools

import numpy as np
import pytest

from fgpo_core.genomics.benchmarks.schema import Question
from fgpo_core.genomics.tools.motifs import MotifDatabase, motif_pvalue_distribution, scan
from fgpo_core.reports.benchmark_page import domain_table, family_label, suite_table
from fgpo_core.reports.motif_chance import expected_chance_hits, threshold_pvalues


def _database(matrices, p_threshold):
    """A motif database of integer matrices ([w, 4] each) with a chosen reporting threshold."""
    W = max(len(m) for m in matrices)
    pssm = np.zeros((len(matrices), W, 5), dtype=np.int32)
    thresholds, tails, offsets = [], [], [0]
    for i, m in enumerate(matrices):
        m = np.asarray(m, dtype=np.int32)
        pssm[i, : len(m), :4] = m
        pssm[i, : len(m), 4] = -(10**6)
        lo, sf = motif_pvalue_distribution(m)
        k = int(np.argmax(sf < p_threshold)) if (sf < p_threshold).any() else len(sf)
        thresholds.append(lo + k)
        tails.append(sf[k:])
        offsets.append(offsets[-1] + len(sf) - k)
    return MotifDatabase(
        ids=np.array([f"M{i}" for i in range(len(matrices))]),
        names=np.array([f"F{i}" for i in range(len(matrices))]),
        widths=np.array([len(m) for m in matrices]),
        pssm=pssm,
        thresholds=np.array(thresholds, dtype=np.int64),
        tail_offsets=np.array(offsets),
        tail=np.concatenate(tails),
        release="test",
    )


def test_expected_chance_hits_equals_the_mean_over_every_sequence():
    # two matrices, one of which can never reach the threshold (its tail is empty)
    a = [[200, -100, -100, -100], [-100, 200, -100, -100], [50, 0, 0, -50]]
    b = [[0, 0, 0, 0]]
    db = _database([a, b], p_threshold=0.05)
    L = 5
    counts = [len(scan(db, "".join(s))) for s in itertools.product("ACGT", repeat=L)]
    assert threshold_pvalues(db)[1] == 0.0 and threshold_pvalues(db)[0] > 0
    assert expected_chance_hits(db, L) == pytest.approx(np.mean(counts), rel=1e-12)
    assert np.mean(counts) > 0


def test_expected_chance_hits_of_a_sequence_shorter_than_every_matrix_is_zero():
    db = _database([[[100, 0, 0, 0]] * 4], p_threshold=0.01)
    assert expected_chance_hits(db, 3) == 0.0
    with pytest.raises(ValueError):
        expected_chance_hits(db, -1)


def test_suite_table_lists_roles_first_and_sums_questions():
    manifest = {
        "suites": {
            "extra": {"split": "test", "families": {"splice": {"describe": 1, "select": 2}}},
            "train": {"split": "train", "families": {"tf_motif": {"describe": 3}, "cpg": {"select": 4}}},
        }
    }
    t = suite_table(manifest)
    assert t.suite.tolist() == ["train", "extra"]
    assert t.questions.tolist() == [7, 3]
    assert t.families.iloc[0] == "CpG, TF-motif" and t.decides.iloc[1] == ""


def _q(family, qid, organism=None, answer_label="x"):
    prov = {"answer_label": answer_label}
    if organism:
        prov["organism"] = organism
    return Question(qid, "s", "test", family, "describe", "?", {L: L for L in "ABCD"}, "A", {"": "ACGT" * 10}, prov)


def test_domain_table_reads_the_rule_by_family_and_organism():
    ec, cd = "Escherichia coli", "Corynebacterium diphtheriae"
    train = [_q("promoter", "t1", organism=ec), _q("regulator", "t2")]
    tests = {
        "core": [_q("tf_motif", "a"), _q("taxonomy", "b", answer_label=ec), _q("taxonomy", "c", answer_label=cd)],
        "microbe": [_q("promoter", "d", organism=cd), _q("promoter", "e", organism=ec)],
    }
    t = domain_table(tests, train).set_index(["family", "class"])
    assert t.loc[("TF-motif", "reworded twin of regulator"), "domain"] == "out of domain"
    assert t.loc[("taxonomy", "asks about a training organism"), "domain"] == "in domain"
    assert t.loc[("taxonomy", "new family, new organism"), "domain"] == "out of domain"
    assert t.loc[("promoter", "training family, new organism"), "questions"] == 1
    assert t.loc[("promoter", "training family and organism"), "domain"] == "in domain"
    assert t.questions.sum() == 5 and family_label("new_thing") == "new thing"
