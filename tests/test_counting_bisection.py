"""Bisection on B (counting/bisection.py) and the empirical B_min read from its runs: with a
monotone success oracle the bracket must shrink to the precision around the true threshold,
and a length is unreached only when the upper bracket fails."""

import math

import numpy as np
import pandas as pd
import pytest

from transformer_stability.counting.bisection import Bracket, probes, update
from transformer_stability.counting.rates import empirical_bmin


def _bisect(threshold: float, bracket: Bracket, count: int, precision: float, rounds: int):
    tried = []
    for _ in range(rounds):
        if bracket.done(precision):
            break
        values = probes(bracket, count)
        tried.append(values)
        bracket = update(bracket, values, values >= threshold)
    return bracket, tried


@pytest.mark.parametrize("threshold", [1.01, 1.3, 1.77, 2.99])
def test_bisection_brackets_a_monotone_threshold_to_the_precision(threshold):
    bracket, tried = _bisect(threshold, Bracket(1.0, 3.0), 3, 0.02, 10)
    assert bracket.state == "reached"
    assert bracket.low < threshold <= bracket.high
    assert bracket.ratio - 1 <= 0.02
    assert tried[0][-1] == 3.0  # the first round tries the upper bracket itself
    assert all(len(values) == 3 for values in tried)


def test_a_failing_upper_bracket_leaves_the_length_unreached():
    bracket, tried = _bisect(5.0, Bracket(1.0, 3.0), 3, 0.02, 10)
    assert bracket.state == "unreached" and len(tried) == 1


def test_later_rounds_probe_strictly_inside_the_bracket():
    values = probes(Bracket(2.0, 4.0, "reached"), 3)
    np.testing.assert_allclose(values, 2.0 * 2.0 ** (np.arange(1, 4) / 4))


def _rows(seed: int, runs: list[tuple[int, float, bool]], low=1.0, high=3.0) -> list[dict]:
    return [
        {
            "placement": "post_learned",
            "readout": "regression",
            "d": 8,
            "L": 16,
            "B": b,
            "seed": seed,
            "round": r,
            "bracket_low": low,
            "bracket_high": high,
            "accuracy": 1.0 if ok else 0.9,
        }
        for r, b, ok in runs
    ]


def test_empirical_bmin_is_the_best_seed_with_its_bracket_and_ignores_unconstrained_runs():
    rows = _rows(0, [(1, 2.0, True), (1, 3.0, True), (2, 1.5, False), (2, 1.8, True)])
    rows += _rows(1, [(1, 2.0, False), (1, 3.0, True)])
    rows += _rows(1, [(0, math.inf, True)], low=math.nan, high=math.nan)
    row = empirical_bmin(pd.DataFrame(rows)).iloc[0]
    assert (row["bmin"], row["bmin_low"], row["lower_bound"]) == (1.8, 1.5, 1.0)
    assert row["ratio"] == pytest.approx(1.8) and row["reached"]
    assert (row["seeds_reached"], row["runs"], row["rounds"]) == (2, 6, 2)


def test_empirical_bmin_is_inf_only_when_the_upper_bracket_fails():
    rows = _rows(0, [(1, 2.0, False), (1, 3.0, False)])
    row = empirical_bmin(pd.DataFrame(rows)).iloc[0]
    assert row["bmin"] == math.inf and not row["reached"] and row["bmin_low"] == 3.0


def test_an_unproven_floor_is_probed_first_and_closes_the_bracket_when_it_succeeds():
    floor = Bracket(0.05, 0.5, low_proven=False)
    values = probes(floor, 3)
    np.testing.assert_allclose(values, [0.05, 0.5**0.5 * 0.05**0.5, 0.5])
    closed = update(floor, values, np.array([True, True, True]))
    assert (closed.low, closed.high, closed.state) == (0.05, 0.05, "reached")
    assert closed.done(0.01)
