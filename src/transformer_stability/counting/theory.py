"""Reduced lower-bound problems for B_min(L), solved with the HiGHS LP solver (linprog.py).

All bounds use only the m = 0 line of the grid (a relaxation, so they stay lower bounds). On that
line a softmax layer without post-norm outputs a + D t(c), t(c) = alpha c / (1 + alpha c), and a
post-normalized layer outputs a read-out of the direction of an affine line in c.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy  # scipy.optimize loads on first use: the registry imports this module

from transformer_stability import linprog

HALF = 0.5
_POLYGON = 64  # |U| <= r is relaxed to <U, d_k> <= r over 64 directions: still a lower bound


def saturation(alpha: float, c: np.ndarray, m: np.ndarray | None = None, beta: float = 0.0):
    """t(c, m) = alpha c / (1 + alpha c + beta m): the attention share of the a tokens."""
    dilution = 0.0 if m is None else beta * m
    return alpha * c / (1.0 + alpha * c + dilution)


def _spread(t: np.ndarray, c: np.ndarray, gain: float) -> float:
    """Range of c - D t over the points: the band width an intercept must cover at gain D."""
    r = c - gain * t
    return float(r.max() - r.min())


def _flattest_gain(t: np.ndarray, c: np.ndarray) -> float:
    """argmin over D >= 0 of the (convex, piecewise-linear) spread: golden-section search."""
    width = max(float(t.max() - t.min()), 1e-300)
    lo, hi = 0.0, 4.0 * max(float(c.max() - c.min()), 1.0) / width
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(100):
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if _spread(t, c, x1) <= _spread(t, c, x2):
            hi = x2
        else:
            lo = x1
    return (lo + hi) / 2


def affine_band_lp(t: np.ndarray, c: np.ndarray, half: float = HALF) -> tuple[float, float] | None:
    """(a, D) with |a + D t - c| <= half everywhere and D >= 0 minimal; None if infeasible.
    A two-variable LP solved exactly: for fixed D an intercept exists iff the spread of c - D t
    is at most 2 half; the spread is convex in D, so the smallest feasible D is found by
    bisection left of its minimum."""
    c = np.asarray(c, float)
    best = _flattest_gain(t, c)
    if _spread(t, c, best) > 2 * half:
        return None
    lo, hi = 0.0, best
    if _spread(t, c, 0.0) <= 2 * half:
        hi = 0.0
    for _ in range(200):
        if hi - lo <= 1e-13 * max(hi, 1.0):
            break
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _spread(t, c, mid) <= 2 * half else (mid, hi)
    r = c - hi * t
    return float((r.max() + r.min()) / 2), float(hi)


def gain_for_alpha(alpha: float, length: int, half: float = HALF) -> float:
    """Smallest read-out gain D on the m = 0 line at a fixed attention ratio alpha."""
    c = np.arange(length + 1, dtype=float)
    found = affine_band_lp(saturation(alpha, c), c, half)
    return math.inf if found is None else found[1]


@dataclass(frozen=True)
class GainOptimum:
    alpha: float
    gain: float


def minimal_gain(
    length: int, log_alpha_range: tuple[float, float] | None = None, half: float = HALF
) -> GainOptimum:
    """min over alpha of the smallest gain D (the optimum is a kink: grid scan, then Brent)."""
    lo, hi = log_alpha_range or (math.log(0.05 / length**2), math.log(200.0 / length**2))
    xs = np.linspace(lo, hi, 81)
    vals = np.array([gain_for_alpha(math.exp(x), length, half) for x in xs])
    if not np.isfinite(vals).any():
        return GainOptimum(math.nan, math.inf)
    i = int(np.argmin(vals))
    res = scipy.optimize.minimize_scalar(
        lambda x: min(gain_for_alpha(math.exp(x), length, half), 1e300),
        bounds=(xs[max(i - 1, 0)], xs[min(i + 1, len(xs) - 1)]),
        method="bounded",
        options={"xatol": 1e-12},
    )
    best = (res.x, res.fun) if res.fun <= vals[i] else (xs[i], vals[i])
    return GainOptimum(math.exp(best[0]), float(best[1]))


def softmax_gain_lower_bound(length: int, half: float = HALF) -> float:
    """D_min(L) = min over alpha, a of the gain of a + D t(c) counting on m = 0 (to within
    `half`; 1/2 is exactness after rounding)."""
    return minimal_gain(length, half=half).gain


def chebyshev_error(alpha: float, length: int) -> float:
    """min over (a, D) of max_c |a + D t(c) - c|: half the smallest spread of c - D t."""
    c = np.arange(length + 1, dtype=float)
    t = saturation(alpha, c)
    return _spread(t, c, _flattest_gain(t, c)) / 2


def prenorm_max_length(score_range: float, limit: int = 100_000) -> int:
    """Largest L at which bare pre-norm can count on m = 0: scores lie in [-S/2, S/2], so
    alpha >= e^{-S}, and the most linear (smallest) alpha must fit c within < 1/2."""
    alpha = math.exp(-score_range)

    def fits(length: int) -> bool:
        return chebyshev_error(alpha, length) < HALF

    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            raise ValueError(f"no wall below L = {limit}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def prenorm_wall(d: int) -> int:
    """The bare pre-norm wall at width d: normalized tokens have norm sqrt(d), so the scores
    <x, y> / tau (tau = sqrt(d)) span S = 2 d / tau, and no parameters count past
    prenorm_max_length(S)."""
    return prenorm_max_length(2 * d / math.sqrt(d))


def _arc_directions(length: int, foot: float, distance: float) -> np.ndarray:
    """Unit directions of the points (c - foot, distance), c = 0..L: an affine line in c seen
    from the origin (the post-norm output up to rotation, radius and scale)."""
    x = np.arange(length + 1, dtype=float) - foot
    return np.c_[x, np.full_like(x, distance)] / np.hypot(x, distance)[:, None]


def arc_readout_lp(
    directions: np.ndarray, gain_scale: float, bias_bounded: bool, half: float = HALF
) -> tuple[float, np.ndarray, float] | None:
    """min r with |<U, n_c> + b - c| <= half, |U| <= gain_scale * r (polygon relaxation) and,
    if bias_bounded, |b| <= r. Returns (r, U, b) or None."""
    length = len(directions) - 1
    c = np.arange(length + 1, dtype=float)
    ones = np.ones((length + 1, 1))
    angles = 2 * np.pi * np.arange(_POLYGON) / _POLYGON
    rows = [np.c_[directions, ones, 0 * ones], -np.c_[directions, ones, 0 * ones]]
    rows.append(
        np.c_[np.cos(angles), np.sin(angles), np.zeros(_POLYGON), -gain_scale * np.ones(_POLYGON)]
    )
    rhs = [c + half, half - c, np.zeros(_POLYGON)]
    if bias_bounded:
        rows.append(np.array([[0.0, 0.0, 1.0, -1.0], [0.0, 0.0, -1.0, -1.0]]))
        rhs.append(np.zeros(2))
    found = linprog.minimize(
        np.array([0.0, 0.0, 0.0, 1.0]),
        np.vstack(rows),
        np.concatenate(rhs),
        lower=np.array([-np.inf, -np.inf, -np.inf, 0.0]),
        upper=np.full(4, np.inf),
    )
    if found is None:
        return None
    return float(found.x[3]), found.x[:2].copy(), float(found.x[2])


@dataclass(frozen=True)
class ArcOptimum:
    """Best line geometry (foot, distance in units of the step) and its LP value r."""

    foot: float
    distance: float
    value: float


def optimal_arc(
    length: int, gain_scale: float, bias_bounded: bool, half: float = HALF
) -> ArcOptimum:
    """Minimize the read-out LP over the line geometry, parametrized as (foot / L,
    log(distance / L^{3/2})): the optimum sits near (0.4, log 0.18) for large L."""
    scale = length**1.5 * math.sqrt(HALF / half)  # a narrower band needs a flatter arc

    def value(p: np.ndarray) -> float:
        found = arc_readout_lp(
            _arc_directions(length, p[0] * length, scale * math.exp(p[1])),
            gain_scale,
            bias_bounded,
            half,
        )
        return math.inf if found is None else found[0]

    starts = [np.array([0.4, math.log(0.18)])]
    if length < 256:  # far from the asymptotic geometry: look around first
        starts += [np.array([f, math.log(g)]) for f in (0.0, 0.3, 0.6) for g in (0.1, 0.2, 0.4)]
    res = _restarted_nelder_mead(value, min(starts, key=value))
    return ArcOptimum(float(res.x[0] * length), float(scale * math.exp(res.x[1])), float(res.fun))


def _restarted_nelder_mead(
    value: Callable[[np.ndarray], float], start: np.ndarray, step: float = 0.05, restarts: int = 6
) -> scipy.optimize.OptimizeResult:
    """The better of Nelder-Mead from scipy's default simplex and from one of `step` in both
    coordinates, restarted from its own result until a restart gains under 1e-9 relative: the
    LP value has kinks and an infeasible region (inf) where a simplex can collapse, and each
    start alone stopped short somewhere (by up to 4e-3 relative)."""

    def run(x: np.ndarray, simplex: list[np.ndarray] | None) -> scipy.optimize.OptimizeResult:
        options = {"xatol": 1e-5, "fatol": 1e-10 * max(value(x), 1.0), "maxiter": 400}
        if simplex is not None:
            options["initial_simplex"] = simplex
        return scipy.optimize.minimize(value, x, method="Nelder-Mead", options=options)

    def around(x: np.ndarray) -> list[np.ndarray]:
        return [x, x + [step, 0.0], x + [0.0, step]]

    best = min(run(start, None), run(start, around(start)), key=lambda r: r.fun)
    for _ in range(restarts):
        res = run(best.x, around(best.x))
        if res.fun >= best.fun * (1 - 1e-9):
            break
        best = res
    return best


def postnorm_lower_bound(length: int, d: int, learned: bool, half: float = HALF) -> float:
    """Lower bound on B_min for post-norm. Bare: the read-out is sqrt(d)<u, n> + b0, so
    |U| <= sqrt(d) B and |b0| <= B. Learned gain: U = sqrt(d) P(u ⊙ gamma)|_plane and
    u ⊙ gamma ranges over the l1 ball of radius B^2, so |U| <= sqrt(d - 1) B^2 (the bias can
    come from <u, beta>, left free)."""
    if learned:
        return math.sqrt(optimal_arc(length, math.sqrt(d - 1), False, half).value)
    return optimal_arc(length, math.sqrt(d), bias_bounded=True, half=half).value


def none_lower_bound(length: int, half: float = HALF) -> float:
    """No norm: D = <u, e_a - e_Q> <= 2 B^2, so B >= sqrt(D_min / 2)."""
    return math.sqrt(softmax_gain_lower_bound(length, half) / 2)


def pre_learned_lower_bound(length: int, d: int) -> float:
    """Learned pre-norm: D = <u, gamma ⊙ (N_a - N_Q)> <= B * B * 2 sqrt(d)."""
    return math.sqrt(softmax_gain_lower_bound(length) / (2 * math.sqrt(d)))


def pre_bare_lower_bound(length: int, d: int, tau: float) -> float:
    """Bare pre-norm: alpha >= e^{-S} with S = 2d/tau and D <= |u| 2 sqrt(d); inf past the wall."""
    optimum = minimal_gain(length, (-2 * d / tau, 0.0))
    return optimum.gain / (2 * math.sqrt(d))


def lower_bound(placement: str, length: int, d: int, half: float = HALF) -> float:
    """B_min lower bound of the softmax regression model for one placement: the smallest B at
    which max |y - c| <= half is possible on the m = 0 line (half = 1/2: exact after rounding;
    no-norm and post-norm placements only for half < 1/2)."""
    tau = math.sqrt(d)
    if placement == "none":
        return none_lower_bound(length, half)
    if placement == "pre_bare":
        return pre_bare_lower_bound(length, d, tau)
    if placement == "pre_learned":
        return pre_learned_lower_bound(length, d)
    return postnorm_lower_bound(length, d, placement == "post_learned", half)


def predicted_exponent(placement: str, readout: str) -> float:
    """Theory's growth exponent of B_min(L) (pre_bare has a wall instead: nan)."""
    if readout == "classification":
        return 0.0
    return {"none": 1.0, "pre_learned": 1.0, "post_bare": 1.5, "post_learned": 0.75}.get(
        placement, math.nan
    )


def error_exponent(placement: str) -> float:
    """Theory's exponent k of the lower bound B(e) ~ e^-k as the allowed error e -> 0 at a fixed
    L (softmax regression): the read-out gain grows as 1/sqrt(e) (no norm: D ~ L^2 / e and
    B ~ sqrt(D); bare post-norm: B ~ K ~ L^{3/2} / sqrt(e)), and a learned gain shares it
    (B ~ sqrt(K)). NaN where C7 draws no curve (pre-norm)."""
    return {"none": 0.5, "post_bare": 0.5, "post_learned": 0.25}.get(placement, math.nan)


def fit_window(lengths: np.ndarray, values: np.ndarray, points: int) -> np.ndarray:
    """The lengths an exponent fit uses: the last `points` with a finite positive value."""
    keep = np.isfinite(values) & (np.asarray(values, float) > 0)
    return np.asarray(lengths, float)[keep][-points:]


def fitted_exponent(lengths: np.ndarray, values: np.ndarray, points: int) -> float:
    """Slope of log B vs log L over the last `points` finite points of a curve."""
    keep = np.isfinite(values) & (values > 0)
    x, y = np.log(np.asarray(lengths, float)[keep]), np.log(np.asarray(values, float)[keep])
    if len(x) < 2:
        return math.nan
    return float(np.polyfit(x[-points:], y[-points:], 1)[0])
