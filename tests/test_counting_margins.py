"""The best dense head's relative margin (counting/margins.py): closed forms on small point sets,
unchanged by any affine embedding of the representation."""

import numpy as np
import pytest

from transformer_stability.counting.margins import best_head_margin


@pytest.mark.parametrize("length", [2, 3, 6])
def test_equally_spaced_classes_on_a_line_reach_two_over_l_squared(length):
    """Logits 2kx - k^2 - Lx + L^2/2 (tangents of a parabola, shifted by a common affine term)
    have margin 1 and size L^2/2; the LP finds that no head does better: 2/L^2."""
    x = np.arange(length + 1, dtype=float)[:, None]
    assert best_head_margin(x, np.arange(length + 1), length + 1) == pytest.approx(2 / length**2)


def test_an_affine_embedding_changes_nothing():
    """A head on h is a head on Ah + b: the line in R^6, shrunk to 1e-4, gives the same margin."""
    rng = np.random.default_rng(0)
    line = np.arange(5, dtype=float)[:, None]
    embedded = 1e-4 * line @ rng.standard_normal((1, 6)) + rng.standard_normal(6)
    assert best_head_margin(embedded, np.arange(5), 5) == pytest.approx(2 / 16)


def test_affinely_independent_points_take_any_logits():
    """Three points in general position: logit 1 for the true class, -1 for the others."""
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert best_head_margin(corners, np.array([2, 0, 1]), 3) == pytest.approx(2.0)


def test_points_of_one_class_share_a_head():
    """Two classes on a line, 0 at x = 0, 1 and 1 at x = 2: h = logit_0 - logit_1 is affine
    with |h| <= 2, h(1) >= delta, h(2) <= -delta, so 2 >= h(0) = 2 h(1) - h(2) >= 3 delta."""
    x = np.array([[0.0], [1.0], [2.0]])
    assert best_head_margin(x, np.array([0, 0, 1]), 2) == pytest.approx(2 / 3)


def test_float32_representations_are_solved_in_float64():
    """A trained model's representations arrive in float32: they are cast to float64 before the
    reduction and the LP, so the margin is the float64 input's to the last bit."""
    rng = np.random.default_rng(1)
    line = np.arange(7, dtype=float)[:, None]
    embedded = (line @ rng.standard_normal((1, 5)) + 0.3 * rng.standard_normal((7, 5))) / 3
    single = embedded.astype(np.float32)
    classes = np.arange(7)
    assert best_head_margin(single, classes, 7) == best_head_margin(
        single.astype(np.float64), classes, 7
    )


def test_a_representation_of_any_size_keeps_its_directions():
    """The rank cut is relative to the largest singular value: the line in R^6 shrunk to 1e-8
    (singular values about 1e-7) keeps its direction and its margin."""
    rng = np.random.default_rng(2)
    line = np.arange(5, dtype=float)[:, None]
    embedded = 1e-8 * (line @ rng.standard_normal((1, 6)) + rng.standard_normal(6))
    assert best_head_margin(embedded, np.arange(5), 5) == pytest.approx(2 / 16)


def test_identical_points_of_two_classes_leave_no_margin():
    """One representation for both counts: no head tells them apart, so the best margin is 0."""
    same = np.ones((2, 3))
    assert best_head_margin(same, np.array([0, 1]), 2) == pytest.approx(0.0, abs=1e-12)
