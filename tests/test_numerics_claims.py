"""Study N's claims (numerics/claims/) on hand-made tables whose answer is known: each claim
holds on data built to satisfy it, fails on data built to contradict it, is undecided where
the interval of a sampled statistic straddles its criterion, and is not run where the preset
does not measure what it needs. Sampled statistics get per-sample (or per-head) noise of a
chosen spread, so a narrow interval lies wholly inside or outside its criterion and a wide one
straddles it. The tables go through their models (written and read back), as the claims rule
reads them."""

import itertools
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from transformer_stability import verdicts
from transformer_stability.claims import NOT_RUN, claims_tables, findings
from transformer_stability.io import read_table, write_table
from transformer_stability.numerics.claims import (
    CLAIMS,
    _common,
    bounds,
    gpt2_errors,
    gpt2_regimes,
    norm_outlier,
    sinks,
    softmax_evaluation,
    worst_case,
)
from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Lipschitz,
    Norms,
    RecursionSources,
    SinkEmergence,
    SinkSoftmax,
    Softmax,
)
from transformer_stability.provenance import with_provenance
from transformer_stability.registry import table_model
from transformer_stability.resampling import percentile_bounds
from transformer_stability.tables import Table
from transformer_stability.verdicts import FAILS, HOLDS, UNDECIDED

U7 = 2.0**-8  # unit roundoff of 7 mantissa bits
SECTION = {"norms": {"dim": 32}}
SAMPLES = 8
Z = np.linspace(-1.0, 1.0, SAMPLES)  # each sample's (or head's) place in the noise


@pytest.fixture(autouse=True)
def fewer_resamples(monkeypatch):
    """200 resamples: the intervals' ends move by a few per cent, far less than the margins
    the tables below are built with."""
    monkeypatch.setattr(verdicts, "RESAMPLES", 200)


@pytest.fixture
def checked(tmp_path: Path):
    """A frame as the claims rule sees it: written and read back through its model."""

    def through(frame: pd.DataFrame, model: type[Table]) -> pd.DataFrame:
        path = tmp_path / f"{model.__name__}.csv"
        write_table(with_provenance(frame, seed=0, device="cpu", dtype="float64"), path, model)
        return read_table(path, model)

    return through


def noise(spread: float, unit: int) -> float:
    """A unit's multiplicative noise: exp(spread z), z spaced evenly over [-1, 1]."""
    return float(np.exp(spread * Z[unit]))


def terms(finding) -> dict:
    return {term.name: term for term in finding.terms}


def verdict_of(finding, name: str) -> str:
    return terms(finding)[name].verdict


def straddles(term, threshold: float) -> bool:
    return term.estimate.lo < threshold < term.estimate.hi


# --- builders ---------------------------------------------------------------------------------


def norms_frame(
    outliers=(0.0, 1000.0),
    bound_over_error=5.0,
    ln_bulk=None,
    ln_kappa=1.0,
    spread=0.0,
) -> pd.DataFrame:
    """Errors u (LayerNorm's bulk error u(1 + M/d), or u `ln_bulk`), bounds a fixed multiple,
    bulk conditions 4 (LayerNorm's times `ln_kappa`). Each sample's noise multiplies every
    bound and LayerNorm's bulk error and condition."""
    rows = []
    for norm in ("layernorm", "rmsnorm"):
        ln = norm == "layernorm"
        for outlier in outliers:
            for sample in range(SAMPLES):
                f = noise(spread, sample)
                penalty = 1 + outlier / SECTION["norms"]["dim"] if ln_bulk is None else ln_bulk
                bulk = U7 * penalty * f if ln else U7
                errors = {"normwise": U7, "comp_median": U7, "comp_max": 2 * U7, "bulk": bulk}
                metrics = {f"err_{k}": v for k, v in errors.items()}
                metrics |= {f"bound_{k}": bound_over_error * v * f for k, v in errors.items()}
                metrics |= {
                    "kappa_normwise": 1.0,
                    "kappa_comp_median": 2.0,
                    "kappa_bulk": 4.0 * (ln_kappa * f if ln else 1.0),
                }
                rows += [
                    {"norm": norm, "mantissa_bits": 7, "outlier": outlier, "sample": sample}
                    | {"metric": m, "value": v}
                    for m, v in metrics.items()
                ]
    return pd.DataFrame(rows)


def _softmax_row(sweep, p_max, offset, mode, metric, measured, bound, sample, fmt="m7") -> dict:
    return {
        "sweep": sweep,
        "p_max": p_max,
        "offset": offset,
        "format": "fp64" if mode == "propagation" else fmt,
        "mantissa_bits": {"fp64": 52, "fp16": 10}.get(fmt, 7),
        "mode": mode,
        "metric": metric,
        "sample": sample,
        "measured": measured,
        "bound": bound,
    }


def _cast_rows(p_maxes, cast_floor: float, sample: int) -> list[dict]:
    """fp16 sink rows, their error and bound floored at `cast_floor`."""
    rows = []
    for p in p_maxes:
        error = max(min(1 - p, U7) / 2, cast_floor)
        bound = max(4 * error, 20 * cast_floor)
        rows += [
            _softmax_row("sink", p, 0.0, "shifted", "l1_abs", error, bound, sample, "fp16"),
            _softmax_row(
                "sink", p, 0.0, "shifted", "worst_entry", error / 9, error / 8, sample, "fp16"
            ),
        ]
    return rows


def _sink_rows(p_maxes, sink_aware, bound_over_error, bound_slope, f, sample) -> list[dict]:
    """Errors min(1 - p_max, u)/2; bounds `bound_over_error` x them (x f, times (1 - p_max)^
    (bound_slope - 1) below u) where `sink_aware`, else 2u; max_rel 7u, its bound
    `bound_over_error` x f x it; kappa_max 50 (the offset sweep's differ)."""
    rows = []
    for p in p_maxes:
        gain = 2 * (1 - p**2)
        rows += [
            _softmax_row("sink", p, 0.0, "propagation", "l1_gain", 0.6 * gain, gain, sample),
            _softmax_row(
                "sink", p, 0.0, "propagation", "jacobian_abs_sum", 0.95 * gain, gain, sample
            ),
        ]
        error = min(1 - p, U7) / 2
        tilt = (min(1 - p, U7) / U7) ** (bound_slope - 1)
        bound = bound_over_error * error * tilt * f if sink_aware else 2 * U7
        for mode in ("unshifted", "shifted"):
            rows += [
                _softmax_row("sink", p, 0.0, mode, "l1_abs", error, bound, sample),
                _softmax_row(
                    "sink", p, 0.0, mode, "max_rel", 7 * U7, bound_over_error * 7 * U7 * f, sample
                ),
                _softmax_row("sink", p, 0.0, mode, "kappa_max", 50.0, np.nan, sample),
            ]
    return rows


def _offset_rows(offsets, error_exponent, shifted_growth, bound_over_error, f, sample):
    """Condition 5 + 2c unshifted, 5 shifted; errors 5u (kappa/5)^`error_exponent` unshifted,
    5u shifted (x `shifted_growth` at the largest offset), each x f, and bounds
    `bound_over_error` x f x them."""
    rows = []
    for c in offsets:
        for mode in ("unshifted", "shifted"):
            kappa = 5 + 2 * c if mode == "unshifted" else 5.0
            if mode == "unshifted":
                error = 5 * U7 * (kappa / 5) ** error_exponent * f
            else:
                error = 5 * U7 * (shifted_growth if c == max(offsets) else 1.0) * f
            bound = bound_over_error * error * f
            rows += [
                _softmax_row("offset", 0.5, c, mode, "kappa_max", kappa, np.nan, sample),
                _softmax_row("offset", 0.5, c, mode, "max_rel", error, bound, sample),
                _softmax_row("offset", 0.5, c, mode, "l1_abs", error / 2, bound / 2, sample),
            ]
    return rows


def softmax_frame(
    p_maxes=(0.5, 1 - 1e-3, 1 - 1e-5),
    offsets=(0.0, 30.0),
    sink_aware=True,
    error_exponent=1.0,
    shifted_growth=1.0,
    bound_over_error=4.0,
    bound_slope=1.0,
    spread=0.0,
    cast_floor=None,
) -> pd.DataFrame:
    """Sink rows (`_sink_rows`) and offset rows (`_offset_rows`) per sample, each sample's
    noise on the sink bounds and the offset errors; with `cast_floor`, fp16 sink rows too."""
    rows = []
    for sample in range(SAMPLES):
        f = noise(spread, sample)
        if cast_floor is not None:
            rows += _cast_rows(p_maxes, cast_floor, sample)
        rows += _sink_rows(p_maxes, sink_aware, bound_over_error, bound_slope, f, sample)
        rows += _offset_rows(offsets, error_exponent, shifted_growth, bound_over_error, f, sample)
    return pd.DataFrame(rows)


SINK_TAILS = tuple(10.0 ** np.arange(-12, -2))  # 1e-12 .. 1e-3, one per decade


def sink_rows_frame(
    tails=SINK_TAILS,
    bound_slope=1.0,
    bound_over_error=3.0,
    spread=0.0,
    sequences=8,
) -> pd.DataFrame:
    """The trained model's own rows (sink_softmax.csv), m7: per held-out sequence one row at
    each tail mass after training, bound 1e-3 (tail/1e-3)^(slope + log noise) and error
    bound/(ratio x noise) with the sequence's noise; at step 0 one spread row (tail 0.9)."""
    rows = []
    for sequence in range(sequences):
        z = np.log(noise(spread, sequence))
        cells = [(0, 0.9, 0.04, 14.0)]
        cells += [
            (1500, t, 1e-3 * (t / 1e-3) ** (bound_slope + z), bound_over_error * np.exp(z))
            for t in tails
        ]
        for query, (step, tail, bound, ratio) in enumerate(cells):
            rows.append(
                {"model": "trained-backcopy", "step": step, "format": "m7", "mantissa_bits": 7}
                | {"block": 0, "head": 0, "sequence": sequence, "query": query}
                | {"tail_mass": tail, "measured": bound / ratio, "bound": bound}
            )
    return pd.DataFrame(rows)


def lipschitz_frame(
    seq_lens=(4, 16, 64, 256), growth=0.0, ball_bound=120.0, draws=2
) -> pd.DataFrame:
    """Per draw, worst found (5 + draw) n^growth against an n-free bound over the ball."""
    rows = []
    for draw in range(draws):
        for n in seq_lens:
            for norm in ("inf", "frobenius"):
                worst = (5.0 + draw) * (n / seq_lens[0]) ** growth
                bound = ball_bound if norm == "inf" else ball_bound * np.sqrt(n)
                rows.append(
                    {
                        "seq_len": n,
                        "draw": draw,
                        "p_max_min": 0.3,
                        "norm": norm,
                        "estimate": 3.0,
                        "worst": worst,
                        "bound": 100.0,
                        "ball_bound": bound,
                        "worst_over_estimate": worst / 3.0,
                        "bound_over_worst": bound / worst,
                    }
                )
    return pd.DataFrame(rows)


ALPHAS = (0.01, 1.0, 100.0)
ADDS = ((1, "attn"), (2, "mlp"), (3, "attn"), (4, "mlp"))


def stream(alpha: float) -> float:
    """Embedding 1 plus branches 3 alpha: residual-dominated for alpha >= 1, embedding-dominated
    at 0.01."""
    return 1 + 3 * alpha


def _run(alpha: float, checkpoint: int, kind: str, precision: str = "m10") -> dict:
    run = {"weights": "random", "model": "random-gpt2", "precision": precision, "alpha": alpha}
    return run | {"checkpoint": checkpoint, "kind": kind}


def errors_frame(plateau_spread=1.0, flipped_error=0.1, precision="m10") -> pd.DataFrame:
    """rel_linf 10u at the residual-dominated alphas (times `plateau_spread` at the largest),
    `flipped_error` x 10u at the embedding-dominated one."""
    u = 2.0**-11
    rows = []
    for alpha in ALPHAS:
        factor = {ALPHAS[0]: flipped_error, ALPHAS[-1]: plateau_spread}.get(alpha, 1.0)
        values = {"rel_linf": 10 * u * factor, "stream_median_l2": stream(alpha)}
        for checkpoint, kind in ADDS:
            for metric, v in values.items():
                quantiles = dict.fromkeys(("p01", "p25", "p50", "p75", "p99"), v)
                run = _run(alpha, checkpoint, kind, precision)
                rows.append(run | {"metric": metric} | quantiles)
    return pd.DataFrame(rows)


def recursion_frame(collapses=True, violated=False, fall=None) -> pd.DataFrame:
    """Amplification omega alpha / stream (collapses over alpha >= 1) or omega alpha; bounds
    far above the measured errors (below them at one add where `violated`). With `fall`, the
    amplification at the embedding-dominated alpha is `fall` x the plateau's."""
    u = 2.0**-11
    rows = []
    for alpha in ALPHAS:
        for checkpoint, kind in ADDS:
            omega = 1e5 if kind == "attn" else 300.0
            amp = omega * alpha / (stream(alpha) if collapses else 1.0)
            if fall is not None and alpha == ALPHAS[0]:  # the plateau: 1/4 and 100/301
                amp = fall * omega * (1 / 4 + 100 / 301) / 2
            bound_rel = 0.1 * u if violated and checkpoint == 2 else u * 1e9
            rows.append(
                _run(alpha, checkpoint, kind)
                | {
                    "unit_roundoff": u,
                    "measured": u * stream(alpha),
                    "bound": bound_rel * stream(alpha),
                    "measured_rel": u,
                    "bound_rel": bound_rel,
                    "measured_rel_l2": u,
                    "typical_rel_l2": 5 * u,
                    "amplification": amp,
                    "amplification_l2": amp / 10,
                }
            )
    return pd.DataFrame(rows)


def sources_frame(typical=3.0, first_bound=1e3, violated=False) -> pd.DataFrame:
    """Two sources alone at alpha = 1: typical estimate `typical` x the measured error, the
    bound `first_bound` x it at the first add and 10x more per add (below it at the last add
    where `violated`)."""
    u = 2.0**-11
    rows = []
    for source in ("all", "qkv"):
        for checkpoint, kind in ADDS:
            factor = first_bound * 10.0 ** (checkpoint - 1)
            factor = 0.5 if violated and checkpoint == 4 else factor
            rows.append(
                {"weights": "random", "model": "random-gpt2", "mantissa_bits": 10}
                | {"source": source, "alpha": 1.0, "checkpoint": checkpoint, "kind": kind}
                | {"unit_roundoff": u, "measured": u, "bound": factor * u}
                | {"measured_rel": u, "bound_rel": factor * u}
                | {"measured_rel_l2": u, "typical_rel_l2": typical * u}
            )
    return pd.DataFrame(rows)


def bound_tables(checked, norms=None, softmax=None, lipschitz=None) -> dict:
    return {
        _common.NORMS: checked(norms_frame() if norms is None else norms, Norms),
        _common.SOFTMAX: checked(softmax_frame() if softmax is None else softmax, Softmax),
        _common.LIPSCHITZ: checked(
            lipschitz_frame() if lipschitz is None else lipschitz, Lipschitz
        ),
    }


def gpt2_tables(checked, errors=None, recursion=None, sources=None) -> dict:
    return {
        _common.ERRORS: checked(errors_frame() if errors is None else errors, Gpt2Errors),
        _common.RECURSION: checked(
            recursion_frame() if recursion is None else recursion, Gpt2Recursion
        ),
        _common.SOURCES: checked(sources_frame() if sources is None else sources, RecursionSources),
    }


# --- the claims' units and the cell medians ---------------------------------------------------


def test_each_sampled_table_names_its_units():
    """The columns the bootstraps resample, named for the stability test; the GPT-2 tables hold
    no units."""
    units = {spec.id: dict(spec.units) for spec in CLAIMS}
    samples, draws = ("sample",), ("draw",)
    assert units["N.1"] == {
        _common.NORMS: samples,
        _common.SOFTMAX: samples,
        _common.LIPSCHITZ: draws,
    }
    assert units["N.2"] == {_common.NORMS: samples}
    assert units["N.3"] == {_common.SOFTMAX: samples, _common.SINK_ROWS: ("sequence",)}
    assert units["N.4"] == {_common.SOFTMAX: samples}
    assert units["N.5"] == {_common.LIPSCHITZ: draws}
    assert units["N.6"] == units["N.7"] == units["N.8"] == {}
    assert units["N.9"] == {_common.EMERGENCE: ("sequence",), _common.SINKS: ("block", "head")}


def test_cell_medians_match_pandas_with_nan_and_uneven_cells():
    """Odd and even counts, NaN left out, inf kept, a cell of one value."""
    keys = ["b", "a", "b", "a", "a", "c", "b", "c", "d", "d", "b", "e"]
    values = [3.0, 1.0, np.nan, 5.0, 2.0, 10.0, 1.0, 4.0, np.inf, 6.0, 7.0, 9.0]
    frame = pd.DataFrame({"key": keys, "v": values, "other": 0})
    cells, labels = _common._cells(frame, ["key"], ["v"])
    assert list(labels.key) == ["a", "b", "c", "d", "e"] and list(cells.columns) == ["v", "cell"]
    expected = frame.groupby("key").v.median().to_numpy()
    np.testing.assert_array_equal(expected, [2.0, 3.0, 7.0, np.inf, 9.0])
    np.testing.assert_array_equal(_common._cell_medians(cells, "v"), expected)


@pytest.mark.parametrize("gone", [0, 2, 4])
def test_cell_medians_nan_where_a_cell_has_no_value(gone):
    frame = pd.DataFrame({"cell": [0, 0, 1, 2, 2, 2, 3, 4, 4], "v": [1.0, 3, 5, 6, 7, 8, 2, 4, 6]})
    frame.loc[frame.cell == gone, "v"] = np.nan
    expected = [2.0, 5.0, 7.0, 2.0, 5.0]
    expected[gone] = np.nan
    np.testing.assert_array_equal(_common._cell_medians(frame, "v"), expected)


def test_by_label_keys_the_medians_by_their_cells():
    frame = pd.DataFrame({"x": ["p", "p", "q"], "y": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
    cells, labels = _common._cells(frame, ["x", "y"], ["v"])
    assert _common._by_label(cells, labels, "v") == {("p", 1): 1.0, ("p", 2): 2.0, ("q", 1): 3.0}


def test_ratio_median_leaves_out_exact_results():
    bound = pd.Series([1.0, 10.0, 4.0, np.nan, 8.0]) / 100
    measured = pd.Series([0.0, 1.0, 1.0, 1.0, 2.0]) / 100
    assert _common._ratio_median(bound, measured) == pytest.approx(4.0)  # 10, 4, 4: NaN, 1/0 out


def test_slope_of_a_power_law_and_nan_without_one():
    x = pd.Series([1.0, 10.0, 100.0])
    assert _common._slope(x, 3 * x**0.5) == pytest.approx(0.5)
    with warnings.catch_warnings():  # no log of 0 or inf attempted
        warnings.simplefilter("error")
        assert np.isnan(_common._slope(x, pd.Series([1.0, 0.0, 2.0])))
        assert np.isnan(_common._slope(x, pd.Series([1.0, np.inf, 2.0])))


STATISTICS = {
    "N.1": "measured values above their bound; median bound/error",
    "N.2": "bulk error and bulk condition, LayerNorm / RMSNorm, at the largest M",
    "N.3": "log-log slope of the evaluation bound vs 1 - p_max for 1 - p_max <= u; bound/error; "
    "on synthetic sinks and on a trained model's attention rows",
    "N.4": "growth of the max relative error with the offset, unshifted vs shifted",
    "N.5": "per weight draw, log-log slope of the largest Lipschitz constant found / the n-free "
    "bound vs n; bound/found per n",
    "N.6": "bound violations; spread of alpha omega_k Lip_k over alpha per regime; the bound's "
    "factor at the first add; typical estimate / measured",
    "N.7": "spread of the relative error over alpha per stream regime",
    "N.8": "spread of the relative error over alpha per stream regime",
    "N.9": "the heads' first-token weight and the sink head's tail mass of the late attention "
    "rows, trained vs the same model at initialization",
}


@pytest.mark.slow
def test_every_claim_names_its_statistic(checked):
    errors = pd.concat([errors_frame(), _trained(errors_frame())])
    tables = bound_tables(checked) | gpt2_tables(checked, errors=errors)
    tables[_common.SINKS] = checked(sinks_frame(), AttentionSinks)
    tables[_common.EMERGENCE] = checked(emergence_frame(), SinkEmergence)
    tables[_common.SINK_ROWS] = checked(sink_rows_frame(), SinkSoftmax)
    for spec, finding in findings(CLAIMS, tables, SECTION):
        assert finding.statistic == STATISTICS[spec.id], spec.id


# --- N.1 --------------------------------------------------------------------------------------


def test_bounds_hold_on_valid_tight_bounds(checked):
    finding = bounds.bounds_hold(bound_tables(checked), SECTION)
    assert finding.verdict == HOLDS
    assert finding.value.startswith("0 of 368 above their bound (norms 0/128, softmax 0/208, ")
    assert "attention 0/32); median bound/error: norms 5, softmax 4" in finding.value
    named = terms(finding)
    assert list(named) == [
        "values above bound, norms",
        "values above bound, softmax",
        "values above bound, attention",
        "median bound/error, norms",
        "median bound/error, softmax",
    ]
    count = named["values above bound, norms"]
    assert count.estimate.basis == _common.COUNTED and count.criterion.text == "<= 0"
    tight = named["median bound/error, norms"].estimate
    assert (tight.basis, tight.units, tight.unit) == ("bootstrap over samples", SAMPLES, "samples")
    assert named["median bound/error, softmax"].criterion.text == "<= 100"


def test_a_pair_without_a_bound_still_counts_as_checked(checked):
    norms = norms_frame()
    norms.loc[norms.metric == "bound_bulk", "value"] = np.nan
    finding = bounds.bounds_hold(bound_tables(checked, norms=norms), SECTION)
    assert finding.value.startswith("0 of 368 above their bound (norms 0/128, ")


def test_bounds_fail_when_an_error_exceeds_its_bound(checked):
    finding = bounds.bounds_hold(
        bound_tables(checked, norms=norms_frame(bound_over_error=0.9)), SECTION
    )
    assert finding.verdict == FAILS
    assert finding.value.startswith("128 of 368 above their bound (norms 128/128")
    assert verdict_of(finding, "values above bound, norms") == FAILS
    assert verdict_of(finding, "values above bound, softmax") == HOLDS


@pytest.mark.parametrize(
    ("ratio", "spread", "expected"),
    [(90.0, 0.02, HOLDS), (100.0, 0.3, UNDECIDED), (110.0, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_norm_bounds_tightness_decided_by_its_interval(checked, ratio, spread, expected):
    norms = norms_frame(bound_over_error=ratio, spread=spread)
    finding = bounds.bounds_hold(bound_tables(checked, norms=norms), SECTION)
    term = terms(finding)["median bound/error, norms"]
    assert term.verdict == expected and finding.verdict == expected
    assert straddles(term, bounds.TIGHT) == (expected == UNDECIDED)
    assert term.estimate.point == pytest.approx(ratio, rel=0.01)


def test_tightness_resamples_the_samples_of_each_setting(checked):
    """The samples are drawn within each setting: the fewest samples of a setting (here 4 at
    the largest outlier) set the units an undecided term's need counts."""
    norms = norms_frame(spread=0.3)
    norms = norms[(norms.outlier == 0) | (norms["sample"] < 4)]
    finding = bounds.bounds_hold(bound_tables(checked, norms=norms), SECTION)
    assert terms(finding)["median bound/error, norms"].estimate.units == 4


def test_softmax_bound_loose_by_orders_of_magnitude_fails(checked):
    loose = softmax_frame(bound_over_error=1e3)
    finding = bounds.bounds_hold(bound_tables(checked, softmax=loose), SECTION)
    assert verdict_of(finding, "median bound/error, softmax") == FAILS
    assert finding.verdict == FAILS


def test_softmax_tightness_interval_from_the_samples_of_each_setting(checked):
    noisy = softmax_frame(bound_over_error=100.0, spread=0.3)
    finding = bounds.bounds_hold(bound_tables(checked, softmax=noisy), SECTION)
    term = terms(finding)["median bound/error, softmax"]
    assert term.verdict == UNDECIDED and straddles(term, 100.0)
    assert f"softmax {term.estimate.text()}" in finding.value
    assert term.deciding_need().startswith("median bound/error, softmax: about ")


def test_bounds_fail_when_attention_worst_exceeds_ball_bound(checked):
    above = lipschitz_frame(ball_bound=4.0)
    finding = bounds.bounds_hold(bound_tables(checked, lipschitz=above), SECTION)
    assert verdict_of(finding, "values above bound, attention") == FAILS
    assert "attention 8/32" in finding.value


def test_bounds_fail_when_the_random_input_estimate_exceeds_its_bound(checked):
    frame = lipschitz_frame()
    frame.loc[0, "estimate"] = 101.0  # above its bound at that input (100)
    finding = bounds.bounds_hold(bound_tables(checked, lipschitz=frame), SECTION)
    assert "attention 1/32" in finding.value and finding.verdict == FAILS


def test_bounds_fail_when_a_cast_entry_exceeds_its_bound(checked):
    frame = softmax_frame(cast_floor=1e-5)
    above = (frame.format == "fp16") & (frame.metric == "worst_entry") & (frame.p_max == 0.5)
    frame.loc[above, "measured"] = 2 * frame.loc[above, "bound"]
    finding = bounds.bounds_hold(bound_tables(checked, softmax=frame), SECTION)
    assert finding.verdict == FAILS
    assert f"softmax {SAMPLES}/" in finding.value
    frame.loc[above, "measured"] = frame.loc[above, "bound"]  # equal: within the bound
    assert bounds.bounds_hold(bound_tables(checked, softmax=frame), SECTION).verdict == HOLDS


def test_tightness_leaves_out_exact_results(checked):
    """A measured error of 0 (an exact result) has nothing to be tight against."""
    norms = norms_frame()
    exact = norms.metric.isin(["err_comp_median", "err_comp_max"])
    norms.loc[exact, "value"] = 0.0
    finding = bounds.bounds_hold(bound_tables(checked, norms=norms), SECTION)
    assert terms(finding)["median bound/error, norms"].estimate.point == 5.0


def test_propagation_rows_are_checked_but_not_tested_for_tightness(checked):
    """The propagation bound (l1 gain) is a condition number, not a rounding-error bound: it
    counts against its bound but not in the median bound/error."""
    frame = softmax_frame(spread=0.3)
    plain = bounds.bounds_hold(bound_tables(checked, softmax=frame), SECTION)
    frame.loc[frame["mode"] == "propagation", "bound"] *= 1e6
    finding = bounds.bounds_hold(bound_tables(checked, softmax=frame), SECTION)
    point = terms(finding)["median bound/error, softmax"].estimate.point
    assert point == terms(plain)["median bound/error, softmax"].estimate.point < 10


# --- N.2 --------------------------------------------------------------------------------------


def test_layernorm_worse_under_massive_outlier(checked):
    finding = norm_outlier.norms_under_outlier(
        {_common.NORMS: checked(norms_frame(), Norms)}, SECTION
    )
    assert finding.verdict == HOLDS
    assert finding.value == "M/d = 31.2; m7: bulk error LN/RMS 32.2, bulk kappa LN/RMS 1"
    named = terms(finding)
    assert list(named) == ["bulk error LN/RMS, m7", "bulk kappa LN/RMS, m7"]
    assert named["bulk error LN/RMS, m7"].criterion.text == ">= 3"
    assert named["bulk kappa LN/RMS, m7"].criterion.text == "in [0.5, 2]"
    assert named["bulk error LN/RMS, m7"].estimate.basis == "bootstrap over samples"


def test_norms_claim_reads_the_largest_outlier_per_format(checked):
    """Two formats, each its own terms; the smaller outlier (no penalty there) is not read."""
    frame = pd.concat([norms_frame(), norms_frame().assign(mantissa_bits=10)])
    frame.loc[frame.outlier == 0.0, "value"] *= 1e3
    finding = norm_outlier.norms_under_outlier({_common.NORMS: checked(frame, Norms)}, SECTION)
    assert finding.verdict == HOLDS
    assert "; m10: bulk error LN/RMS 32.2, bulk kappa LN/RMS 1" in finding.value
    assert "bulk kappa LN/RMS, m10" in terms(finding)


def test_norms_ratios_resample_the_samples_of_each_format(checked):
    frame = pd.concat([norms_frame(), norms_frame().assign(mantissa_bits=10)])
    frame = frame[(frame.mantissa_bits == 7) | (frame["sample"] < 4)]
    finding = norm_outlier.norms_under_outlier({_common.NORMS: checked(frame, Norms)}, SECTION)
    assert terms(finding)["bulk error LN/RMS, m10"].estimate.units == 4


@pytest.mark.parametrize(
    ("ln_bulk", "spread", "expected"),
    [(4.0, 0.05, HOLDS), (3.0, 0.5, UNDECIDED), (2.5, 0.05, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_layernorm_penalty_decided_by_its_interval(checked, ln_bulk, spread, expected):
    frame = norms_frame(ln_bulk=ln_bulk, spread=spread)
    finding = norm_outlier.norms_under_outlier({_common.NORMS: checked(frame, Norms)}, SECTION)
    term = terms(finding)["bulk error LN/RMS, m7"]
    assert term.verdict == expected
    assert straddles(term, norm_outlier.CLEARLY_WORSE) == (expected == UNDECIDED)


@pytest.mark.parametrize(
    ("ln_kappa", "spread", "expected"),
    [(1.8, 0.02, HOLDS), (2.0, 0.3, UNDECIDED), (2.3, 0.02, FAILS), (0.45, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail", "fail-below"],
)
def test_same_bulk_condition_decided_by_its_interval(checked, ln_kappa, spread, expected):
    frame = norms_frame(ln_kappa=ln_kappa, spread=spread)
    finding = norm_outlier.norms_under_outlier({_common.NORMS: checked(frame, Norms)}, SECTION)
    term = terms(finding)["bulk kappa LN/RMS, m7"]
    assert term.verdict == expected and finding.verdict == expected
    assert straddles(term, 2.0) == (expected == UNDECIDED)


def test_norms_claim_fails_without_layernorms_penalty(checked):
    frame = norms_frame(ln_bulk=1.0)
    finding = norm_outlier.norms_under_outlier({_common.NORMS: checked(frame, Norms)}, SECTION)
    assert finding.verdict == FAILS and "bulk error LN/RMS 1," in finding.value


def test_norms_claim_not_run_without_a_massive_outlier(checked):
    tables = {_common.NORMS: checked(norms_frame(outliers=(0.0, 319.0)), Norms)}
    assert norm_outlier.norms_under_outlier(tables, SECTION) is None
    tables = {_common.NORMS: checked(norms_frame(outliers=(0.0, 320.0)), Norms)}  # M/d = 10
    assert norm_outlier.norms_under_outlier(tables, SECTION) is not None


# --- N.3 --------------------------------------------------------------------------------------


def sink_bound(checked, frame: pd.DataFrame, rows: pd.DataFrame | None = None):
    tables = {
        _common.SOFTMAX: checked(frame, Softmax),
        _common.SINK_ROWS: checked(sink_rows_frame() if rows is None else rows, SinkSoftmax),
    }
    return softmax_evaluation.sink_bound(tables, SECTION)


def sink_finding(checked, **kwargs):
    return sink_bound(checked, softmax_frame(**kwargs))


def real_rows_finding(checked, **kwargs):
    return sink_bound(checked, softmax_frame(), sink_rows_frame(**kwargs))


def test_sink_aware_bound_falls_with_tail_mass(checked):
    finding = sink_finding(checked)
    assert finding.verdict == HOLDS
    assert finding.value == (
        "synthetic rows, m7: shifted: bound slope 1, error slope 1; unshifted: bound slope 1, "
        "error slope 1 (theory 1); median bound/error 4. trained-backcopy's own rows after "
        "training, m7: 80 rows, 1 - p_max 1e-12 .. 0.001, bound slope 1, median bound/error 3, "
        "median bound 5.5e-08 (at initialization 0.04, 1 - p_max 0.9)"
    )
    named = terms(finding)
    assert list(named) == [
        "bound slope, shifted",
        "bound slope, unshifted",
        "median bound/error",
        "real rows, bound slope, m7",
        "real rows, median bound/error, m7",
    ]
    assert named["real rows, bound slope, m7"].estimate.basis == "bootstrap over sequences"
    assert named["bound slope, shifted"].criterion.text == "in [0.8, 1.2]"
    assert named["median bound/error"].criterion.text == "<= 10"
    assert named["median bound/error"].estimate.basis == "bootstrap over samples"


@pytest.mark.parametrize(
    ("slope", "spread", "expected"),
    [(1.15, 0.02, HOLDS), (1.2, 0.3, UNDECIDED), (1.25, 0.02, FAILS), (0.75, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail", "fail-below"],
)
def test_sink_bound_slope_decided_by_its_interval(checked, slope, spread, expected):
    finding = sink_finding(checked, bound_slope=slope, spread=spread)
    for mode in ("shifted", "unshifted"):
        term = terms(finding)[f"bound slope, {mode}"]
        assert term.verdict == expected
        assert term.estimate.point == pytest.approx(slope, abs=0.01)
    assert straddles(terms(finding)["bound slope, shifted"], 1.2) == (expected == UNDECIDED)


@pytest.mark.parametrize(
    ("ratio", "spread", "expected"),
    [(9.0, 0.02, HOLDS), (10.0, 0.3, UNDECIDED), (11.0, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_sink_bound_tightness_decided_by_its_interval(checked, ratio, spread, expected):
    finding = sink_finding(checked, bound_over_error=ratio, spread=spread)
    term = terms(finding)["median bound/error"]
    assert term.verdict == expected and finding.verdict == expected
    assert straddles(term, softmax_evaluation.SINK_TIGHT) == (expected == UNDECIDED)


def test_sink_slopes_per_mode(checked):
    frame = softmax_frame()
    smallest = (
        (frame["mode"] == "unshifted") & (frame.metric == "l1_abs") & (frame.p_max == 1 - 1e-5)
    )
    frame.loc[smallest, "bound"] *= 10**0.2  # two decades: the slope falls by 0.1
    finding = sink_bound(checked, frame)
    assert terms(finding)["bound slope, shifted"].estimate.point == pytest.approx(1.0)
    assert terms(finding)["bound slope, unshifted"].estimate.point == pytest.approx(0.9)


def test_strong_sink_regime_ends_at_u(checked):
    """1 - p_max = 0.01 lies above u = 2^-8: its flat bound (the error is u/2 there) is not in
    the slope; 1 - p_max = u is."""
    finding = sink_finding(checked, p_maxes=(0.5, 0.99, 1 - 1e-3, 1 - 1e-5))
    assert terms(finding)["bound slope, shifted"].estimate.point == pytest.approx(1.0)
    assert sink_finding(checked, p_maxes=(0.5, 1 - 2.0**-8, 1 - 2.0**-12)) is not None
    assert sink_finding(checked, p_maxes=(0.5, 1 - 10 / 4096, 1 - 1 / 4096)) is not None  # 10x


def test_sink_claim_reports_the_casts_up_to_their_own_u(checked):
    """fp16's u is 2^-11: 1 - p_max = 2^-11 (bound/error 4) is reported with 1e-5 (20)."""
    finding = sink_finding(
        checked, p_maxes=(0.5, 1 - 1e-3, 1 - 2.0**-11, 1 - 1e-5), cast_floor=1e-5
    )
    assert "; torch casts, median bound/error: fp16 12. " in finding.value


def test_sink_claim_reports_every_cast(checked):
    frame = softmax_frame(cast_floor=1e-5)
    bf16 = frame[frame.format == "fp16"].assign(format="bf16", mantissa_bits=7)
    finding = sink_bound(checked, pd.concat([frame, bf16]))
    assert "; torch casts, median bound/error: bf16 12, fp16 20. " in finding.value


def test_flat_softmax_bound_fails_the_sink_claim(checked):
    finding = sink_finding(checked, sink_aware=False)
    assert verdict_of(finding, "bound slope, shifted") == FAILS
    assert terms(finding)["bound slope, shifted"].estimate.point == pytest.approx(0, abs=1e-9)
    assert "e-16, error slope 1; unshifted: bound slope " in finding.value


@pytest.mark.parametrize(
    ("slope", "spread", "expected"),
    [(1.15, 0.02, HOLDS), (1.2, 0.3, UNDECIDED), (1.25, 0.02, FAILS), (0.75, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail", "fail-below"],
)
def test_real_rows_bound_slope_decided_by_its_interval(checked, slope, spread, expected):
    finding = real_rows_finding(checked, bound_slope=slope, spread=spread)
    term = terms(finding)["real rows, bound slope, m7"]
    assert term.verdict == expected and finding.verdict == expected
    assert term.estimate.point == pytest.approx(slope, abs=0.01) and term.estimate.units == 8
    assert straddles(term, 1.2) == (expected == UNDECIDED)


@pytest.mark.parametrize(
    ("ratio", "spread", "expected"),
    [(9.0, 0.02, HOLDS), (10.0, 0.3, UNDECIDED), (11.0, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_real_rows_tightness_decided_by_its_interval(checked, ratio, spread, expected):
    finding = real_rows_finding(checked, bound_over_error=ratio, spread=spread)
    term = terms(finding)["real rows, median bound/error, m7"]
    assert term.verdict == expected
    assert straddles(term, 10.0) == (expected == UNDECIDED)


def test_a_flat_bound_on_real_rows_fails_the_sink_claim(checked):
    finding = real_rows_finding(checked, bound_slope=0.0)
    assert verdict_of(finding, "real rows, bound slope, m7") == FAILS
    assert finding.verdict == FAILS


def test_real_rows_are_the_trained_sink_rows_below_u(checked):
    """Rows above u = 2^-8 (a flat bound there), rows without a tail (no error to bound) and
    the initialization's rows, even below u, stay out of the slope; rows at u itself count; a
    second emulated format is a term of its own."""
    rows = sink_rows_frame()
    trained = rows[rows.step == 1500].iloc[:8]
    above = trained.assign(tail_mass=0.01, bound=0.5, query=99)
    at_u = trained.assign(tail_mass=2.0**-8, bound=2.0**-8, measured=2.0**-8 / 3, query=98)
    no_tail = trained.assign(tail_mass=0.0, bound=1e-20, measured=0.0, query=97)
    early = rows[rows.step == 1500].assign(step=0, bound=1.0)
    m10 = rows.assign(format="m10", mantissa_bits=10)
    m10 = m10[m10.tail_mass <= 2.0**-11]
    frame = pd.concat([rows, above, at_u, no_tail, early, m10])
    finding = sink_bound(checked, softmax_frame(), frame)
    named = terms(finding)
    assert named["real rows, bound slope, m7"].estimate.point == pytest.approx(1.0)
    assert named["real rows, bound slope, m10"].estimate.point == pytest.approx(1.0)
    assert "m7: 88 rows" in finding.value and "; m10: 72 rows" in finding.value


def test_real_rows_need_two_decades_of_sink_tails(checked):
    finding = real_rows_finding(checked, tails=(1e-5, 3e-5, 9e-5))
    assert not any(name.startswith("real rows") for name in terms(finding))
    assert finding.value.endswith("own rows after training, m7: no sink rows spanning 2 decades")
    finding = real_rows_finding(checked, tails=(1e-5, 1e-4, 1e-3))
    assert "real rows, bound slope, m7" in terms(finding)
    narrow = sink_rows_frame(tails=(1e-5, 3e-5, 9e-5))
    wide = sink_rows_frame(tails=(1e-9, 1e-7, 1e-5)).assign(format="m10", mantissa_bits=10)
    finding = sink_bound(checked, softmax_frame(), pd.concat([narrow, wide]))
    named = terms(finding)
    assert "real rows, bound slope, m10" in named and "real rows, bound slope, m7" not in named


def _row_statistics(rows: pd.DataFrame) -> tuple[float, float]:
    """The real-row statistics written out: least-squares slope of log bound on log tail mass,
    median bound/error over the rows with an error."""
    slope = np.polyfit(np.log(rows.tail_mass), np.log(rows.bound), 1)[0]
    some = rows[rows.measured > 0]
    return slope, float(np.median(some.bound / some.measured))


def test_real_row_intervals_are_the_bootstrap_over_sequences_written_out():
    """The fast estimate equals resampling the sequences by copying their rows: the same
    draws (seed 0, sequences in sorted order), a sequence's rows kept together, rows without
    an error left out of the ratio only, uneven rows per sequence."""
    rng = np.random.default_rng(3)
    frames = []
    for sequence, size in zip((9, 0, 4, 2, 7, 5), (3, 8, 5, 12, 6, 4), strict=True):
        tail = 10.0 ** rng.uniform(-12, -3, size)
        bound = tail ** rng.uniform(0.8, 1.3) * rng.lognormal(0, 0.3, size)
        measured = bound / rng.uniform(1.5, 6, size) * (rng.uniform(size=size) > 0.2)
        frames.append(
            pd.DataFrame(
                {"sequence": sequence, "tail_mass": tail, "bound": bound, "measured": measured}
            )
        )
    rows = pd.concat(frames, ignore_index=True).sample(frac=1, random_state=0)
    found = softmax_evaluation._real_row_estimates(rows)
    labels = sorted(rows.sequence.unique())
    drawn = np.random.default_rng(0).integers(0, 6, size=(verdicts.RESAMPLES, 6))
    draws = np.array(
        [
            _row_statistics(pd.concat([rows[rows.sequence == labels[i]] for i in draw]))
            for draw in drawn
        ]
    )
    lows, highs = percentile_bounds(draws)
    for column, name in enumerate(("bound slope", "median bound/error")):
        estimate = found[name]
        expected = (_row_statistics(rows)[column], lows[column], highs[column])
        assert (estimate.point, estimate.lo, estimate.hi) == pytest.approx(expected, rel=1e-9)
        assert (estimate.units, estimate.unit) == (6, "sequences")


def test_sink_claim_not_run_without_strong_sinks(checked):
    assert sink_finding(checked, p_maxes=(0.5, 0.99)) is None  # 1 - p_max > u everywhere
    assert sink_finding(checked, p_maxes=(0.5, 1 - 1e-3, 1 - 1.1e-4)) is None  # not a decade
    assert sink_finding(checked, p_maxes=(0.5, 1 - 1e-3, 1 - 1e-4)) is not None
    assert sink_finding(checked, p_maxes=(0.5, 1 - 1e-3, 1.0)) is None  # no tail: no error
    # 1 - p_max = 3e-3 lies below u = 2^-8 (3.9e-3), not below 2^-9
    assert sink_finding(checked, p_maxes=(0.5, 1 - 3e-3, 1 - 2.9e-4)) is not None


def test_sink_claim_tests_the_emulated_format_and_reports_the_casts(checked):
    finding = sink_finding(checked, cast_floor=1e-5)  # a floor: the fp16 bound does not fall
    assert finding.verdict == HOLDS
    assert finding.value.startswith("synthetic rows, m7: ")
    assert "; torch casts, median bound/error: fp16 20. " in finding.value


# --- N.4 --------------------------------------------------------------------------------------


def shift_finding(checked, **kwargs):
    frame = softmax_frame(**kwargs)
    return softmax_evaluation.shifted_evaluation(
        {_common.SOFTMAX: checked(frame, Softmax)}, SECTION
    )


def test_unshifted_error_follows_its_condition(checked):
    finding = shift_finding(checked)
    assert finding.verdict == HOLDS
    assert finding.value == (
        "offset 0 -> 30: unshifted kappa x13, error grows as kappa^1 (theory 1); shifted "
        "error x1, kappa x1"
    )
    named = terms(finding)
    assert list(named) == ["error exponent, unshifted", "error growth, shifted"]
    assert named["error growth, shifted"].estimate.basis == "bootstrap over samples"
    assert named["error exponent, unshifted"].criterion.text == ">= 0.5"
    assert named["error growth, shifted"].criterion.text == "<= 2"


@pytest.mark.parametrize(
    ("exponent", "spread", "expected"),
    [(0.6, 0.02, HOLDS), (0.5, 0.3, UNDECIDED), (0.4, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_unshifted_exponent_decided_by_its_interval(checked, exponent, spread, expected):
    term = terms(shift_finding(checked, error_exponent=exponent, spread=spread))[
        "error exponent, unshifted"
    ]
    assert term.verdict == expected
    assert term.estimate.point == pytest.approx(exponent, abs=0.02)
    assert straddles(term, 0.5) == (expected == UNDECIDED)


@pytest.mark.parametrize(
    ("growth", "spread", "expected"),
    [(1.8, 0.02, HOLDS), (2.0, 0.3, UNDECIDED), (2.2, 0.02, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_shifted_growth_decided_by_its_interval(checked, growth, spread, expected):
    finding = shift_finding(checked, shifted_growth=growth, spread=spread)
    term = terms(finding)["error growth, shifted"]
    assert term.verdict == expected
    assert straddles(term, _common.FACTOR) == (expected == UNDECIDED)


def test_shift_claim_from_the_smallest_to_the_largest_offset(checked):
    finding = shift_finding(checked, offsets=(0.0, 10.0, 30.0))
    assert finding.value.startswith("offset 0 -> 30: unshifted kappa x13, ")


def test_shift_claim_undefined_exponents_without_warnings(checked):
    """An unshifted error exact at both ends (0/0) leaves the exponent undecided (NaN); exact
    at the largest offset only (log 0) makes it -inf; neither warns."""
    frame = softmax_frame()
    unshifted = (frame.sweep == "offset") & (frame["mode"] == "unshifted")
    frame.loc[unshifted & (frame.metric != "kappa_max"), "measured"] = 0.0
    both = {_common.SOFTMAX: checked(frame, Softmax)}
    frame = softmax_frame()
    frame.loc[unshifted & (frame.metric == "max_rel") & (frame.offset == 30), "measured"] = 0.0
    largest = {_common.SOFTMAX: checked(frame, Softmax)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        undefined = softmax_evaluation.shifted_evaluation(both, SECTION)
        falls = softmax_evaluation.shifted_evaluation(largest, SECTION)
    assert verdict_of(undefined, "error exponent, unshifted") == UNDECIDED
    assert terms(falls)["error exponent, unshifted"].estimate.point == -np.inf


def test_shift_claim_fails_when_unshifted_error_ignores_the_offset(checked):
    finding = shift_finding(checked, error_exponent=0.0)
    assert finding.verdict == FAILS and "kappa^0 " in finding.value


def test_shift_claim_not_run_without_a_sensitivity_range(checked):
    assert shift_finding(checked, offsets=(0.0, 1.0)) is None  # kappa 5 -> 7
    assert shift_finding(checked, offsets=(0.0,)) is None
    assert shift_finding(checked, offsets=(0.0, 7.4)) is None  # kappa x 3.96
    assert shift_finding(checked, offsets=(0.0, 7.5)) is not None  # kappa x 4


# --- N.5 --------------------------------------------------------------------------------------


def lipschitz_finding(checked, frame):
    return bounds.length_free_lipschitz({_common.LIPSCHITZ: checked(frame, Lipschitz)}, SECTION)


def test_length_free_lipschitz_bound(checked):
    finding = lipschitz_finding(checked, lipschitz_frame())
    assert finding.verdict == HOLDS
    assert finding.value.startswith("slope of found/bound vs n per draw: ")
    assert finding.value.endswith(
        " (2 draws, n = 4..256); bound/found over the draws: n=4 20-24, n=16 20-24, n=64 "
        "20-24, n=256 20-24; 0 of 32 above their bound; Euclidean bound slope 0.5 (sqrt n: 0.5)"
    )
    named = terms(finding)
    assert list(named) == [
        "values above bound",
        "slope found/bound vs n, draw 0",
        "slope found/bound vs n, draw 1",
    ]
    slope = named["slope found/bound vs n, draw 0"]
    assert slope.criterion.text == "< 0.25"
    assert slope.estimate.lo == slope.estimate.hi == slope.estimate.point
    assert slope.estimate.basis.startswith("exact for this draw")


def test_lipschitz_claim_fails_when_the_constant_grows_as_sqrt_n(checked):
    finding = lipschitz_finding(checked, lipschitz_frame(growth=0.5))
    assert finding.verdict == FAILS
    assert verdict_of(finding, "slope found/bound vs n, draw 1") == FAILS


@pytest.mark.parametrize(("growth", "expected"), [(0.24, HOLDS), (0.25, FAILS)])
def test_lipschitz_slope_criterion_is_strictly_below(checked, growth, expected):
    finding = lipschitz_finding(checked, lipschitz_frame(growth=growth))
    assert verdict_of(finding, "slope found/bound vs n, draw 0") == expected


def test_lipschitz_claim_fails_when_one_draw_grows(checked):
    frame = lipschitz_frame()
    grows = (frame.draw == 1) & (frame.norm == "inf")
    frame.loc[grows, "worst"] = 5.0 * np.sqrt(frame.seq_len[grows] / 4)
    finding = lipschitz_finding(checked, frame)
    assert finding.verdict == FAILS
    assert verdict_of(finding, "slope found/bound vs n, draw 0") == HOLDS
    assert verdict_of(finding, "slope found/bound vs n, draw 1") == FAILS
    assert "to 0.5 (2 draws" in finding.value


def test_lipschitz_found_is_the_larger_of_estimate_and_worst(checked):
    """Where the ascent found less than the random input's exact value, the latter counts;
    where it did not search (NaN), the estimate alone."""
    frame = lipschitz_frame()
    inf = frame.norm == "inf"
    frame.loc[inf & (frame.draw == 1), "estimate"] = 6.0 * frame.seq_len / 4
    frame.loc[inf & (frame.draw == 1), "bound"] = 1e4
    frame.loc[inf & (frame.draw == 0), "worst"] = np.nan
    finding = lipschitz_finding(checked, frame)
    assert terms(finding)["slope found/bound vs n, draw 1"].estimate.point == pytest.approx(1)
    assert terms(finding)["slope found/bound vs n, draw 0"].estimate.point == pytest.approx(0)
    assert "n=4 20-40" in finding.value


def test_lipschitz_claim_fails_when_a_found_constant_exceeds_the_bound(checked):
    frame = lipschitz_frame()
    frame.loc[(frame.draw == 0) & (frame.seq_len == 16) & (frame.norm == "inf"), "worst"] = 130.0
    finding = lipschitz_finding(checked, frame)
    assert verdict_of(finding, "values above bound") == FAILS
    assert "1 of 32 above their bound" in finding.value


def test_lipschitz_claim_not_run_on_lengths_spanning_less_than_4x(checked):
    assert lipschitz_finding(checked, lipschitz_frame(seq_lens=(16,))) is None
    assert lipschitz_finding(checked, lipschitz_frame(seq_lens=(16, 63))) is None
    assert lipschitz_finding(checked, lipschitz_frame(seq_lens=(16, 64))) is not None
    assert lipschitz_finding(checked, lipschitz_frame(seq_lens=(16, 32, 64))) is not None


def test_lipschitz_slope_is_of_found_over_bound(checked):
    """A bound that grows with n as what was found does: found/bound is flat."""
    frame = lipschitz_frame()
    growth = (frame.seq_len / 4) ** 0.3
    frame["worst"] *= growth
    frame["ball_bound"] *= growth
    finding = lipschitz_finding(checked, frame)
    assert terms(finding)["slope found/bound vs n, draw 0"].estimate.point == pytest.approx(0)


# --- GPT-2: N.6, N.7 --------------------------------------------------------------------------


def test_stream_regimes():
    regimes = gpt2_regimes.stream_regimes(errors_frame()).set_index("alpha")
    assert list(regimes.regime) == ["embedding", "residual", "residual"]
    assert list(regimes["share"]) == pytest.approx([103 / 3.01, 4 / 3.01, 1])


def test_stream_regimes_at_the_thresholds():
    """share <= 2: residual; >= 10: embedding; between: transition."""
    frame = errors_frame()
    share = {0.01: 10.0, 1.0: 2.0, 100.0: 1.0}
    streams = frame.metric == "stream_median_l2"
    for alpha, s in share.items():
        at = streams & (frame.alpha == alpha)
        frame.loc[at, "p50"] = s * alpha
    assert list(gpt2_regimes.stream_regimes(frame).regime) == ["embedding", "residual", "residual"]
    frame.loc[streams & (frame.alpha == 0.01), "p50"] = 9.9 * 0.01
    frame.loc[streams & (frame.alpha == 1.0), "p50"] = 2.1
    assert list(gpt2_regimes.stream_regimes(frame).regime) == [
        "transition",
        "transition",
        "residual",
    ]


def test_stream_regimes_at_each_models_own_last_add():
    deeper = errors_frame().assign(model="random-gpt2-deep")
    deeper["checkpoint"] += 2
    regimes = gpt2_regimes.stream_regimes(pd.concat([errors_frame(), deeper]))
    assert regimes.groupby("model").regime.apply(list).to_dict() == dict.fromkeys(
        ["random-gpt2", "random-gpt2-deep"], ["embedding", "residual", "residual"]
    )


def test_recursion_amplification_collapses(checked):
    finding = worst_case.worst_case_recursion(gpt2_tables(checked), SECTION)
    assert finding.verdict == HOLDS
    assert finding.value == (
        "0 of 20 adds above the bound; amplification at the last attn/mlp add: max/min over "
        "residual-dominated alpha (1, 100) at most 1.33 (random-gpt2 m10 attn); "
        "embedding-dominated alpha (0.01): 0.0334-0.0334x the plateau; bound/measured at the "
        "first add, per source: 1e+03-1e+03; typical/measured at every add: per source 3-3 "
        "(random-gpt2 3-3), test formats 5-5"
    )
    named = terms(finding)
    assert list(named) == [
        "adds above the bound",
        "amplification max/min, random-gpt2 m10 attn",
        "amplification max/min, random-gpt2 m10 mlp",
        "amplification off/plateau, random-gpt2 m10 attn",
        "amplification off/plateau, random-gpt2 m10 mlp",
        "typical/measured per source, lowest",
        "typical/measured per source, highest",
    ]
    assert all(t.estimate.basis == gpt2_regimes.GPT2_EXACT for t in finding.terms)
    criteria = [t.criterion.text for t in finding.terms]
    assert criteria == ["<= 0", "<= 2", "<= 2", "<= 0.5", "<= 0.5", ">= 0.1", "<= 10"]


@pytest.mark.parametrize(
    "recursion",
    [recursion_frame(collapses=False), recursion_frame(violated=True)],
    ids=["grows-with-alpha", "violated"],
)
def test_recursion_claim_fails_on_contradicting_data(checked, recursion):
    tables = gpt2_tables(checked, recursion=recursion)
    assert worst_case.worst_case_recursion(tables, SECTION).verdict == FAILS


def test_recursion_violation_counted_in_relative_terms_too(checked):
    recursion = recursion_frame()
    recursion.loc[3, "measured_rel"] = 2 * recursion.loc[3, "bound_rel"]
    finding = worst_case.worst_case_recursion(gpt2_tables(checked, recursion=recursion), SECTION)
    assert verdict_of(finding, "adds above the bound") == FAILS
    assert finding.value.startswith("1 of 20 adds")


@pytest.mark.parametrize(("fall", "expected"), [(0.49, HOLDS), (0.51, FAILS)])
def test_recursion_amplification_must_fall_2x_off_the_plateau(checked, fall, expected):
    finding = worst_case.worst_case_recursion(
        gpt2_tables(checked, recursion=recursion_frame(fall=fall)), SECTION
    )
    term = terms(finding)["amplification off/plateau, random-gpt2 m10 mlp"]
    assert term.verdict == expected == finding.verdict
    assert term.estimate.point == pytest.approx(fall)


@pytest.mark.parametrize(
    "sources",
    [sources_frame(typical=11.0), sources_frame(typical=0.09), sources_frame(violated=True)],
    ids=["typical-too-high", "typical-too-low", "source-above-its-bound"],
)
def test_recursion_claim_fails_on_contradicting_sources(checked, sources):
    tables = gpt2_tables(checked, sources=sources)
    assert worst_case.worst_case_recursion(tables, SECTION).verdict == FAILS


def test_recursion_bound_met_with_equality_is_not_violated(checked):
    sources = sources_frame()
    sources.loc[3, "bound"] = sources.loc[3, "measured"]
    sources.loc[5, "bound_rel"] = sources.loc[5, "measured_rel"]
    finding = worst_case.worst_case_recursion(gpt2_tables(checked, sources=sources), SECTION)
    assert finding.verdict == HOLDS and finding.value.startswith("0 of 20 adds")


def test_recursion_amplification_read_at_the_last_adds(checked):
    """The earlier adds' amplification (here growing with alpha) is not tested."""
    recursion = recursion_frame()
    early = recursion.checkpoint <= 2
    recursion.loc[early, "amplification"] = 1e3 * recursion.loc[early, "alpha"]
    finding = worst_case.worst_case_recursion(gpt2_tables(checked, recursion=recursion), SECTION)
    assert finding.verdict == HOLDS


def test_recursion_reports_ranges_per_source_model_and_format(checked):
    other = sources_frame(typical=4.0, first_bound=2e3).assign(model="random-b")
    recursion = recursion_frame()
    recursion.loc[recursion.alpha == 100, "typical_rel_l2"] *= 8 / 5
    tables = gpt2_tables(checked, recursion=recursion, sources=pd.concat([sources_frame(), other]))
    finding = worst_case.worst_case_recursion(tables, SECTION)
    assert "; bound/measured at the first add, per source: 1e+03-2e+03; " in finding.value
    assert finding.value.endswith(
        "typical/measured at every add: per source 3-4 (random-b 4-4, random-gpt2 3-3), test "
        "formats 5-8"
    )
    assert "embedding-dominated alpha (0.01): 0.0334-0.0334x the plateau" in finding.value
    assert terms(finding)["typical/measured per source, lowest"].estimate.point == 3.0
    assert terms(finding)["typical/measured per source, highest"].estimate.point == 4.0


def test_typical_ratio_leaves_out_exact_results(checked):
    sources = sources_frame()
    sources.loc[0, ["measured_rel_l2", "typical_rel_l2"]] = [0.0, 1.0]
    finding = worst_case.worst_case_recursion(gpt2_tables(checked, sources=sources), SECTION)
    assert finding.verdict == HOLDS and "per source 3-3" in finding.value


@pytest.mark.parametrize(("typical", "expected"), [(10.0, HOLDS), (0.1, HOLDS), (9.5, HOLDS)])
def test_typical_estimate_window_is_closed(checked, typical, expected):
    tables = gpt2_tables(checked, sources=sources_frame(typical))
    assert worst_case.worst_case_recursion(tables, SECTION).verdict == expected


def test_relative_error_preserved_across_residual_dominated_alpha(checked):
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked), SECTION)
    assert finding.verdict == HOLDS
    assert finding.value == (
        "median rel_linf at the last add: max/min over residual-dominated alpha (1, 100) at "
        "most 1 (random-gpt2 m10); embedding-dominated alpha (0.01): random-gpt2 m10 0.1x the "
        "plateau"
    )
    named = terms(finding)
    assert list(named) == [
        "rel_linf max/min, random-gpt2 m10",
        "rel_linf departure from plateau, random-gpt2 m10",
    ]
    assert named["rel_linf departure from plateau, random-gpt2 m10"].estimate.point == 10.0
    assert named["rel_linf departure from plateau, random-gpt2 m10"].criterion.text == ">= 2"
    assert named["rel_linf max/min, random-gpt2 m10"].estimate.basis == gpt2_regimes.GPT2_EXACT


@pytest.mark.parametrize(
    ("spread", "flipped", "expected"),
    [(2.0, 0.1, HOLDS), (2.01, 0.1, FAILS), (1.0, 0.5, HOLDS), (1.0, 0.51, FAILS)]
    + [(1.0, 2.0, HOLDS), (1.0, 1.99, FAILS), (1.0, 5.0, HOLDS)],
)
def test_alpha_claim_at_its_thresholds(checked, spread, flipped, expected):
    """Within a factor 2 on the plateau; off it by 2x or more, downwards or upwards."""
    errors = errors_frame(plateau_spread=spread, flipped_error=flipped)
    assert (
        gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).verdict
        == expected
    )


@pytest.mark.parametrize(
    "errors",
    [errors_frame(plateau_spread=10.0), errors_frame(flipped_error=1.0)],
    ids=["not-preserved", "no-flip"],
)
def test_alpha_claim_fails_on_contradicting_data(checked, errors):
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.verdict == FAILS


def test_alpha_claim_lists_every_embedding_dominated_alpha(checked):
    errors = errors_frame()
    deeper = errors[errors.alpha == 0.01].assign(alpha=0.001)
    deeper.loc[deeper.metric == "stream_median_l2", ["p01", "p25", "p50", "p75", "p99"]] = 1.003
    deeper.loc[deeper.metric == "rel_linf", ["p01", "p25", "p50", "p75", "p99"]] *= 3
    errors = pd.concat([errors, deeper])
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.value.endswith("(0.001, 0.01): random-gpt2 m10 0.1/0.3x the plateau")
    assert terms(finding)["rel_linf departure from plateau, random-gpt2 m10"].estimate.point == (
        pytest.approx(1 / 0.3)
    )


def test_alpha_claim_skips_a_group_without_two_residual_dominated_alphas(checked):
    bf16 = errors_frame(precision="bf16")
    at_one = (bf16.metric == "stream_median_l2") & (bf16.alpha == 1.0)
    bf16.loc[at_one, ["p01", "p25", "p50", "p75", "p99"]] = 10.0  # share 3.3: a transition
    errors = pd.concat([bf16, errors_frame()])
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert [t for t in terms(finding) if "max/min" in t] == ["rel_linf max/min, random-gpt2 m10"]


def test_alpha_claim_leaves_a_stream_rounding_format_untested_after_the_flip(checked):
    """bf16 rounds the stream itself at its u: its error may stay on the plateau at small alpha
    (reported); its plateau is still tested."""
    errors = pd.concat(
        [errors_frame(), errors_frame(flipped_error=1.0, precision="bf16")], ignore_index=True
    )
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.verdict == HOLDS
    assert "random-gpt2 bf16 1, random-gpt2 m10 0.1x the plateau" in finding.value
    assert "rel_linf departure from plateau, random-gpt2 bf16" not in terms(finding)
    assert "rel_linf max/min, random-gpt2 bf16" in terms(finding)
    errors = pd.concat(
        [errors_frame(), errors_frame(plateau_spread=10.0, precision="bf16")], ignore_index=True
    )
    finding = gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.verdict == FAILS
    assert "at most 10 (random-gpt2 bf16)" in finding.value


def test_gpt2_claims_not_run_with_one_residual_dominated_alpha(checked):
    errors = errors_frame()
    errors = errors[errors.alpha < 100]
    recursion = recursion_frame()
    tables = gpt2_tables(checked, errors, recursion[recursion.alpha < 100])
    assert gpt2_errors.alpha_invariance(tables, SECTION) is None
    assert worst_case.worst_case_recursion(tables, SECTION) is None


def test_gpt2_claims_without_an_embedding_dominated_alpha(checked):
    errors = errors_frame()
    recursion = recursion_frame()
    tables = gpt2_tables(checked, errors[errors.alpha > 0.1], recursion[recursion.alpha > 0.1])
    finding = gpt2_errors.alpha_invariance(tables, SECTION)
    assert finding.verdict == HOLDS and finding.value.endswith("alpha (): none")
    assert len(finding.terms) == 1
    finding = worst_case.worst_case_recursion(tables, SECTION)
    assert finding.verdict == HOLDS and "off/plateau" not in " ".join(terms(finding))


def _trained(errors: pd.DataFrame) -> pd.DataFrame:
    return errors.assign(weights="trained", model="trained-small")


def test_trained_alpha_claim_tests_the_trained_rows_alone(checked):
    """N.8 is N.7 on the trained model's rows: a random model's contradicting rows beside it do
    not change its verdict, the trained model's own do."""
    errors = pd.concat([_trained(errors_frame()), errors_frame(plateau_spread=10.0)])
    finding = gpt2_errors.trained_alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.verdict == HOLDS and "random-gpt2" not in finding.value
    assert "trained-small m10" in finding.value
    assert (
        gpt2_errors.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).verdict == FAILS
    )
    errors = pd.concat([_trained(errors_frame(flipped_error=1.0)), errors_frame()])
    finding = gpt2_errors.trained_alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.verdict == FAILS


def test_trained_alpha_claim_not_run_without_a_trained_model(checked):
    assert gpt2_errors.trained_alpha_invariance(gpt2_tables(checked), SECTION) is None


# --- N.9 --------------------------------------------------------------------------------------


def sinks_frame(text_p_max: float = 0.6, first_token: float = 0.01) -> pd.DataFrame:
    """The GPT-2 models' heads (N9's table): one text-trained head concentrated at
    `text_p_max` with `first_token` on the first token, every other head spread."""
    rows = []
    for weights, model in (("random", "random-gpt2"), ("trained", "trained-small")):
        for head in range(4):
            top = text_p_max if (weights, head) == ("trained", 2) else 0.02
            for statistic, value in (("p_max", top), ("first_token", first_token)):
                quantiles = dict.fromkeys(("p01", "p25", "p50", "p75", "p99", "mean"), value)
                rows.append(
                    {"weights": weights, "model": model, "block": 0, "head": head}
                    | {"statistic": statistic}
                    | quantiles
                )
    return pd.DataFrame(rows)


SINK_HEAD = (1, 0)  # (block, head) of the sink in `emergence_frame`


def emergence_frame(
    trained: float = 0.95,
    initial: float = 0.03,
    tail: float = 1e-5,
    spread: float = 0.0,
    sequences: int = 8,
) -> pd.DataFrame:
    """2 blocks x 2 heads at steps 0, 100 and 400 over `sequences` held-out sequences: at
    step 0 every head's first-token weight is `initial` and its tail mass 0.9; after training
    the sink head (SINK_HEAD) puts `trained` on the first token with tail mass `tail`, the
    others 0.05 with tail mass 0.5 (an even smaller 1e-9 for head (0, 1): concentrated, not on
    the first token); `spread` is each sequence's noise on the sink head's weight."""
    rows = []
    for step in (0, 100, 400):
        for block, head, sequence in itertools.product(range(2), range(2), range(sequences)):
            first, mass = initial, 0.9
            if step == 400:
                sink = (block, head) == SINK_HEAD
                first = min(1.0, trained * noise(spread, sequence)) if sink else 0.05
                mass = tail if sink else (1e-9 if (block, head) == (0, 1) else 0.5)
            rows.append(
                {"model": "trained-backcopy", "step": step, "block": block, "head": head}
                | {"sequence": sequence, "first_token": first, "tail_mass": mass}
            )
    return pd.DataFrame(rows)


def sink_claim(checked, emergence=None, heads=None):
    tables = {
        _common.EMERGENCE: checked(
            emergence_frame() if emergence is None else emergence, SinkEmergence
        ),
        _common.SINKS: checked(sinks_frame() if heads is None else heads, AttentionSinks),
    }
    return sinks.attention_sinks(tables, SECTION)


@pytest.mark.parametrize(
    ("trained", "initial", "tail", "verdict"),
    [
        (0.95, 0.03, 1e-5, HOLDS),
        (0.3, 0.03, 1e-5, FAILS),  # concentrated, but not on the first token
        (0.95, 0.7, 1e-5, FAILS),  # a sink before any training
        (0.95, 0.03, 0.2, FAILS),  # on the first token, but the tail fell only 4.5-fold
    ],
)
def test_sink_claim_needs_a_sink_after_training_none_before_and_a_falling_tail(
    checked, trained, initial, tail, verdict
):
    finding = sink_claim(checked, emergence_frame(trained, initial, tail))
    assert finding.verdict == verdict
    named = terms(finding)
    assert list(named) == [
        "largest first-token weight, trained",
        "largest first-token weight, initialization",
        "sink head's tail mass, initialization / trained",
    ]
    assert named["largest first-token weight, trained"].estimate.point == pytest.approx(
        max(trained, 0.05)
    )
    assert named["largest first-token weight, initialization"].estimate.point == pytest.approx(
        initial
    )
    fall = named["sink head's tail mass, initialization / trained"]
    assert fall.estimate.point == pytest.approx(0.9 / tail) if trained > 0.05 else True
    assert named["largest first-token weight, trained"].criterion.text == ">= 0.5"
    assert named["largest first-token weight, initialization"].criterion.text == "< 0.5"


def test_the_sink_head_is_the_trained_model_s_largest_first_token_weight(checked):
    """Head (0, 1) has the smallest tail, but attends elsewhere: the fall is the sink's."""
    fall = terms(sink_claim(checked))["sink head's tail mass, initialization / trained"]
    assert fall.estimate.point == pytest.approx(0.9 / 1e-5)


@pytest.mark.parametrize(
    ("trained", "spread", "expected"),
    [(0.62, 0.05, HOLDS), (0.52, 0.3, UNDECIDED), (0.4, 0.05, FAILS)],
    ids=["narrow-pass", "straddle", "narrow-fail"],
)
def test_sink_weight_decided_by_its_interval_over_sequences(checked, trained, spread, expected):
    finding = sink_claim(checked, emergence_frame(trained, spread=spread))
    term = terms(finding)["largest first-token weight, trained"]
    assert term.verdict == expected
    assert straddles(term, 0.5) == (expected == UNDECIDED)
    assert (term.estimate.basis, term.estimate.units) == ("bootstrap over sequences", 8)


def test_sink_claim_compares_the_last_checkpoint_with_step_0(checked):
    frame = emergence_frame()
    middle = (frame.step == 100) & (frame.block == 0) & (frame["head"] == 0)
    frame.loc[middle, "first_token"] = 0.99  # a transient sink, gone by the last step
    assert sink_claim(checked, frame).value == sink_claim(checked).value


def test_sink_claim_reports_the_text_model_s_concentrated_heads_with_their_first_token(checked):
    finding = sink_claim(checked, heads=sinks_frame(0.6, 0.01))
    for part in (
        "trained-backcopy, step 400: largest first-token weight 0.95",
        "(step 0: 0.03), 1 of 4 heads at >= 0.5; sink head's tail mass fell 9e+04",
        "-fold to 1e-05",
        "(bf16's 2^-8: 0.00391); ",
    ):
        assert part in finding.value
    assert finding.value.endswith(
        "random-gpt2: 0 of 4 heads with median p_max >= 0.5; trained-small: 1 of 4 heads with "
        "median p_max >= 0.5 (first-token weight 0.01)"
    )


# --- the tiny run -----------------------------------------------------------------------------


def evaluate_on(results: Path) -> dict[str, dict]:
    """Study N's claim rows on a results tree, its tables read through their models."""
    config = yaml.safe_load((results / "config.yaml").read_text())
    paths = {p for spec in CLAIMS for p in spec.tables}
    tables = {p: read_table(results / p, table_model(p), config) for p in paths}
    rows, _ = claims_tables(findings(CLAIMS, tables, config["numerics"]))
    return {row["claim"]: row for row in rows.to_dict("records")}


@pytest.mark.slow
def test_claims_on_the_tiny_run(tiny_run):
    """Every claim the tiny preset measures gets a verdict, a value and its intervals; N.3
    needs sinks with 1 - p_max <= u, which the tiny preset (p_max <= 0.99 at 7 bits) does not
    draw."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    rows = evaluate_on(tiny_run.workdir / "results")
    assert list(rows) == [spec.id for spec in CLAIMS]
    assert rows["N.3"]["verdict"] == NOT_RUN
    for claim, row in rows.items():
        if claim != "N.3":
            assert row["verdict"] != NOT_RUN and row["value"] and row["intervals"], row


def test_docs_list_every_claim_with_its_figure():
    """docs/numerics.md's Claims table: one row per claim, in order, with the figure code."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "numerics.md").read_text()
    rows = re.findall(r"^\| (N\.\d) \| .* \| ([^|]+) \|$", text, re.MULTILINE)
    assert rows == [(spec.id, spec.figure) for spec in CLAIMS]
