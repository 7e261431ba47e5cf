import itertools

import numpy as np
import pytest

from fgpo_core.core import dead_groups as dg


def brute_force(p, r, G):
    """Sum the probability of every G-tuple of actions whose rewards are all equal."""
    total = 0.0
    for tup in itertools.product(range(len(p)), repeat=G):
        if len({r[a] for a in tup}) == 1:
            total += np.prod([p[a] for a in tup])
    return total


@pytest.mark.parametrize("G", [1, 2, 3, 4])
def test_closed_form_equals_brute_force(G):
    rng = np.random.default_rng(G)
    for _ in range(5):
        p = rng.dirichlet(np.ones(5))
        r = rng.choice([-1.0, 0.0, 1.0], size=5)
        assert dg.dead_group_probability(p, r, G) == pytest.approx(brute_force(p, r, G), rel=1e-10)


def test_closed_form_matches_monte_carlo():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(16, 0.3), size=4)
    r = rng.choice([-1.1, -0.9, 0.9, 1.1], size=(4, 16))
    n = 40_000
    exact = dg.dead_group_probability(p, r, 6)
    mc = dg.dead_group_probability_mc(p, r, 6, n_groups=n, seed=1)
    se = np.sqrt(exact * (1 - exact) / n) + 1e-12
    assert np.all(np.abs(exact - mc) < 5 * se)


def test_uniform_policy_is_rarely_dead_and_a_point_mass_always():
    r = np.array([1.1, 1.0, 0.95, -0.9, -1.0, -1.05, 0.9, -1.1])
    uniform = np.full(8, 1 / 8)
    assert dg.dead_group_probability(uniform, r, 6) < 0.01
    point = np.eye(8)[3]
    assert dg.dead_group_probability(point, r, 6) == pytest.approx(1.0)


def test_reward_classes_use_tolerance_and_batch_shapes():
    r = np.array([[1.0, 1.0 + 1e-12, 0.5, 0.5], [0.0, 1.0, 2.0, 3.0]])
    ids = dg.reward_classes(r)
    assert ids[0, 0] == ids[0, 1] and ids[0, 2] == ids[0, 3] and ids[0, 0] != ids[0, 2]
    assert len(set(ids[1])) == 4
    p = np.full((3, 2, 4), 0.25)
    rr = np.broadcast_to(r, (3, 2, 4))
    out = dg.dead_group_probability(p, rr, 2)
    assert out.shape == (3, 2)
    assert out[0, 0] == pytest.approx(2 * 0.5**2) and out[0, 1] == pytest.approx(4 * 0.25**2)


def test_where_splits_dead_mass():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(6), size=10)
    r = rng.choice([-1.0, 1.0, 0.9], size=(10, 6))
    wrong = r < 0
    total = dg.dead_group_probability(p, r, 4)
    split = dg.dead_group_probability(p, r, 4, where=wrong) + dg.dead_group_probability(p, r, 4, where=~wrong)
    np.testing.assert_allclose(total, split)


def test_proposition_1_on_random_masses():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        k = int(rng.integers(2, 8))
        G = int(rng.choice([2, 3, 6, 16]))
        w = rng.dirichlet(np.ones(k))
        P = dg.dead_group_probability_from_masses(w, G)
        i, j = rng.choice(k, 2, replace=False)
        merged = np.r_[np.delete(w, [i, j]), w[i] + w[j]]
        assert dg.dead_group_probability_from_masses(merged, G) >= P - 1e-12  # merging
        big, small = (i, j) if w[i] >= w[j] else (j, i)
        d = rng.uniform(0.05, 1.0) * w[small]
        assert (w[big] + d) ** G + (w[small] - d) ** G > w[big] ** G + w[small] ** G  # transfer
        assert P >= k ** (1.0 - G) - 1e-12  # uniform minimum


def test_grid_has_table15_shape():
    p = {"Uniform": np.full((5, 16), 1 / 16)}
    r = np.tile(np.r_[np.full(8, 1.0), np.full(8, -1.0)], (5, 1))
    grid = dg.dead_group_grid(p, r)
    assert list(grid.columns) == [f"G={G}" for G in dg.TABLE15_GROUP_SIZES]
    assert grid.loc["Uniform", "G=1"] == pytest.approx(100.0)
    assert grid.loc["Uniform", "G=2"] == pytest.approx(100 * 2 * 0.5**2)


@pytest.mark.parametrize(
    "probs,rewards,G,msg",
    [
        ([0.5, 0.6], [1, 0], 2, "sum to 1"),
        ([-0.5, 1.5], [1, 0], 2, "non-negative"),
        ([0.5, 0.5], [1, 0, 1], 2, "broadcast"),
        ([0.5, 0.5], [1, np.nan], 2, "finite"),
        ([0.5, 0.5], [1, 0], 0, "positive int"),
        ([0.5, 0.5], [1, 0], 2.5, "positive int"),
    ],
)
def test_bad_inputs_get_clear_errors(probs, rewards, G, msg):
    with pytest.raises(ValueError, match=msg):
        dg.dead_group_probability(probs, rewards, G)


def test_proposition_check_counts_no_violation_of_eq7_and_catches_a_wrong_formula():
    assert dg.proposition_violations(2000, np.random.default_rng(0)) == {
        "merge": 0,
        "transfer": 0,
        "uniform minimum": 0,
    }
    wrong = dg.proposition_violations(200, np.random.default_rng(0), lambda w, G: float((np.asarray(w) ** G).max()))
    assert wrong["merge"] + wrong["transfer"] + wrong["uniform minimum"] > 0
