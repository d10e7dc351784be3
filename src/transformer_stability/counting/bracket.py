"""The search for a length's trained B_min: the ratio B / lower bound at which at least half the
seeds count exactly, bracketed between the last failing and the first passing ratio.

A round trains every seed at a few ratios at once. The first round trains the configured ratios;
while none passes, the next raises the largest by GROWTH; once one passes, each round bisects
the bracket (geometrically, as B enters the fits as log B) until the first passing ratio is
within `resolution` of the last failing one. The search assumes that what passes at B passes at
every larger B: the norm balls are nested, so the best attainable error can only fall as B
grows, and the polished runs reach their ball's optimum (bench/RESULTS.md). Every ratio tried
stays in the table, and the derived tables and C.6 assume nothing of the kind: a larger ratio
that failed would widen the bracket there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

GROWTH = 1.1  # while no ratio passes, the next round tries the largest one x GROWTH
DIGITS = 6  # ratios are rounded, so that a rerun's table names the same ratios


def bracket(passed: Mapping[float, bool]) -> tuple[float | None, float | None]:
    """(last failing ratio below the first passing one or None, first passing ratio or None)."""
    passing = [r for r, ok in passed.items() if ok]
    if not passing:
        return None, None
    first = min(passing)
    failing = [r for r, ok in passed.items() if not ok and r < first]
    return (max(failing) if failing else None), first


def next_ratio(passed: Mapping[float, bool], resolution: float) -> float | None:
    """The ratio of the next round after the rounds so far (ratio -> passed), None when the
    bracket is resolved or no ratio fails below the first passing one (nothing to refine)."""
    lo, hi = bracket(passed)
    if hi is None:
        return round(max(passed) * GROWTH, DIGITS)
    if lo is None or hi <= lo * (1 + resolution):
        return None
    mid = round(math.sqrt(lo * hi), DIGITS)
    return mid if lo < mid < hi else None
