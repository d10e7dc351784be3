"""linprog.minimize: HiGHS through highspy, posed as scipy's linprog(method="highs") poses it,
so Study C's read-out and margin LPs give linprog's answers to the last bit."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse

from transformer_stability import linprog
from transformer_stability.counting import theory

MINIMIZE = linprog.minimize  # the solver itself, whatever a test patches in its place


def _scipy(cost, a_ub, b_ub, lower, upper):
    bounds = [
        (None if np.isinf(lo) else lo, None if np.isinf(hi) else hi)
        for lo, hi in zip(lower, upper, strict=True)
    ]
    res = scipy.optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    return res if res.status == 0 else None


def _readout_lp(rng: np.random.Generator) -> tuple:
    """The LP theory.arc_readout_lp poses (its arguments to minimize, captured) at a random
    line geometry, gain and bias bound."""
    length = int(rng.choice([4, 16, 64]))
    foot = rng.uniform(-0.2, 1.0) * length
    distance = np.exp(rng.uniform(np.log(0.05), np.log(0.5))) * length**1.5
    posed = []

    def capture(cost, a_ub, b_ub, lower, upper):
        posed.append((cost, a_ub, b_ub, lower, upper))
        return MINIMIZE(cost, a_ub, b_ub, lower, upper)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linprog, "minimize", capture)
        theory.arc_readout_lp(
            theory._arc_directions(length, foot, distance),
            float(rng.choice([1.0, 8.0])),
            bool(rng.integers(2)),
        )
    (problem,) = posed
    return problem


@pytest.mark.parametrize("seed", range(40))
def test_readout_lps_are_scipys_to_the_last_bit(seed):
    problem = _readout_lp(np.random.default_rng(seed))
    found, expected = linprog.minimize(*problem), _scipy(*problem)
    assert (found is None) == (expected is None)
    if found is not None:
        np.testing.assert_array_equal(found.x, expected.x)
        assert found.value == expected.fun


@pytest.mark.parametrize("seed", range(20))
def test_sparse_lps_with_zeros_and_bounds_are_scipys_to_the_last_bit(seed):
    """Random sparse rows (explicit zeros stored too), free, bounded and one-sided variables."""
    rng = np.random.default_rng(100 + seed)
    rows, cols = 30, 6
    dense = rng.normal(size=(rows, cols)) * (rng.random((rows, cols)) < 0.5)
    a_ub = scipy.sparse.csr_matrix(dense)
    a_ub.data[::3] = 0.0  # stored zeros, which the solver must not see
    b_ub = rng.uniform(0.5, 2.0, rows)
    lower = np.where(rng.random(cols) < 0.5, -np.inf, -1.0)
    upper = np.where(rng.random(cols) < 0.5, np.inf, 2.0)
    cost = rng.normal(size=cols)
    found = linprog.minimize(cost, a_ub, b_ub, lower, upper)
    expected = _scipy(cost, a_ub.toarray(), b_ub, lower, upper)
    assert (found is None) == (expected is None)
    if found is not None:
        np.testing.assert_array_equal(found.x, expected.x)


def test_a_known_optimum_and_no_answer_without_one():
    # max x + 2y subject to x + y <= 1, x, y >= 0: the vertex (0, 1), value -2 as a minimum
    found = linprog.minimize(
        np.array([-1.0, -2.0]),
        np.array([[1.0, 1.0]]),
        np.array([1.0]),
        np.zeros(2),
        np.full(2, np.inf),
    )
    np.testing.assert_allclose(found.x, [0.0, 1.0])
    assert found.value == pytest.approx(-2.0)
    infeasible = linprog.minimize(
        np.array([1.0]),
        np.array([[1.0], [-1.0]]),
        np.array([-1.0, -1.0]),
        np.array([-np.inf]),
        np.array([np.inf]),
    )
    assert infeasible is None  # x <= -1 and x >= 1
    unbounded = linprog.minimize(
        np.array([-1.0]),
        np.array([[-1.0]]),
        np.array([0.0]),
        np.array([-np.inf]),
        np.array([np.inf]),
    )
    assert unbounded is None


@pytest.mark.parametrize("sparse", [False, True])
def test_the_matrix_goes_column_by_column_without_zeros_and_the_callers_is_untouched(sparse):
    rng = np.random.default_rng(7)
    dense = rng.normal(size=(9, 4)) * (rng.random((9, 4)) < 0.6)
    dense[:, 2] = 0.0  # an empty column
    given = scipy.sparse.csc_matrix(dense) if sparse else dense.copy()
    if sparse:
        given.data[0] = 0.0  # a stored zero
    expected = scipy.sparse.csc_matrix(given.toarray() if sparse else dense)
    expected.eliminate_zeros()
    start, index, value = linprog._columnwise(given)
    np.testing.assert_array_equal(start, expected.indptr)
    np.testing.assert_array_equal(index, expected.indices)
    np.testing.assert_array_equal(value, expected.data)
    if sparse:  # the caller's matrix keeps its stored zero
        assert given.nnz == np.count_nonzero(dense) and given.data[0] == 0.0


def test_the_solver_prints_nothing(capfd):
    linprog.minimize(*_readout_lp(np.random.default_rng(0)))
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("name", ["cost", "b_ub", "lower", "upper"])
@pytest.mark.parametrize("change", [-1, 1])
def test_an_array_of_the_wrong_length_is_refused(name, change):
    """Every array must match the matrix (2 x 3): HiGHS reads past a short one."""
    arrays = {"cost": np.ones(3), "b_ub": np.ones(2), "lower": np.zeros(3), "upper": np.ones(3)}
    arrays[name] = np.ones(len(arrays[name]) + change)
    with pytest.raises(ValueError, match=f"{name} has {len(arrays[name])} entries for a 2 x 3"):
        linprog.minimize(
            arrays["cost"], np.ones((2, 3)), arrays["b_ub"], arrays["lower"], arrays["upper"]
        )
