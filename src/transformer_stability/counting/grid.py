"""The exhaustive input grid {(c, m): c + m <= L} and its count-balanced weights."""

from __future__ import annotations

import numpy as np
import torch


def grid_points(length: int) -> tuple[np.ndarray, np.ndarray]:
    """All (c, m) with c + m <= L, (L+1)(L+2)/2 points, ordered by c then m."""
    c, m = np.triu_indices(length + 1)
    return c.astype(np.int64), (m - c).astype(np.int64)


def balanced_weights(c: np.ndarray, length: int) -> np.ndarray:
    """Weights summing to 1 in which every count value 0..L carries the same total weight, on
    any set of points holding every count (the whole grid: 1 / ((L+1)(L+1-c)))."""
    return 1.0 / ((length + 1) * np.bincount(c)[c])


def extreme_points(length: int) -> tuple[np.ndarray, np.ndarray]:
    """m = 0 and m = L - c for every c: where an output monotone in m at fixed c peaks."""
    c = np.arange(length + 1)
    return np.r_[c, c], np.r_[np.zeros_like(c), length - c]


def torch_grid(
    length: int, device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    c, m = grid_points(length)
    return torch.from_numpy(c).to(device), torch.from_numpy(m).to(device)
