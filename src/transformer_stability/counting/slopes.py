"""Where a trained B_min lies on the regression bound grid, and which slopes of B_min over L
that leaves: the grid only brackets each length's B_min, so the slope is a range over the
brackets' corners. Read by rates.csv (the trained slope's interval) and by claim C.6. Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from transformer_stability.counting.tables import QUORUM


@dataclass(frozen=True)
class Bracket:
    """Where one length's trained B_min lies on the regression bound grid: in (lo, hi]. `bmin`
    is the grid's B_min (the smallest grid bound whose seed fraction meets the quorum, inf at
    none), `under` the grid bound just below it where that is not below the lower bound
    (None: lo is the theory's lower bound, which no parameters beat), `bound` the lower bound."""

    length: int
    lo: float
    bmin: float
    hi: float
    under: float | None
    bound: float


def bmin_bracket(part: pd.DataFrame) -> Bracket:
    """The bracket of one length's grid (rows of success.csv sorted by B). Below it lies the
    grid bound under the grid's B_min (or the lower bound); above it, the smallest grid bound
    from which every larger one meets the quorum, so a non-monotone seed pattern (met, missed,
    met) widens the bracket over the whole pattern, and a largest bound that misses it leaves
    the bracket open (hi = inf)."""
    b = part["B"].to_numpy(float)
    met = part["fraction"].to_numpy(float) >= QUORUM
    bound, length = float(part["lower_bound"].iloc[0]), int(part["L"].iloc[0])
    if not met.any():
        return Bracket(length, b[-1], math.inf, math.inf, None, bound)
    first = int(np.argmax(met))
    missed = np.flatnonzero(~met)
    settled = max(first, int(missed[-1]) + 1 if missed.size else 0)
    hi = float(b[settled]) if settled < len(b) else math.inf
    under = float(b[first - 1]) if first and b[first - 1] >= bound else None
    lo = under if under is not None else min(bound, float(b[first]))
    return Bracket(length, lo, float(b[first]), hi, under, bound)


def slope_weights(lengths: np.ndarray) -> np.ndarray:
    """Least-squares weights of log L: the slope of log B over log L is sum(w * log B) (the
    weights sum to 0). A weight that is 0 up to rounding (the middle of three log-spaced
    lengths) is set to 0: that length's B_min moves no slope."""
    x = np.log(np.asarray(lengths, float))
    x = x - x.mean()
    w = x / (x**2).sum()
    w[np.abs(w) < 1e-9 * np.abs(w).max()] = 0.0
    return w


def weighted_slope(w: np.ndarray, values: np.ndarray) -> float:
    """sum(w * log values) over the lengths with a weight: the least-squares log-log slope."""
    keep = w != 0
    return float(np.sum(w[keep] * np.log(values[keep])))


def slope_range(brackets: list[Bracket], w: np.ndarray) -> tuple[float, float]:
    """The least and largest slope that B_min values anywhere in the brackets allow: the
    slope is linear in log B, so its extremes are at corners of the brackets, each length
    taking the end that lowers (raises) it; an open bracket makes the range unbounded."""
    keep = w != 0
    ends = np.log([[b.lo, b.hi] for b in brackets])[keep] * w[keep, None]
    return float(ends.min(axis=1).sum()), float(ends.max(axis=1).sum())


def regression_brackets(success: pd.DataFrame, placement: str) -> list[Bracket]:
    """The bracket of every trained regression length of `placement` (success.csv rows),
    shortest first."""
    graded = success[(success["placement"] == placement) & (success["readout"] == "regression")]
    return [bmin_bracket(part.sort_values("B")) for _, part in graded.groupby("L")]


def bracket_slopes(brackets: list[Bracket]) -> tuple[float, float, float]:
    """(the slope through the grid's B_min, the least and the largest slope the brackets allow)
    of log B_min over log L on the brackets' lengths."""
    w = slope_weights(np.array([b.length for b in brackets]))
    return (weighted_slope(w, np.array([b.bmin for b in brackets])), *slope_range(brackets, w))
