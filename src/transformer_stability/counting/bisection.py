"""Bisection on the norm bound B for the empirical B_min of one (L, seed), torch-free.

A bracket (low, high) holds a B known or proven to fail (the theory's lower bound, below
which no parameters count) and a B at which training counts exactly. One round probes `probes`
values of B geometrically inside the bracket (the first round includes `high` itself, which is
not yet known to succeed, and `low` too when nothing proves that it fails: the classification
floor); all seeds' probes of a round are one batched training. After the round the bracket
becomes (largest failing probe below the smallest success, smallest success); a success at an
unproven floor closes the bracket there (B_min <= low). Success is assumed monotone in B; a
probe above a success that fails is recorded, not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bracket:
    """Current bracket of one (L, seed). state: "open" before the first round (high not yet
    tried), "reached" once some B succeeded (high is the smallest success), "unreached" when
    the first round, upper bracket included, failed."""

    low: float
    high: float
    state: str = "open"
    low_proven: bool = True  # False: low is a floor, probed in the first round

    @property
    def ratio(self) -> float:
        return self.high / self.low

    def done(self, precision: float) -> bool:
        """Nothing left to probe: resolved to `precision` (high / low - 1), or unreached."""
        return self.state == "unreached" or (
            self.state == "reached" and self.ratio - 1 <= precision
        )


def probes(bracket: Bracket, count: int) -> np.ndarray:
    """The B values of the next round: geometric points of (low, high], high included while it
    is not known to succeed (first round), strictly inside afterwards."""
    if bracket.state == "reached":
        fractions = np.arange(1, count + 1) / (count + 1)
    elif bracket.low_proven or count == 1:
        fractions = np.arange(1, count + 1) / count
    else:
        fractions = np.arange(count) / (count - 1)
    values = bracket.low * bracket.ratio**fractions
    if bracket.state == "open":  # the brackets' ends exactly, not up to rounding
        values[-1] = bracket.high
        values[0] = bracket.low if not bracket.low_proven and count > 1 else values[0]
    return values


def update(bracket: Bracket, tried: np.ndarray, success: np.ndarray) -> Bracket:
    """The bracket after a round that tried B values `tried` (increasing) with `success`."""
    if not success.any():
        if bracket.state == "open":  # even the upper bracket failed
            return Bracket(bracket.low, bracket.high, "unreached")
        return Bracket(float(tried[-1]), bracket.high, "reached")
    first = int(np.flatnonzero(success)[0])
    low = float(tried[first - 1]) if first > 0 else bracket.low
    return Bracket(min(low, float(tried[first])), float(tried[first]), "reached")
