"""Three-valued verdicts decided by intervals, never by a point estimate near a threshold.

A claim's test states its criterion as terms: a statistic's `Estimate` (point value and the
interval the experiment allows: a bootstrap over its replication units, the bracket of a grid,
or an exact computation) and the `Criterion` (the region of values where the claim holds). A
term holds when its whole interval lies in the region, does not hold when the whole interval
lies outside it, and is undecided otherwise; a claim holds when every term holds, does not hold
when some term does not, and is undecided otherwise. So two runs whose statistics move within
their intervals can turn a verdict into `undecided`, never into its opposite. An undecided
term says what would decide it, computed from the observed spread. Knows no study."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from transformer_stability.resampling import RESAMPLES, percentile_bounds, unit_draws

HOLDS, FAILS, UNDECIDED = "holds", "does not hold", "undecided"
# RESAMPLES, the resamples of a claim's bootstrap (resampling's, the same for every interval of
# the package), is read here at each call, so a test of the claims' logic on small hand-made
# tables may lower it for the claims alone.


def _g(value: float) -> str:
    return f"{value:.3g}"


@dataclass(frozen=True)
class Estimate:
    """A statistic's point value and interval [lo, hi]. `basis` says where the interval comes
    from; `units` is the number of independent replication units a bootstrap drew (None for an
    exact value or a grid's bracket), `unit` their name, so an undecided term can say how many
    units would decide it."""

    point: float
    lo: float
    hi: float
    basis: str
    units: int | None = None
    unit: str = ""

    @classmethod
    def exact(cls, value: float, basis: str = "exact (no sampling)") -> Estimate:
        """A value the run computes without sampling noise (a theory curve, a count)."""
        return cls(float(value), float(value), float(value), basis)

    @classmethod
    def bracket(cls, point: float, lo: float, hi: float, basis: str) -> Estimate:
        """A value a grid brackets: it lies in [lo, hi], whatever the point."""
        return cls(float(point), float(lo), float(hi), basis)

    def text(self) -> str:
        """'1.04 [1.03, 1.06]', or '1.04' for an exact value."""
        if self.lo == self.hi == self.point:
            return _g(self.point)
        return f"{_g(self.point)} [{_g(self.lo)}, {_g(self.hi)}]"


def bootstrap(
    frame: pd.DataFrame,
    statistic: Callable[[pd.DataFrame], pd.Series],
    units: str | Sequence[str],
    unit: str,
    strata: Sequence[str] = (),
    seed: int = 0,
    resamples: int | None = None,
) -> dict[Any, Estimate]:
    """Each value of `statistic` (a Series: one value per label, e.g. per model and direction)
    with its 95 % percentile interval over resamples of the replication units (`units`
    columns, drawn within each stratum of `strata`), named `unit` ('seeds'), by label. One
    resampling pass serves every value. The unit count is the smallest number of units in a
    stratum: the stratum whose interval shrinks slowest."""
    units = [units] if isinstance(units, str) else list(units)
    strata = list(strata)
    parts = [part for _, part in frame.groupby(strata, dropna=False)] if strata else [frame]
    count = min(len(part[units].drop_duplicates()) for part in parts)
    point = statistic(frame)
    draws = unit_draws(frame, statistic, units, strata, resamples or RESAMPLES, seed)
    lo, hi = percentile_bounds(draws.reindex(columns=point.index).to_numpy(float))
    return {
        label: Estimate(
            float(point[label]), float(a), float(b), f"bootstrap over {unit}", count, unit
        )
        for label, a, b in zip(point.index, lo, hi, strict=True)
    }


@dataclass(frozen=True)
class Criterion:
    """The values for which a claim's term holds: the range from `low` to `high`, ends
    included when `closed`. `text` says it in the claim's words ('<= 1.05')."""

    low: float
    high: float
    closed: bool
    text: str

    def contains(self, value: float) -> bool:
        if self.closed:
            return self.low <= value <= self.high
        return self.low < value < self.high

    def excludes(self, lo: float, hi: float) -> bool:
        """Whether no value of [lo, hi] lies in the range."""
        if self.closed:
            return hi < self.low or lo > self.high
        return hi <= self.low or lo >= self.high

    def distance(self, value: float) -> float:
        """How far `value` lies from the nearest finite end (inf without one)."""
        ends = [end for end in (self.low, self.high) if math.isfinite(end)]
        return min((abs(value - end) for end in ends), default=math.inf)


def at_most(threshold: float) -> Criterion:
    return Criterion(-math.inf, threshold, True, f"<= {threshold:g}")


def at_least(threshold: float) -> Criterion:
    return Criterion(threshold, math.inf, True, f">= {threshold:g}")


def below(threshold: float) -> Criterion:
    return Criterion(-math.inf, threshold, False, f"< {threshold:g}")


def above(threshold: float) -> Criterion:
    return Criterion(threshold, math.inf, False, f"> {threshold:g}")


def within(low: float, high: float) -> Criterion:
    return Criterion(low, high, True, f"in [{low:g}, {high:g}]")


def nearer(target: float, rivals: Iterable[float]) -> Criterion:
    """Values strictly nearer `target` than every rival: between the midpoints to the nearest
    rival on each side."""
    others = [r for r in rivals if r != target]
    low = max(((target + r) / 2 for r in others if r < target), default=-math.inf)
    high = min(((target + r) / 2 for r in others if r > target), default=math.inf)
    named = ", ".join(f"{r:g}" for r in sorted(others))
    return Criterion(low, high, False, f"nearer {target:g} than {named}")


@dataclass(frozen=True)
class Term:
    """One part of a claim's criterion: `estimate` must lie in `criterion`. `need` says what
    would decide the term where its estimate cannot (a grid's bracket: 'B steps <= 2 %')."""

    name: str
    estimate: Estimate
    criterion: Criterion
    need: str = ""

    @property
    def verdict(self) -> str:
        e, c = self.estimate, self.criterion
        if any(math.isnan(x) for x in (e.point, e.lo, e.hi)):  # nothing to decide on
            return UNDECIDED
        if c.contains(e.lo) and c.contains(e.hi):
            return HOLDS
        return FAILS if c.excludes(e.lo, e.hi) else UNDECIDED

    def deciding_need(self) -> str:
        """What would decide an undecided term: its own `need`, or the number of units at the
        observed spread that would shrink the interval (as 1/sqrt(units)) off the criterion's
        nearest end."""
        if self.verdict != UNDECIDED:
            return ""
        if self.need:
            return f"{self.name}: {self.need}"
        e = self.estimate
        if e.units is None or not math.isfinite(e.point):
            return f"{self.name}: a statistic the run could compute and bound"
        gap = self.criterion.distance(e.point)
        if gap == 0 or not math.isfinite(gap):
            return f"{self.name}: the estimate sits on the criterion's end; no {e.unit} decide it"
        spread = max(e.point - e.lo, e.hi - e.point)
        if not math.isfinite(spread):  # a resample without the statistic's bound (a fit's NaN)
            return f"{self.name}: an interval with finite ends (more {e.unit}, now {e.units})"
        needed = math.ceil(e.units * (spread / gap) ** 2)
        return f"{self.name}: about {needed} {e.unit} at the observed spread (now {e.units})"

    def text(self) -> str:
        """'worst GMFE 1.04 [1.03, 1.06] <= 1.05: undecided'."""
        return f"{self.name} {self.estimate.text()} {self.criterion.text}: {self.verdict}"


def combined(verdicts: Iterable[str]) -> str:
    """A claim's verdict from its terms': does not hold if any term does not, holds if every
    term holds, undecided otherwise."""
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("a claim's verdict needs at least one term")
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else UNDECIDED


def margin(term: Term) -> float:
    """How far the term's interval lies inside its criterion, relative to the interval's
    width: the smaller, the nearer the term came to being undecided. An exact value has no
    noise to carry it across its criterion's end (inf), even when it sits on a closed end (a
    count of zero where at most zero are allowed)."""
    e = term.estimate
    if e.hi == e.lo:
        return math.inf
    return min(term.criterion.distance(e.lo), term.criterion.distance(e.hi)) / (e.hi - e.lo)
