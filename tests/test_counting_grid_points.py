"""Study C's input grid: every (c, m) with c + m <= L exactly once, in order, its count-balanced
weights, its extreme points, and the same grid as torch tensors."""

import numpy as np
import pytest
import torch

from transformer_stability.counting.grid import (
    balanced_weights,
    extreme_points,
    grid_points,
    torch_grid,
)


@pytest.mark.parametrize("length", [0, 1, 4, 9])
def test_the_grid_holds_every_point_once_ordered_by_c_then_m(length):
    c, m = grid_points(length)
    expected = [(ci, mi) for ci in range(length + 1) for mi in range(length + 1 - ci)]
    assert list(zip(c.tolist(), m.tolist(), strict=True)) == expected
    assert len(c) == (length + 1) * (length + 2) // 2
    assert c.dtype == m.dtype == np.int64


@pytest.mark.parametrize("length", [1, 4, 9])
def test_every_count_carries_the_same_weight_on_the_whole_grid(length):
    c, _ = grid_points(length)
    weights = balanced_weights(c, length)
    np.testing.assert_allclose(weights, 1.0 / ((length + 1) * (length + 1 - c)), rtol=1e-15)
    per_count = np.bincount(c, weights=weights, minlength=length + 1)
    np.testing.assert_allclose(per_count, np.full(length + 1, 1.0 / (length + 1)), rtol=1e-14)


def test_balanced_weights_hold_on_a_subset_that_holds_every_count():
    length = 5
    c, _ = extreme_points(length)  # two points per count, one for c = L's two equal points
    weights = balanced_weights(c, length)
    assert weights.sum() == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(np.bincount(c, weights=weights), np.full(length + 1, 1 / 6))


def test_extreme_points_are_the_two_ends_of_every_counts_segment():
    c, m = extreme_points(3)
    assert c.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert m.tolist() == [0, 0, 0, 0, 3, 2, 1, 0]


def test_the_torch_grid_is_the_numpy_grid():
    c, m = torch_grid(6)
    expected_c, expected_m = grid_points(6)
    assert c.dtype == m.dtype == torch.int64 and c.device.type == "cpu"
    assert c.tolist() == expected_c.tolist() and m.tolist() == expected_m.tolist()
