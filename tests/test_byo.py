"""head_scores: policy heads trained and scored on tables and features of one's own."""

import numpy as np
import pytest

from fgpo_core.experiments.byo import head_scores
from fgpo_core.reports.study import paired_tests, study_summary
from fgpo_core.selectors.features import FeatureSet
from fgpo_core.table import RewardTable


def _split(name, n, rng):
    """Two tools; a question of kind k (one-hot in its features) is answered right only by the
    subsets holding tool k: All-Tools is always right, and one tool suffices for a selector
    that reads the features."""
    kind = rng.integers(0, 2, n)
    masks = np.arange(4)
    correct = np.array([((masks >> k) & 1).astype(bool) for k in kind])
    ids = np.array([f"{name}{i}" for i in range(n)])
    x = np.eye(2)[kind] + 0.01 * rng.standard_normal((n, 2))
    return RewardTable(correct, 2, question_ids=ids), (ids, x.astype(np.float32))


def test_fgpo_is_always_right_with_fewer_tools_than_all_tools_and_rows_read_like_a_study():
    rng = np.random.default_rng(0)
    tables, fs = {}, FeatureSet()
    for name, n in (("train", 64), ("dev", 32), ("test", 64)):
        tables[name], fs[name] = _split(name, n, rng)
    scores = head_scores(fs, tables, methods=("fgpo", "sft"), seeds=(0, 1), epochs=30, lr=0.1)
    assert len(scores) == 4 and set(scores.method) == {"fgpo", "sft"}
    fg = scores[scores.method == "fgpo"]
    assert (fg.accuracy == 100.0).all()  # the single right tool, per kind
    assert (fg.tools < 2.0).all()  # not All-Tools on every question
    assert tables["test"].fixed_subset_accuracy().iloc[:3].max() < 100  # only All-Tools is always right
    summary = study_summary(scores)
    assert summary.loc["fgpo", "test"] == "100.0 ± 0.0"
    assert set(paired_tests(scores, ref="fgpo", suite="test").index) == {"sft"}


def test_head_scores_refuses_what_it_cannot_do():
    rng = np.random.default_rng(0)
    tables, fs = {}, FeatureSet()
    for name in ("train", "dev", "test"):
        tables[name], fs[name] = _split(name, 8, rng)
    with pytest.raises(ValueError, match="unknown HeadConfig field"):
        head_scores(fs, tables, epochs=1, learning_rate=1)
    with pytest.raises(ValueError, match="no table for split"):
        head_scores(fs, {"train": tables["train"]}, epochs=1)
    with pytest.raises(ValueError, match="need `fgpo study`"):
        head_scores(fs, tables, methods=("fgpo-n4",), epochs=1)
