"""The book's rule for a difference: the two-level paired bootstrap, its p-value, Holm, and "level"."""

import itertools

import numpy as np
import pytest

from fgpo_core.evaluation.difference import Interval, bootstrap_gaps, compare_many, holm, paired_bootstrap, strata_codes


def _population_pair(rng, Q=300, S=5):
    """Correctness of two methods over Q questions drawn from a population and S seeds: the
    question's chance p ~ Beta(0.3, 0.3) (most questions nearly always right or always wrong, as
    in the reward tables), each seed shrinks it by a factor (a: U(0, 0.04), b: U(0.04, 0.12)),
    and both methods share the per-pick randomness. The true gap is 0.5 * (0.08 - 0.02) = 3 points."""
    p = rng.beta(0.3, 0.3, Q)
    f, g = rng.uniform(0, 0.04, (S, 1)), rng.uniform(0.04, 0.12, (S, 1))
    u = rng.random((S, Q))
    return u < p * (1 - f), u < p * (1 - g)


def test_the_interval_covers_the_true_gap_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    reps = 200
    hits = 0
    for i in range(reps):
        a, b = _population_pair(rng)
        iv = paired_bootstrap(a, b, strata=np.arange(300) % 3, resamples=400, seed=i)
        hits += iv.low < 3.0 < iv.high
    # two-level resampling of a crossed design is a little conservative (Owen 2007): 95% or a bit more
    assert 0.92 <= hits / reps <= 0.995, hits / reps


def test_the_gap_and_its_sign():
    a = np.ones((3, 100), bool)
    b = np.zeros((3, 100), bool)
    b[:, :60] = True  # a right on 40 more questions of 100
    iv = paired_bootstrap(a, b, resamples=500)
    assert iv.gap == pytest.approx(40.0) and iv.a_better and iv.is_difference and not iv.is_level
    assert iv.low <= 40.0 <= iv.high and iv.p_value == pytest.approx(2 / 501)
    back = paired_bootstrap(b, a, resamples=500)
    assert back.gap == pytest.approx(-40.0) and back.b_better and back.verdict == "a difference"


def test_a_level_case_and_a_case_that_is_neither():
    rng = np.random.default_rng(0)
    base = rng.random((10, 2000)) < 0.6
    same = base.copy()
    flip = rng.random(base.shape) < 0.002  # a handful of picks differ: the interval sits inside +-1 point
    same[flip] = ~same[flip]
    iv = paired_bootstrap(base, same, resamples=1000)
    assert iv.is_level and not iv.is_difference and iv.verdict == "level" and -1 < iv.low and iv.high < 1
    few = rng.random((2, 60)) < 0.5  # 60 questions, two seeds, unrelated: far too wide to call level
    other = rng.random((2, 60)) < 0.5
    iv = paired_bootstrap(few, other, resamples=1000)
    assert iv.high - iv.low > 2 and not iv.is_level
    if not iv.is_difference:
        assert iv.verdict == "undecided"
    # identical methods: every resampled gap is zero, the interval is [0, 0], p = 1, level
    iv = paired_bootstrap(base, base, resamples=200)
    assert (iv.gap, iv.low, iv.high, iv.p_value) == (0.0, 0.0, 0.0, 1.0) and iv.is_level


def test_the_margin_decides_level():
    rng = np.random.default_rng(3)
    a = rng.random((5, 400)) < 0.55
    b = a.copy()
    b[:, :6] = ~b[:, :6]
    iv = paired_bootstrap(a, b, resamples=500, margin=10.0)
    assert iv.is_level
    assert not paired_bootstrap(a, b, resamples=500, margin=0.01).is_level


def test_deterministic_under_a_seed_and_seeds_differ():
    rng = np.random.default_rng(1)
    a, b = rng.random((4, 300)) < 0.6, rng.random((4, 300)) < 0.5
    strata = np.repeat(["x", "y", "z"], 100)
    assert paired_bootstrap(a, b, strata, seed=5) == paired_bootstrap(a, b, strata, seed=5)
    assert not np.array_equal(bootstrap_gaps(a, b, strata, 200, seed=5), bootstrap_gaps(a, b, strata, 200, seed=6))


def test_strata_keep_their_sizes():
    """The whole gap lies between two strata (a right on the first half only, b on the second):
    resampling within strata keeps each half's size, so every resampled gap is exactly 0; without
    strata the halves' shares vary and so does the gap."""
    a = np.zeros((1, 200), bool)
    b = np.zeros((1, 200), bool)
    a[0, :100] = True
    b[0, 100:] = True
    strata = np.repeat([0, 1], 100)
    g = bootstrap_gaps(a, b, strata, 300)
    assert np.allclose(g, 0.0)
    assert bootstrap_gaps(a, b, None, 300).std() > 1.0


def test_the_vectorised_resample_is_the_mean_over_drawn_questions_and_seeds():
    """One resample computed from count matrices equals an explicit draw of indices, replayed
    with the same generator calls."""
    from fgpo_core.evaluation.bootstrap import _question_counts, _seed_counts

    rng = np.random.default_rng(11)
    A, B = rng.random((4, 30)), rng.random((4, 30))
    codes = strata_codes(np.repeat(["s1", "s2", "s3"], 10))
    cq = _question_counts(codes, 1, np.random.default_rng(2))[0]
    cs = _seed_counts(4, 1, np.random.default_rng(3))[0]
    qs = np.repeat(np.arange(30), cq.astype(int))
    ss = np.repeat(np.arange(4), cs.astype(int))
    assert len(qs) == 30 and len(ss) == 4
    assert all((cq[codes == c].sum() == 10) for c in range(3))
    brute = (A - B)[np.ix_(ss, qs)].mean()
    assert (cs @ (A - B) @ cq) / (4 * 30) == pytest.approx(brute)


def test_a_method_without_seeds_and_unequal_seeds():
    rng = np.random.default_rng(4)
    a = rng.random((5, 200)) < 0.7
    fixed = rng.random(200) < 0.5
    iv = paired_bootstrap(a, fixed, resamples=300)
    assert iv.n_seeds == (5, 1) and iv.gap == pytest.approx(100 * (a.mean() - fixed.mean()))
    iv = paired_bootstrap(a, a[:3], resamples=300)
    assert iv.n_seeds == (5, 3)


def _holm_brute(p):
    """Holm by its definition: the adjusted p-value of H_i is the smallest alpha at which the
    step-down procedure (reject the k-th smallest while p_(k) <= alpha / (m - k + 1)) rejects it."""
    p = np.asarray(p, float)
    m = len(p)
    candidates = sorted({min(1.0, (m - k) * x) for k, x in itertools.product(range(m), p)} | {1.0})

    def rejected(alpha):
        out = np.zeros(m, bool)
        for k, i in enumerate(np.argsort(p, kind="stable")):
            if p[i] > alpha / (m - k):
                break
            out[i] = True
        return out

    return np.array([next((al for al in candidates if rejected(al)[i]), 1.0) for i in range(m)])


@pytest.mark.parametrize("seed", range(6))
def test_holm_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    p = np.round(rng.random(int(rng.integers(1, 8))) ** 2, 3)
    assert np.allclose(holm(p), _holm_brute(p))


def test_holm_known_values_and_errors():
    assert np.allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    with pytest.raises(ValueError):
        holm([0.1, 1.5])


def test_compare_many_reports_intervals_and_holm():
    rng = np.random.default_rng(5)
    base = rng.random((5, 500)) < 0.5
    better = base | (rng.random((5, 500)) < 0.2)
    table = compare_many({"better": (better, base), "same": (base, base)}, resamples=400)
    assert list(table.columns[:6]) == ["gap", "low", "high", "p", "p_holm", "verdict"]
    assert table.loc["better", "difference"] and table.loc["same", "level"]
    assert np.allclose(table.p_holm, holm(table.p))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap(np.ones((2, 10)), np.ones((2, 11)))
    with pytest.raises(ValueError, match="strata"):
        paired_bootstrap(np.ones((2, 10)), np.ones((2, 10)), strata=np.zeros(9))
    with pytest.raises(ValueError, match="margin"):
        paired_bootstrap(np.ones(10), np.ones(10), margin=0)
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap(np.full(10, np.nan), np.ones(10))
    assert isinstance(paired_bootstrap(np.ones(10), np.zeros(10), resamples=100), Interval)
