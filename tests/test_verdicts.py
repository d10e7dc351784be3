"""The shared verdict logic (verdicts.py, resampling.unit_resamples): a term holds, fails or is
undecided by its whole interval; a claim combines its terms; an undecided term says how many
units would decide it; the verdict of a noisy statistic changes only through `undecided` as its
noise grows."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_stability import verdicts
from transformer_stability.resampling import unit_draws, unit_resamples
from transformer_stability.verdicts import (
    FAILS,
    HOLDS,
    UNDECIDED,
    Estimate,
    Term,
    above,
    at_least,
    at_most,
    below,
    bootstrap,
    combined,
    margin,
    nearer,
    within,
)


def term(lo: float, hi: float, criterion, point: float | None = None, **kw) -> Term:
    point = (lo + hi) / 2 if point is None else point
    return Term("x", Estimate(point, lo, hi, "test", **kw), criterion)


# --- criteria and terms --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (1.00, 1.04, HOLDS),  # narrow pass
        (1.00, 1.05, HOLDS),  # the end belongs to "<= 1.05"
        (1.04, 1.06, UNDECIDED),  # straddle
        (1.05, 1.06, UNDECIDED),  # touches the end from outside
        (1.051, 1.06, FAILS),  # narrow fail
    ],
)
def test_at_most_decides_by_the_whole_interval(lo, hi, expected):
    assert term(lo, hi, at_most(1.05)).verdict == expected


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (-0.5, -0.01, HOLDS),
        (-0.5, 0.0, UNDECIDED),  # 0 is not below 0
        (-0.5, 0.2, UNDECIDED),
        (0.0, 0.2, FAILS),  # 0 itself fails "< 0"
        (0.1, 0.2, FAILS),
    ],
)
def test_below_is_strict_at_its_end(lo, hi, expected):
    assert term(lo, hi, below(0.0)).verdict == expected


# (the criteria are built in the tests' bodies, where mutation testing sees them called)
@pytest.mark.parametrize(
    ("make", "args", "lo", "hi", "expected"),
    [
        (above, (1.0,), 1.0, 2.0, UNDECIDED),
        (above, (1.0,), 1.01, 2.0, HOLDS),
        (above, (1.0,), 0.5, 1.0, FAILS),
        (above, (1.0,), 0.5, 0.99, FAILS),
        (at_least, (1.0,), 1.0, 2.0, HOLDS),
        (at_least, (1.0,), 0.5, 1.0, UNDECIDED),
        (at_least, (1.0,), 0.5, 0.99, FAILS),
        (at_least, (1.0,), 0.99, 1.5, UNDECIDED),
        (below, (1.0,), 0.5, 0.99, HOLDS),
        (below, (1.0,), 0.5, 1.0, UNDECIDED),
        (within, (0.5, 2.0), 0.5, 2.0, HOLDS),
        (within, (0.5, 2.0), 0.4, 0.6, UNDECIDED),
        (within, (0.5, 2.0), 1.9, 2.1, UNDECIDED),
        (within, (0.5, 2.0), 2.0, 3.0, UNDECIDED),
        (within, (0.5, 2.0), 2.01, 3.0, FAILS),
        (within, (0.5, 2.0), 0.1, 0.49, FAILS),
    ],
)
def test_the_other_criteria(make, args, lo, hi, expected):
    assert term(lo, hi, make(*args)).verdict == expected


def test_the_criteria_say_their_range():
    assert [(c.low, c.high, c.closed, c.text) for c in (at_most(2), below(2))] == [
        (-math.inf, 2, True, "<= 2"),
        (-math.inf, 2, False, "< 2"),
    ]
    assert [(c.low, c.high, c.closed, c.text) for c in (at_least(2), above(2))] == [
        (2, math.inf, True, ">= 2"),
        (2, math.inf, False, "> 2"),
    ]
    assert within(0.5, 2).text == "in [0.5, 2]"


def test_nearer_lies_between_the_midpoints_to_the_nearest_rivals():
    c = nearer(0.75, [0.0, 0.75, 1.0, 1.5])
    assert (c.low, c.high, c.closed) == (0.375, 0.875, False)
    assert c.text == "nearer 0.75 than 0, 1, 1.5"
    assert term(0.80, 0.93, c).verdict == UNDECIDED  # straddles 0.875
    assert term(0.80, 0.87, c).verdict == HOLDS
    assert term(0.875, 0.95, c).verdict == FAILS  # equally near 1 is not nearer 3/4
    bottom = nearer(0.0, [0.75, 1.0])
    assert (bottom.low, bottom.high) == (-math.inf, 0.375)
    assert term(-9.0, 0.3, bottom).verdict == HOLDS
    top = nearer(1.5, [0.0, 0.75, 1.0])
    assert (top.low, top.high) == (1.25, math.inf)
    assert term(1.3, 9.0, top).verdict == HOLDS


def test_an_interval_with_nan_is_undecided_and_infinities_are_compared():
    assert term(math.nan, 1.0, at_most(2.0), point=0.5).verdict == UNDECIDED
    assert term(0.0, 1.0, at_most(2.0), point=math.nan).verdict == UNDECIDED
    assert term(3.0, math.inf, at_most(2.0)).verdict == FAILS
    assert term(-math.inf, 1.0, at_most(2.0), point=0.0).verdict == HOLDS
    unbounded = term(1.0, math.inf, at_most(2.0), point=1.5, units=4, unit="seeds")
    assert unbounded.verdict == UNDECIDED
    assert unbounded.deciding_need() == "x: an interval with finite ends (more seeds, now 4)"


def test_an_exact_estimate_is_decided_by_its_value():
    exact = Estimate.exact(1.05)
    assert (exact.lo, exact.hi) == (1.05, 1.05) and exact.units is None
    assert exact.basis == "exact (no sampling)" and Estimate.exact(1, "LP").basis == "LP"
    assert Estimate.bracket(1, 0.5, 2, "grid") == Estimate(1.0, 0.5, 2.0, "grid")
    assert Term("x", exact, at_most(1.05)).verdict == HOLDS
    assert Term("x", exact, below(1.05)).verdict == FAILS
    assert exact.text() == "1.05"
    assert Estimate(1.0, 0.9, 1.2, "b").text() == "1 [0.9, 1.2]"


def test_a_claim_fails_on_any_failing_term_and_holds_only_when_all_hold():
    assert combined([HOLDS, HOLDS]) == HOLDS
    assert combined([HOLDS, UNDECIDED]) == UNDECIDED
    assert combined([UNDECIDED, FAILS, HOLDS]) == FAILS
    with pytest.raises(ValueError, match="^a claim's verdict needs at least one term$"):
        combined([])


def test_the_need_scales_the_units_to_clear_the_nearest_end():
    # half-width 0.02 at 4 seeds, 0.01 from the threshold: (0.02 / 0.01)^2 * 4 = 16 seeds
    t = term(1.02, 1.06, at_most(1.05), point=1.04, units=4, unit="seeds")
    assert t.verdict == UNDECIDED
    assert t.deciding_need() == "x: about 16 seeds at the observed spread (now 4)"
    # the wide side counts: point 1.06, interval [1.04, 1.10], 0.01 above the end: 0.04/0.01
    wide = term(1.04, 1.10, at_most(1.05), point=1.06, units=3, unit="seeds")
    assert wide.deciding_need() == "x: about 48 seeds at the observed spread (now 3)"
    on_end = term(1.0, 1.1, at_most(1.05), point=1.05, units=3, unit="seeds")
    assert "sits on the criterion's end" in on_end.deciding_need()
    assert term(1.0, 1.04, at_most(1.05), units=3, unit="seeds").deciding_need() == ""


def test_a_bracket_or_exact_term_says_its_own_need():
    bracket = Term("slope", Estimate.bracket(0.86, 0.80, 0.93, "grid"), below(0.875), "finer B")
    assert bracket.deciding_need() == "slope: finer B"
    unnamed = Term("slope", Estimate.bracket(0.86, 0.80, 0.93, "grid"), below(0.875))
    assert unnamed.deciding_need() == "slope: a statistic the run could compute and bound"


def test_the_text_and_the_margin_of_a_term():
    t = term(1.0, 1.04, at_most(1.05), point=1.02)
    assert t.text() == "x 1.02 [1, 1.04] <= 1.05: holds"
    # the tighter of two holding terms is the one whose interval comes nearer the end
    assert margin(term(1.0, 1.04, at_most(1.05))) < margin(term(1.0, 1.02, at_most(1.05)))
    # equal gaps: the wider interval is the tighter
    assert margin(term(1.0, 1.04, at_most(1.05))) == pytest.approx(0.25)
    assert margin(term(1.02, 1.04, at_most(1.05))) == pytest.approx(0.5)
    # an exact value cannot be carried across an end by noise, even sitting on a closed one
    assert margin(Term("x", Estimate.exact(0.0), at_most(0.0))) == math.inf
    assert margin(term(0.0, 1e-9, at_most(1.0))) > 1e8
    anything = Term("x", Estimate(1.0, 0.0, 2.0, "b", 3, "seeds"), within(-math.inf, math.inf))
    assert anything.verdict == HOLDS and margin(anything) == math.inf


# --- resampling tables ---------------------------------------------------------------------


def grid(seeds: int = 5) -> pd.DataFrame:
    """Two conditions x `seeds` seeds x three rows each; value = 10 * seed + row."""
    rows = [
        {"cond": c, "seed": s, "row": r, "value": 10.0 * s + r + (100 if c == "b" else 0)}
        for c in ("a", "b")
        for s in range(seeds)
        for r in range(3)
    ]
    return pd.DataFrame(rows)


def test_unit_resamples_keep_each_units_rows_and_every_stratum():
    frame = grid()
    for copy in unit_resamples(frame, ["seed"], ["cond"], resamples=20, seed=1):
        assert len(copy) == len(frame)
        for (cond, _), rows in copy.groupby(["cond", "seed"]):
            # a drawn unit brings all three rows of one original seed, relabelled by position
            assert sorted(rows["row"]) == [0, 1, 2]
            assert rows["value"].sub(rows["row"]).nunique() == 1
            assert ((rows["value"] >= 100) == (cond == "b")).all()
        assert copy.groupby("cond")["seed"].nunique().max() <= 5


def test_units_of_unequal_size_are_drawn_whole():
    # seed s holds s + 1 rows: a drawn unit's rows are exactly one original seed's rows
    frame = pd.DataFrame([{"seed": s, "row": r} for s in range(4) for r in range(s + 1)])
    for copy in unit_resamples(frame, ["seed"], resamples=30, seed=2):
        for _, rows in copy.groupby("seed"):
            assert sorted(rows["row"]) == list(range(len(rows)))
        assert copy["seed"].nunique() == 4


def test_a_unit_drawn_twice_counts_twice():
    frame = grid(seeds=3)
    originals = []
    for copy in unit_resamples(frame, ["seed"], resamples=50, seed=0):
        # three positions, each holding one original seed's rows of both conditions
        assert sorted(copy["seed"].unique()) == [0, 1, 2]
        drawn = copy[copy["cond"] == "a"].groupby("seed")["value"].min() // 10
        originals.append(tuple(drawn))
    assert any(len(set(o)) < 3 for o in originals)  # repeats happen and stay apart
    assert len(set(originals)) > 5


def test_bootstrap_intervals_cover_the_mean_and_shrink_with_units():
    rng = np.random.default_rng(0)

    def frame(n: int) -> pd.DataFrame:
        return pd.DataFrame({"seed": range(n), "x": rng.normal(1.0, 0.1, n)})

    def mean(d: pd.DataFrame) -> pd.Series:
        return pd.Series({"mean": d["x"].mean()})

    small = bootstrap(frame(8), mean, "seed", "seeds", resamples=400)["mean"]
    large = bootstrap(frame(200), mean, "seed", "seeds", resamples=400)["mean"]
    assert small.lo < small.point < small.hi and small.units == 8 and small.unit == "seeds"
    assert small.basis == "bootstrap over seeds"
    assert large.hi - large.lo < (small.hi - small.lo) / 2.5
    # about the standard error of the mean: 1.96 * 0.1 / sqrt(200) on each side
    assert (large.hi - large.lo) / 2 == pytest.approx(1.96 * 0.1 / np.sqrt(200), rel=0.3)


def test_bootstrap_counts_the_units_of_the_smallest_stratum_and_is_reproducible():
    frame = pd.concat([grid(seeds=5), grid(seeds=3).assign(cond="c")])

    def means(d: pd.DataFrame) -> pd.Series:
        return d.groupby("cond")["value"].mean()

    first = bootstrap(frame, means, "seed", "seeds", strata=["cond"], resamples=100)
    again = bootstrap(frame, means, ["seed"], "seeds", strata=["cond"], resamples=100, seed=0)
    assert first == again
    assert {e.units for e in first.values()} == {3}
    assert set(first) == {"a", "b", "c"}
    # a stratum whose label is NaN (pre-LN has no alpha) is a stratum too
    nan = frame.assign(cond=frame["cond"].replace("c", np.nan))
    counted = bootstrap(nan, lambda d: d["value"].agg(["mean"]), "seed", "seeds", ["cond"], 0, 20)
    assert counted["mean"].units == 3


@pytest.mark.slow
def test_bootstrap_draws_with_its_seed_and_pairs_each_label_with_its_own_draws():
    frame = pd.DataFrame({"seed": range(12), "x": np.linspace(0.0, 1.0, 12) ** 2})

    def mean(d: pd.DataFrame) -> pd.Series:
        return pd.Series({"mean": d["x"].mean()})

    one = bootstrap(frame, mean, "seed", "seeds", seed=1, resamples=60)["mean"]
    draws = unit_draws(frame, mean, ["seed"], resamples=60, seed=1)["mean"].to_numpy()
    assert (one.lo, one.hi) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))
    zero = bootstrap(frame, mean, "seed", "seeds", resamples=60)["mean"]
    assert (one.lo, one.hi) != (zero.lo, zero.hi)

    # a statistic whose labels come in another order at every other call: each label's
    # interval is still that label's, not its neighbour's in the first resample
    two = pd.concat([frame.assign(g="low"), frame.assign(g="high", x=frame["x"] + 10.0)])
    calls = []

    def means(d: pd.DataFrame) -> pd.Series:
        calls.append(1)
        found = d.groupby("g")["x"].mean()
        return found if len(calls) % 2 else found[::-1]

    ordered = bootstrap(two, means, "seed", "seeds", strata=["g"])
    assert ordered["low"].hi < 1.0 < 10.0 < ordered["high"].lo


def test_bootstrap_takes_several_unit_columns():
    frame = grid(seeds=4)  # 4 seeds x 3 rows in each condition: 12 (seed, row) units
    found = bootstrap(frame, lambda d: d["value"].agg(["mean"]), ["seed", "row"], "cells")
    assert found["mean"].units == 12


def test_the_claims_resample_count_is_read_at_each_call(monkeypatch):
    calls = []

    def statistic(d: pd.DataFrame) -> pd.Series:
        calls.append(1)
        return pd.Series({"m": d["value"].mean()})

    monkeypatch.setattr(verdicts, "RESAMPLES", 30)
    bootstrap(grid(), statistic, "seed", "seeds")
    assert len(calls) == 31  # the point, then 30 resamples


def test_unit_draws_leave_a_value_a_resample_cannot_compute_as_nan():
    frame = grid(seeds=4)

    def odd(d: pd.DataFrame) -> pd.Series:
        return pd.Series({"v": d["value"].mean() if d["seed"].nunique() > 0 else 0.0, "w": np.nan})

    draws = unit_draws(frame, odd, ["seed"], resamples=10)
    assert draws.shape == (10, 2) and draws["w"].isna().all()


# --- noise moves a verdict only through undecided ----------------------------------------


def _verdict_at(noise: np.ndarray, mu: float, sigma: float, criterion) -> str:
    frame = pd.DataFrame({"seed": range(len(noise)), "x": mu + sigma * noise})
    estimate = bootstrap(
        frame, lambda d: pd.Series({"m": d["x"].mean()}), "seed", "seeds", resamples=100
    )
    return Term("mean", estimate["m"], criterion).verdict


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(4, 12),
    mu=st.floats(-1.0, 1.0).filter(lambda m: abs(m) > 0.05),
    upper=st.booleans(),
)
def test_growing_noise_turns_a_verdict_into_undecided_never_into_its_opposite(seed, n, mu, upper):
    """Noise centred on the true value (the point estimate stays at mu): as its size grows the
    verdict goes from holds (or does not hold) to undecided and never to the opposite one."""
    noise = np.random.default_rng(seed).normal(size=n)
    noise -= noise.mean()
    criterion = at_most(0.0) if upper else at_least(0.0)
    truth = HOLDS if criterion.contains(mu) else FAILS
    seen = [_verdict_at(noise, mu, sigma, criterion) for sigma in (0.0, 0.03, 0.3, 10.0)]
    assert seen[0] == truth
    assert set(seen) <= {truth, UNDECIDED}
    first_open = seen.index(UNDECIDED)  # the largest noise leaves it open
    assert all(v == UNDECIDED for v in seen[first_open:])
