"""Study C's claims (counting/claims/) on hand-made tables that satisfy each claim, that
contradict it, and that lack what it needs; and on the tiny run's tables."""

import functools
import itertools
import math
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT

from transformer_stability import verdicts
from transformer_stability.claims import NOT_RUN, VERDICTS, claims_tables, findings
from transformer_stability.counting.claims import CLAIMS
from transformer_stability.counting.claims._common import (
    LAWS,
    MIN_FIT_POINTS,
    PRECISION,
    RATES,
    RESIDUAL,
    THEORY,
    TRAINING,
    WALLS,
)
from transformer_stability.counting.claims.growth_laws import LAW_SETTINGS, SOURCES
from transformer_stability.counting.claims.trained_split import (
    TRAINED,
    _floored,
    _quorum_terms,
    _step_need,
)
from transformer_stability.counting.derived_tables import REGRESSION_RATE_PLACEMENTS
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.slopes import (
    Bracket,
    bmin_bracket,
    slope_range,
    slope_weights,
    weighted_slope,
)
from transformer_stability.counting.tables import (
    QUORUM,
    BminTheory,
    Precision,
    Rates,
    Residual,
    Training,
    Walls,
)
from transformer_stability.counting.theory import error_exponent, predicted_exponent
from transformer_stability.io import read_table
from transformer_stability.provenance import with_provenance
from transformer_stability.registry import evaluate_claims, table_model
from transformer_stability.tables import columns_of, table_problems, table_schema

D, WALL = 8, 34
LENGTHS = (8, 16, 32, 64, 128)
SECTION = {"theory": {"fit_points": 3}}
TRAINED_LENGTHS = (8, 16, 32, 64)


def _table(rows: list[dict], model) -> pd.DataFrame:
    """A table of `model` from `rows`, checked as the pipeline checks it."""
    frame = pd.DataFrame(rows, columns=columns_of(model))
    stamped = with_provenance(frame, seed=0, device="cpu", dtype="float64")
    assert table_problems(stamped, table_schema(model)) == []
    return frame


def _law(placement: str, length: int, wall: int = WALL) -> float:
    """A lower bound that follows the predicted law (bare pre-norm: L^2 up to the wall)."""
    if placement == "pre_bare":
        return 0.1 * length**2 if length <= wall else math.inf
    return 0.5 * length ** predicted_exponent(placement, "regression")


def _theory(
    lengths=LENGTHS,
    law=_law,
    linear=lambda length: math.sqrt(2),
    classified=1.0,
    gap=lambda placement, length: 1.3,
):
    """bmin_theory.csv: softmax regression bounds and constructions (`gap` x) per placement,
    unit-norm classification constructions, the linear construction."""
    base = {"attention": "softmax", "d": D}
    rows = []
    for p in PLACEMENTS:
        for length in lengths:
            bound = law(p, length)
            cell = base | {"placement": p, "L": length, "readout": "regression"}
            rows.append(cell | {"bound": "lower_bound", "bmin": bound})
            rows.append(cell | {"bound": "construction", "bmin": gap(p, length) * bound})
            norm = classified(p, length) if callable(classified) else classified
            rows.append(cell | {"readout": "classification", "bound": "construction", "bmin": norm})
    rows += [
        base
        | {"placement": "none", "attention": "linear", "readout": "regression", "L": length}
        | {"bound": "construction", "bmin": linear(length)}
        for length in lengths
    ]
    return _table(rows, BminTheory)


def _residual(errors=(0.5, 0.1, 0.05), rate=error_exponent, linear_error=1e-15):
    """residual.csv at L = 64: lower bounds B = 2 e^-k, constructions 1.1x."""
    rows = []
    for p in ("none", "post_bare", "post_learned"):
        for e in errors:
            b = 2 * e ** -rate(p)
            cell = {"placement": p, "attention": "softmax", "target_error": e, "max_error": e}
            rows += [cell | {"source": "lower_bound", "B": b}]
            rows += [cell | {"source": "construction", "B": 1.1 * b}]
    rows.append(
        {"placement": "none", "attention": "linear", "source": "construction"}
        | {"target_error": 0.0, "B": math.sqrt(2), "max_error": linear_error}
    )
    return _table([r | {"d": D, "L": 64} for r in rows], Residual)


def _precision(
    lengths=LENGTHS,
    head=lambda length: length + 1,
    margin=lambda length: length**-3.5,
    best=lambda length: length**-3.0,
):
    """precision.csv: storage per read-out, the float64 relative margins of the constructions
    and the best head's, and one exact trained classifier per length."""
    rows = []
    for p in PLACEMENTS:
        for length in lengths:
            for readout, parameters, relative, top in (
                ("regression", 4 * D + 1, 0.02 / length, math.nan),
                ("classification", 3 * D + head(length) * (D + 1), margin(length), best(length)),
            ):
                rows.append(
                    {"placement": p, "readout": readout, "d": D, "L": length}
                    | {"source": "construction", "B": 1.0, "seed": math.nan}
                    | {"parameters": parameters, "max_norm": 1.0, "accuracy": 1.0}
                    | {"accuracy_float32": 1.0, "relative_margin": relative}
                    | {"best_head_margin": top}
                )
    trained = [
        row | {"source": "training", "B": 0.5, "seed": 0.0, "relative_margin": 1e-3}
        for row in rows
        if row["placement"] == TRAINED and row["readout"] == "classification"
    ]
    return _table(rows + trained, Precision)


def _rates(fitted=None, points=3, trained=None, bound=0.74):
    """rates.csv: every regression curve fitted at its predicted exponent unless `fitted`
    (placement, source) says otherwise; the trained regression B_min at `trained` (default:
    its law) beside the lower bound's `bound` on the same window."""
    fitted = fitted or {}
    rows = []
    for p in LAW_SETTINGS:
        law = predicted_exponent(p, "regression")
        for source in SOURCES:
            exponent = fitted.get((p, source), law)
            rows.append(
                {"placement": p, "readout": "regression", "source": source}
                | {"fitted_exponent": exponent, "predicted_exponent": law}
            )
    law = predicted_exponent(TRAINED, "regression")
    for source, exponent in (
        ("training", law if trained is None else trained),
        ("training_bound", bound),
    ):
        rows.append(
            {"placement": TRAINED, "readout": "regression", "source": source}
            | {"fitted_exponent": exponent, "predicted_exponent": law}
        )
    window = {"fit_from": 32, "fit_to": 128, "fit_points": points}
    return _table([r | window for r in rows], Rates)


RATIOS = (0.95, 1.1, 1.2, 1.3)  # the default grid of B / lower bound
SEEDS = 4
CLASSIFIED = (16, 32, 64)  # classification lengths
FIT = TRAINED_LENGTHS[-3:]  # the fit's lengths at fit_points = 3


def _settled(length: int, ratio: float, seed: int) -> bool:
    """Every seed exact from B = 1.1 x the lower bound on: brackets (1, 1.1] at every length."""
    return ratio >= 1.1


def _training(
    exact=_settled,
    lengths=TRAINED_LENGTHS,
    law=lambda length: _law(TRAINED, length),
    classified=lambda length, seed: True,
    bound=0.5,
):
    """training.csv: the regression grid (B = ratio x `law`) x SEEDS seeds, exact where
    `exact(L, ratio, seed)`; classification at one `bound`, exact where `classified(L, seed)`;
    and an unconstrained run per length (left out of the grids)."""
    base = {"placement": TRAINED, "d": D, "steps": 10, "balanced_accuracy": 1.0}
    rows = []
    for length in lengths:
        for ratio in RATIOS:
            for seed in range(SEEDS):
                hit = exact(length, ratio, seed)
                rows.append(
                    base
                    | {"readout": "regression", "L": length, "B": ratio * law(length)}
                    | {"lower_bound": law(length), "ratio": ratio, "seed": seed}
                    | {"accuracy": 1.0 if hit else 0.9, "max_error": 0.1 if hit else 0.7}
                )
        rows.append(
            base
            | {"readout": "regression", "L": length, "B": math.inf, "seed": 0}
            | {"lower_bound": math.nan, "ratio": math.nan, "accuracy": 0.5, "max_error": 1.0}
        )
    for length in CLASSIFIED:
        for seed in range(SEEDS):
            hit = classified(length, seed)
            rows.append(
                base
                | {"readout": "classification", "L": length, "B": bound, "seed": seed}
                | {"lower_bound": math.nan, "ratio": math.nan, "accuracy": 1.0 if hit else 0.5}
                | {"best_head_margin": 1e-3}
            )
    frame = pd.DataFrame(rows).assign(
        train_points="grid",
        first_failing_count=math.nan,
        max_vector_norm=1.0,
        logit_margin=math.nan,
        relative_margin=math.nan,
        accuracy_float32=lambda f: f["accuracy"],
    )
    return _table(frame.to_dict("records"), Training)


def _trained(**kwargs) -> dict[str, pd.DataFrame]:
    """training.csv, from which C.6 rebuilds the grid's tables as the pipeline does."""
    return {TRAINING: _training(**kwargs)}


def _walls(wall=WALL):
    return _table(
        [{"placement": "pre_bare", "readout": "regression", "d": D, "max_length": wall}], Walls
    )


@functools.cache
def _satisfying() -> dict[str, pd.DataFrame]:
    """Tables on which every claim holds (built once: tests only read them)."""
    return {
        THEORY: _theory(),
        WALLS: _walls(),
        RESIDUAL: _residual(),
        PRECISION: _precision(),
        RATES: _rates(),
        **_trained(),
    }


def _tables(**overrides) -> dict[str, pd.DataFrame]:
    return _satisfying() | overrides


def _finding(claim_id: str, section=SECTION, **overrides):
    spec = next(spec for spec in CLAIMS if spec.id == claim_id)
    tables = _tables(**overrides)
    return spec.test({path: tables[path] for path in spec.tables}, section)


@pytest.fixture(autouse=True)
def _fewer_resamples(monkeypatch):
    """200 resamples: enough for the seed intervals of 4 seeds these tables test."""
    monkeypatch.setattr(verdicts, "RESAMPLES", 200)


def _terms(finding) -> dict[str, verdicts.Term]:
    return {term.name: term for term in finding.terms}


def _verdict(claim_id: str, term: str, **overrides) -> str:
    """The verdict of one term of a claim on the satisfying tables with `overrides`."""
    return _terms(_finding(claim_id, **overrides))[term].verdict


HOLDS, FAILS, UNDECIDED = verdicts.HOLDS, verdicts.FAILS, verdicts.UNDECIDED


def test_the_laws_of_the_study():
    assert LAWS == (0.0, 0.75, 1.0, 1.5)


def _expected_terms() -> dict[str, list[str]]:
    """The names of each claim's terms on the satisfying tables."""
    placements = sorted(PLACEMENTS)
    return {
        "C.1": [
            "theory lengths without a linear construction",
            "linear norm, relative spread over L",
            "linear construction, largest grid error",
        ],
        "C.2": [
            *(f"k, {p}" for p in ("none", "post_bare", "post_learned")),
            *(f"slope over L, {p}" for p in REGRESSION_RATE_PLACEMENTS),
            *(f"steps in L where the bound does not rise, {p}" for p in REGRESSION_RATE_PLACEMENTS),
        ],
        "C.3": [f"slope, {p} {s}" for p in LAW_SETTINGS for s in SOURCES],
        "C.4": [
            "d = 8: lengths up to the wall where bare pre-norm fails",
            "d = 8: lengths past the wall where bare pre-norm counts",
            "d = 8: lengths past the wall where a learned gain fails",
        ],
        "C.5": [
            "placement-lengths without a classification construction",
            *(f"norm / norm at shortest L, {p}" for p in PLACEMENTS),
            "placements whose classification storage does not rise with L",
            "placements whose regression storage varies with L",
            *(f"margin slope, {p}" for p in placements),
            *(f"best-head margin slope, {p}" for p in placements),
        ],
        "C.6": [
            "exact regression runs below the lower bound",
            "B_min slope over L = 16-64",
            *(f"seeds exact at B_min, L = {n} (B = 1.1 x bound)" for n in TRAINED_LENGTHS),
            "largest classification B / smallest regression lower bound",
            *(f"classification seeds exact at B = 0.5, L = {n}" for n in CLASSIFIED),
        ],
    }


STATISTICS = {
    "C.1": "relative spread of the linear construction's norm over L (per width); its largest "
    "grid error",
    "C.2": "k of the lower bound B ~ e^-k between the two smallest target errors e; log-log "
    "slope of the lower bound over L (theory in brackets)",
    "C.3": "fitted log-log slopes of the lower bound / construction (theory in brackets); "
    "construction over lower bound at the longest L",
    "C.4": "the wall per width; theory lengths at which bare and learned pre-norm count",
    "C.5": "largest classification norm over L relative to the shortest L; head storage; "
    "log-log slope of the float64 relative margin of the constructions and of the best head on "
    "their representations (LP); the trained classifiers' margins",
    "C.6": "regression: exact runs below the lower bound, B_min / lower bound per L and its "
    "bracket on the grid, fitted slope of B_min beside the lower bound's on the same lengths; "
    "classification: fraction of seeds exact at its largest bound per L",
}


@pytest.mark.parametrize("claim_id", [spec.id for spec in CLAIMS])
def test_every_claim_holds_on_tables_that_satisfy_it(claim_id):
    """Every term holds; C.1-C.5's terms are exact (theory, LP bounds, constructions,
    counts); C.6's carry a bootstrap over seeds (quorums), a grid's bracket (the slope), or
    are exact (counts and the classification bound). Not cached: mutmut runs for a mutant only
    the tests that called its function."""
    finding = _finding(claim_id)
    assert finding is not None and finding.verdict == HOLDS
    assert [term.name for term in finding.terms] == _expected_terms()[claim_id]
    assert all(term.verdict == HOLDS for term in finding.terms)
    assert finding.value and finding.statistic == STATISTICS[claim_id]
    for term in finding.terms:
        estimate = term.estimate
        if claim_id == "C.6" and "seeds" in term.name:
            assert (estimate.basis, estimate.units, estimate.unit) == (
                "bootstrap over seeds",
                SEEDS,
                "seeds",
            )
        elif claim_id == "C.6" and "slope" in term.name:
            assert (estimate.basis, estimate.units) == ("bracket of the B grid", None)
        else:
            assert estimate.basis == "exact (no sampling)" and estimate.units is None
            assert estimate.lo == estimate.point == estimate.hi, term.name


# --- C.1 ---------------------------------------------------------------------------------


def test_c1_holds_on_a_constant_norm_and_a_zero_error():
    finding = _finding("C.1")
    assert finding.value == (
        "norm 1.41 over d = 8, spread over L = 8-128 at most 0; largest error 1e-15 at L = 64"
    )
    assert _verdict("C.1", "linear construction, largest grid error") == HOLDS


def test_c1_fails_when_the_linear_norm_grows_or_the_error_is_not_zero():
    growing = _finding("C.1", **{THEORY: _theory(linear=lambda n: math.sqrt(2) * math.log(n))})
    assert growing.verdict == FAILS
    assert _terms(growing)["linear norm, relative spread over L"].verdict == FAILS
    slight = _theory(linear=lambda n: math.sqrt(2) * (1 + 2e-6 * (n == 128)))
    assert _verdict("C.1", "linear norm, relative spread over L", **{THEORY: slight}) == FAILS
    within = _theory(linear=lambda n: math.sqrt(2) * (1 + 5e-7 * (n == 128)))
    assert _finding("C.1", **{THEORY: within}).verdict == HOLDS
    error = "linear construction, largest grid error"
    assert _verdict("C.1", error, **{RESIDUAL: _residual(linear_error=1e-3)}) == FAILS
    assert _verdict("C.1", error, **{RESIDUAL: _residual(linear_error=1.5e-9)}) == FAILS
    assert _verdict("C.1", error, **{RESIDUAL: _residual(linear_error=0.9e-9)}) == HOLDS


def test_c1_fails_where_a_length_has_no_linear_construction_and_needs_two_lengths():
    gone = _theory(linear=lambda n: math.inf if n == 32 else math.sqrt(2))
    term = _terms(_finding("C.1", **{THEORY: gone}))["theory lengths without a linear construction"]
    assert (term.estimate.point, term.verdict) == (1.0, FAILS)
    assert _finding("C.1", **{THEORY: _theory(lengths=(16,))}) is None


def test_c1_runs_from_two_lengths_and_names_every_width():
    assert _finding("C.1", **{THEORY: _theory(lengths=(8, 16))}).verdict == HOLDS
    tiny = _finding("C.1", **{THEORY: _theory(linear=lambda n: 1e-5)})
    assert tiny.value.startswith("norm 1e-05 over d = 8,")
    two = pd.concat([_theory(), _theory().assign(d=16)], ignore_index=True)
    assert "over d = 8, 16, spread" in _finding("C.1", **{THEORY: two}).value


# --- C.2 ---------------------------------------------------------------------------------


def test_c2_fails_when_the_error_vanishes_at_finite_b():
    def rate(k):
        return _residual(rate=lambda p: k if p == "post_bare" else error_exponent(p))

    # post_bare's k = 1/2: nearer it than 0 above 1/4
    assert _verdict("C.2", "k, post_bare", **{RESIDUAL: rate(0.05)}) == FAILS
    assert _verdict("C.2", "k, post_bare", **{RESIDUAL: rate(0.24)}) == FAILS
    assert _verdict("C.2", "k, post_bare", **{RESIDUAL: rate(0.26)}) == HOLDS
    assert _finding("C.2", **{RESIDUAL: rate(0.05)}).verdict == FAILS
    assert _finding("C.2", **{RESIDUAL: _residual(errors=(0.1,))}) is None


def test_c2_fails_when_a_bound_stops_growing():
    flat = _theory(law=lambda p, n: 3.0 if p == "post_learned" else _law(p, n))
    finding = _finding("C.2", **{THEORY: flat})
    terms = _terms(finding)
    assert terms["slope over L, post_learned"].verdict == FAILS
    steps = terms["steps in L where the bound does not rise, post_learned"]
    assert (steps.estimate.point, steps.verdict) == (len(LENGTHS) - 1, FAILS)
    assert finding.value.endswith("rising at every L: no")
    dip = _theory(law=lambda p, n: 0.9 * _law(p, 16) if (p, n) == ("none", 32) else _law(p, n))
    terms = _terms(_finding("C.2", **{THEORY: dip}))
    assert terms["slope over L, none"].verdict == HOLDS
    assert terms["steps in L where the bound does not rise, none"].estimate.point == 1
    assert _finding("C.2", **{THEORY: dip}).verdict == FAILS
    assert _finding("C.2").value == (
        "k at e = 0.05-0.1, L = 64: none 0.50 (0.5), post_bare 0.50 (0.5), post_learned 0.25 "
        "(0.25); slope over L = 8-128: none 1.00 (1), pre_learned 1.00 (1), post_bare 1.50 "
        "(1.5), post_learned 0.75 (0.75); rising at every L: yes"
    )


def test_c2_reads_the_lower_bounds_and_runs_from_two_errors_and_two_lengths():
    wild = _residual().assign(B=lambda f: f["B"].where(f["source"] == "lower_bound", 5.0))
    assert _finding("C.2", **{RESIDUAL: wild}).verdict == HOLDS  # constructions not read
    two = {RESIDUAL: _residual(errors=(0.1, 0.05)), THEORY: _theory(lengths=(8, 16))}
    assert _finding("C.2", **two).verdict == HOLDS
    small = _theory(law=lambda p, n: 1e-3 * _law(p, n))  # rises by less than 1 at each step
    assert _finding("C.2", **{THEORY: small}).verdict == HOLDS


# --- C.3 ---------------------------------------------------------------------------------


def test_c3_decides_each_fit_by_the_law_it_is_nearest():
    def fit(exponent):
        return {RATES: _rates(fitted={("post_learned", "construction"): exponent})}

    term = "slope, post_learned construction"
    assert _verdict("C.3", term, **fit(0.95)) == FAILS
    assert _verdict("C.3", term, **fit(0.88)) == FAILS  # nearer 1 than 3/4
    assert _verdict("C.3", term, **fit(0.86)) == HOLDS
    assert _verdict("C.3", term, **fit(0.38)) == HOLDS
    assert _verdict("C.3", term, **fit(0.37)) == FAILS  # nearer 0
    assert _verdict("C.3", term, **fit(math.nan)) == UNDECIDED
    finding = _finding("C.3", **fit(0.95))
    assert finding.verdict == FAILS
    assert finding.value == (
        "none 1.00/1.00 (1), construction/bound 1.30 at L = 128; post_bare 1.50/1.50 (1.5), "
        "construction/bound 1.30 at L = 128; post_learned 0.75/0.95 (0.75), construction/bound "
        "1.30 at L = 128; fits over L = 32-128, 3 points"
    )


def test_c3_needs_three_fit_points():
    assert _finding("C.3", **{RATES: _rates(points=2)}) is None
    assert _finding("C.3", **{RATES: _rates(points=3)}) is not None


def test_c3_reads_the_gap_at_the_longest_length_and_needs_every_fit():
    def widening(p, n):
        return 1.0 + n / 100 if p == "none" else 1.3

    finding = _finding("C.3", **{THEORY: _theory(gap=widening)})
    assert "none 1.00/1.00 (1), construction/bound 2.28 at L = 128" in finding.value
    missing = _rates()
    missing = missing[
        ~((missing["placement"] == "post_bare") & (missing["source"] == "construction"))
    ]
    assert _finding("C.3", **{RATES: missing}) is None


# --- C.4 ---------------------------------------------------------------------------------


def test_c4_fails_past_the_wall_if_bare_prenorm_counts_or_a_learned_gain_does_not():
    def counting_past(p, n):
        return 0.1 * n**2 if p == "pre_bare" else _law(p, n)

    def stuck_learned(p, n):
        return math.inf if p == "pre_learned" and n > WALL else _law(p, n)

    def short_of_the_wall(p, n):
        return math.inf if p == "pre_bare" and n == 16 else _law(p, n)

    for law, term, count in (
        (counting_past, "d = 8: lengths past the wall where bare pre-norm counts", 2),
        (stuck_learned, "d = 8: lengths past the wall where a learned gain fails", 2),
        (short_of_the_wall, "d = 8: lengths up to the wall where bare pre-norm fails", 1),
    ):
        finding = _finding("C.4", **{THEORY: _theory(law=law)})
        assert finding.verdict == FAILS
        assert [(t.name, t.estimate.point) for t in finding.terms if t.verdict == FAILS] == [
            (term, count)
        ]
    assert _finding("C.4").value == (
        "d = 8: wall L = 34, bare pre-norm counts at 3/3 lengths up to it and 0/2 past it, "
        "learned gain at 2/2 past it"
    )
    assert _finding("C.4", **{WALLS: _walls(wall=200)}) is None
    assert _finding("C.4", **{WALLS: _walls(wall=127)}) is not None


def test_c4_counts_a_wall_at_a_theory_length_as_up_to_it():
    at_32 = {THEORY: _theory(law=lambda p, n: _law(p, n, wall=32)), WALLS: _walls(wall=32)}
    finding = _finding("C.4", **at_32)
    assert finding.verdict == HOLDS
    assert finding.value.startswith("d = 8: wall L = 32, bare pre-norm counts at 3/3 lengths")


def test_c4_reads_only_softmax_regression_and_every_width():
    def classified(p, n):
        return math.inf if p == "pre_learned" and n > WALL else 1.0

    assert _finding("C.4", **{THEORY: _theory(classified=classified)}).verdict == HOLDS
    two = pd.concat([_theory(), _theory().assign(d=16)], ignore_index=True)
    walls = pd.concat([_walls(), _walls().assign(d=16)], ignore_index=True)
    finding = _finding("C.4", **{THEORY: two, WALLS: walls})
    assert finding.value.count("; d = 16: wall L = 34, bare") == 1
    assert [t.name for t in finding.terms][3:] == [
        "d = 16: lengths up to the wall where bare pre-norm fails",
        "d = 16: lengths past the wall where bare pre-norm counts",
        "d = 16: lengths past the wall where a learned gain fails",
    ]


# --- C.5 ---------------------------------------------------------------------------------


def test_c5_fails_on_growing_norms():
    growing = _finding("C.5", **{THEORY: _theory(classified=lambda p, n: math.sqrt(n))})
    assert growing.verdict == FAILS
    assert _terms(growing)["norm / norm at shortest L, none"].estimate.point == 4.0

    def slight(step):
        return {THEORY: _theory(classified=lambda p, n: 1 + step * ((p, n) == ("none", 128)))}

    assert _verdict("C.5", "norm / norm at shortest L, none", **slight(2e-6)) == FAILS
    assert _verdict("C.5", "norm / norm at shortest L, none", **slight(5e-7)) == HOLDS
    gone = _theory(classified=lambda p, n: math.inf if (p, n) == ("pre_bare", 64) else 1.0)
    term = _terms(_finding("C.5", **{THEORY: gone}))[
        "placement-lengths without a classification construction"
    ]
    assert (term.estimate.point, term.verdict) == (1, FAILS)


def test_c5_fails_on_flat_classification_or_varying_regression_storage():
    flat = _finding("C.5", **{PRECISION: _precision(head=lambda n: 5)})
    term = _terms(flat)["placements whose classification storage does not rise with L"]
    assert (term.estimate.point, term.verdict) == (len(PLACEMENTS), FAILS)
    varying = _precision().assign(
        parameters=lambda f: (
            f["parameters"]
            + ((f["readout"] == "regression") & (f["placement"] == "none") & (f["L"] == 64))
        )
    )
    term = _terms(_finding("C.5", **{PRECISION: varying}))[
        "placements whose regression storage varies with L"
    ]
    assert (term.estimate.point, term.verdict) == (1, FAILS)


def test_c5_fails_on_rising_margins_and_is_undecided_without_any():
    rising = _precision(margin=lambda n: 1e-6 * n)
    assert _verdict("C.5", "margin slope, none", **{PRECISION: rising}) == FAILS
    best = _precision(best=lambda n: 1e-6 * n)
    assert _verdict("C.5", "best-head margin slope, post_bare", **{PRECISION: best}) == FAILS
    flat = _precision(margin=lambda n: 1e-3)
    assert _verdict("C.5", "margin slope, none", **{PRECISION: flat}) == FAILS
    unmeasured = _precision(margin=lambda n: math.nan, best=lambda n: math.nan)
    finding = _finding("C.5", **{PRECISION: unmeasured})
    assert finding.verdict == UNDECIDED
    assert [t.name for t in finding.terms if t.verdict != HOLDS] == ["margin slope, no placement"]
    assert "margin slope not run, best head not run" in finding.value
    no_lp = _finding("C.5", **{PRECISION: _precision(best=lambda n: math.nan)})
    assert no_lp.verdict == HOLDS and not any("best" in t.name for t in no_lp.terms)


def test_c5_value_and_its_minimum_of_two_lengths():
    assert _finding("C.5").value == (
        "largest norm 1x the one at L = 8 over L = 8-128 in 5 placements (no-norm regression "
        "16x); 35.9x the regression read-out's trainable numbers at L = 128; margin slope -3.50 "
        "to -3.50, best head -3.00 to -3.00; trained exact classifiers at L = 128: 1, relative "
        "margin 0.001, 1 exact in float32"
    )
    short = {THEORY: _theory(lengths=(8,)), PRECISION: _precision(lengths=(8,))}
    assert _finding("C.5", **short) is None


def test_c5_storage_rising_by_one_number_rises():
    classification = _precision()["readout"] == "classification"
    by_one = _precision().assign(
        parameters=lambda f: f["parameters"].where(
            ~classification, 100 + f["L"].rank(method="dense")
        )
    )
    assert _finding("C.5", **{PRECISION: by_one}).verdict == HOLDS


def test_c5_a_margin_slope_from_two_lengths_and_no_exact_trained_classifier():
    two = _precision(margin=lambda n: n**-3.5 if n in (8, 16) else math.nan)
    assert _verdict("C.5", "margin slope, none", **{PRECISION: two}) == HOLDS
    untrained = _precision().assign(
        accuracy=lambda f: f["accuracy"].where(f["source"] != "training", 0.5)
    )
    assert _finding("C.5", **{PRECISION: untrained}).value.endswith("; no exact trained classifier")


def test_c5_counts_classification_lengths_only():
    theory = _theory()
    one = theory[(theory["readout"] != "classification") | (theory["L"] == 8)]
    assert _finding("C.5", **{THEORY: one}) is None
    two = {THEORY: _theory(lengths=(8, 16)), PRECISION: _precision(lengths=(8, 16))}
    assert _finding("C.5", **two).verdict == HOLDS
    rising = _precision(best=lambda n: 1e-6 * n**0.5)  # slope 1/2: above 0
    assert _verdict("C.5", "best-head margin slope, none", **{PRECISION: rising}) == FAILS


def test_c5_trained_margins_to_two_digits():
    def margin(value):
        trained = _precision().assign(
            relative_margin=lambda f: f["relative_margin"].where(f["source"] != "training", value)
        )
        return _finding("C.5", **{PRECISION: trained}).value

    assert margin(0.0012345).endswith("relative margin 0.0012, 1 exact in float32")
    assert margin(1.2345e-5).endswith("relative margin 1.2e-05, 1 exact in float32")


# --- C.6 ---------------------------------------------------------------------------------


def _c6(**kwargs):
    """C.6 on the satisfying tables with the training grid of `_trained(**kwargs)`."""
    return _finding("C.6", **_trained(**kwargs))


def _corner_slopes(lows, highs, lengths=FIT):
    """Every corner's least-squares slope (by np.polyfit): the range a reference computes."""
    x = np.log(lengths)
    return [
        float(np.polyfit(x, np.log(corner), 1)[0])
        for corner in itertools.product(*zip(lows, highs, strict=True))
    ]


def _exact_from(start: Mapping[int, float]):
    """Every seed exact from B / lower bound >= start[L] (1.1 by default)."""
    return lambda n, ratio, seed: ratio >= start.get(n, 1.1) - 1e-9


def test_c6_slope_range_is_every_corner_of_the_brackets():
    term = _terms(_finding("C.6"))["B_min slope over L = 16-64"]
    slopes = _corner_slopes([_law(TRAINED, n) for n in FIT], [1.1 * _law(TRAINED, n) for n in FIT])
    assert term.estimate.lo == pytest.approx(min(slopes), abs=1e-12)
    assert term.estimate.hi == pytest.approx(max(slopes), abs=1e-12)
    assert term.estimate.point == pytest.approx(0.75)
    assert term.verdict == HOLDS


def test_c6_straddles_the_midpoint_and_says_what_grid_step_decides_it():
    """B_min in (1.2, 1.3] x bound at L = 64 and (1, 1.1] at L = 16: the slopes allowed run
    from 0.81 to 0.94, across 0.875; the need is the step at which brackets centred on the
    brackets' centres give a range clear of 0.875."""
    finding = _c6(exact=_exact_from({64: 1.3}))
    term = _terms(finding)["B_min slope over L = 16-64"]
    lows = [_law(TRAINED, n) * r for n, r in zip(FIT, (1.0, 1.0, 1.2), strict=True)]
    highs = [_law(TRAINED, n) * r for n, r in zip(FIT, (1.1, 1.1, 1.3), strict=True)]
    slopes = _corner_slopes(lows, highs)
    assert (term.estimate.lo, term.estimate.hi) == pytest.approx((min(slopes), max(slopes)))
    assert term.estimate.lo < 0.875 < term.estimate.hi and term.verdict == UNDECIDED
    assert finding.verdict == UNDECIDED
    step = (
        float(
            re.fullmatch(
                r"B steps <= ([\d.]+) % near B_min at L = 16, 64 \(B_min at its "
                r"bracket's centre\)",
                term.need,
            ).group(1)
        )
        / 100
    )
    centres = [math.sqrt(a * b) for a, b in zip(lows, highs, strict=True)]

    def clears(s):
        grid = _corner_slopes(
            [c / math.sqrt(1 + s) for c in centres], [c * math.sqrt(1 + s) for c in centres]
        )
        return max(grid) < 0.875 or min(grid) > 0.875

    assert clears(step) and not clears(step * 1.1)  # floored to two digits, not more
    assert f"{term.name}: {term.need}" in term.deciding_need()


def test_c6_need_when_the_brackets_centre_sits_near_the_law_boundary():
    far = _c6(exact=_exact_from({64: 1.3, 32: 1.2}), law=lambda n: 0.5 * n**0.7)
    term = _terms(far)["B_min slope over L = 16-64"]
    assert term.verdict == UNDECIDED
    assert term.need.startswith("B steps <= ")


def test_c6_fails_when_b_min_follows_another_law():
    finding = _c6(law=lambda n: 0.5 * n)
    term = _terms(finding)["B_min slope over L = 16-64"]
    assert term.estimate.lo > 0.875 and term.verdict == FAILS and finding.verdict == FAILS
    flat = _terms(_c6(law=lambda n: 2.0))["B_min slope over L = 16-64"]
    assert flat.estimate.hi < 0.375 and flat.verdict == FAILS


def test_c6_an_unreached_length_fails_its_quorum_and_opens_the_bracket():
    finding = _c6(exact=lambda n, ratio, seed: n != 64 and ratio >= 1.1)
    terms = _terms(finding)
    quorum = terms["seeds exact at the largest B, L = 64 (B = 1.3 x bound)"]
    assert (quorum.estimate.point, quorum.verdict) == (0.0, FAILS)
    slope = terms["B_min slope over L = 16-64"]
    assert slope.estimate.hi == math.inf and slope.estimate.point == math.inf
    assert slope.need == "a grid bound meeting the quorum at L = 64"
    assert finding.verdict == FAILS
    assert "(1.3, inf] (L = 64)" in finding.value


def test_c6_seeds_split_at_b_min_leave_the_quorum_undecided():
    three = _c6(exact=lambda n, ratio, seed: ratio >= 1.1 and (n != 32 or seed))
    term = _terms(three)["seeds exact at B_min, L = 32 (B = 1.1 x bound)"]
    assert term.estimate.point == 0.75 and term.estimate.lo < QUORUM
    assert term.verdict == UNDECIDED and three.verdict == UNDECIDED
    assert re.fullmatch(
        r".*: about \d+ seeds at the observed spread \(now 4\)", term.deciding_need()
    )
    half = _c6(exact=lambda n, ratio, seed: ratio >= 1.1 and (n != 32 or seed < 2))
    term = _terms(half)["seeds exact at B_min, L = 32 (B = 1.1 x bound)"]
    assert term.estimate.point == QUORUM and term.verdict == UNDECIDED


def test_c6_seeds_exact_under_b_min_leave_the_bracket_undecided():
    """L = 64: every seed exact from 1.2 x bound, one already at 1.1: the bound under B_min
    misses the quorum, but a resample of the seeds could meet it."""
    one = _c6(
        exact=lambda n, ratio, seed: ratio >= 1.2 or (ratio >= 1.1 and (n != 64 or seed == 0))
    )
    terms = _terms(one)
    under = terms["seeds exact below B_min, L = 64 (B = 1.1 x bound)"]
    assert under.estimate.point == 0.25 and under.verdict == UNDECIDED
    assert terms["seeds exact at B_min, L = 64 (B = 1.2 x bound)"].verdict == HOLDS
    clean = _terms(_c6(exact=_exact_from({64: 1.2, 8: 1.2})))
    assert clean["seeds exact below B_min, L = 64 (B = 1.1 x bound)"].verdict == HOLDS
    assert not any(name.startswith("seeds exact below B_min, L = 8") for name in clean)


def test_c6_fails_on_an_exact_run_below_the_lower_bound():
    finding = _c6(exact=lambda n, ratio, seed: ratio >= 1.1 or (n, seed) == (32, 0))
    term = _terms(finding)["exact regression runs below the lower bound"]
    assert (term.estimate.point, term.verdict) == (1, FAILS)
    assert finding.verdict == FAILS


def test_c6_classification_quorum_and_bound():
    def quorum(finding, n=64):
        return _terms(finding)[f"classification seeds exact at B = 0.5, L = {n}"]

    half = _c6(classified=lambda n, seed: n != 64 or seed < 2)
    assert quorum(half).verdict == UNDECIDED and half.verdict == UNDECIDED
    none = _c6(classified=lambda n, seed: n != 64)
    assert (quorum(none).estimate.point, quorum(none).verdict) == (0.0, FAILS)
    assert quorum(none, 32).verdict == HOLDS
    above = _c6(bound=3.0)
    ratio = _terms(above)["largest classification B / smallest regression lower bound"]
    assert ratio.estimate.point == pytest.approx(3.0 / _law(TRAINED, 8))
    assert ratio.verdict == FAILS and above.verdict == FAILS


def test_c6_brackets_of_monotone_and_non_monotone_grids():
    def bracket(fractions, bound=1.0):
        part = pd.DataFrame({"B": RATIOS, "fraction": fractions, "lower_bound": bound, "L": 16})
        b = bmin_bracket(part)
        return (b.lo, b.bmin, b.hi, b.under, b.length, b.bound)

    assert bracket([0, 1, 1, 1]) == (1.0, 1.1, 1.1, None, 16, 1.0)
    assert bracket([0, 0.25, 0.5, 1]) == (1.1, 1.2, 1.2, 1.1, 16, 1.0)
    assert bracket([0, 0, 0.75, 0.5]) == (1.1, 1.2, 1.2, 1.1, 16, 1.0)
    assert bracket([0, 1, 0, 1]) == (1.0, 1.1, 1.3, None, 16, 1.0)  # met, missed, met
    assert bracket([0, 1, 1, 0]) == (1.0, 1.1, math.inf, None, 16, 1.0)
    assert bracket([0, 0, 0, 0.25]) == (1.3, math.inf, math.inf, None, 16, 1.0)
    assert bracket([1, 1, 1, 1], bound=1.0) == (0.95, 0.95, 0.95, None, 16, 1.0)
    assert bracket([0, 1, 1, 1], bound=0.9) == (0.95, 1.1, 1.1, 0.95, 16, 0.9)
    assert bracket([0, 1, 1, 1], bound=0.95) == (0.95, 1.1, 1.1, 0.95, 16, 0.95)  # on the bound


def _brackets(lows, highs, lengths=FIT):
    return [
        Bracket(n, lo, hi, hi, None, 1.0) for n, lo, hi in zip(lengths, lows, highs, strict=True)
    ]


def test_c6_slope_range_and_need_of_given_brackets():
    lengths = (8, 16, 32, 64)
    lows, highs = [1.0, 2.0, 2.5, 5.0], [1.5, 2.2, 3.5, 5.5]
    w = slope_weights(np.array(lengths))
    slopes = _corner_slopes(lows, highs, lengths)
    assert slope_range(_brackets(lows, highs, lengths), w) == pytest.approx(
        (min(slopes), max(slopes))
    )
    law = verdicts.nearer(0.75, LAWS)
    open_top = _brackets([1.0, 1.0, 1.0], [1.1, 1.1, math.inf])
    assert _step_need(open_top, slope_weights(np.array(FIT)), law) == (
        "a grid bound meeting the quorum at L = 64"
    )
    both_open = _brackets([1.0, 1.0, 1.0], [math.inf, 1.1, math.inf])
    assert _step_need(both_open, slope_weights(np.array(FIT)), law) == (
        "a grid bound meeting the quorum at L = 16, 64"
    )
    middle_open = _brackets([1.0, 1.0, 1.0], [1.1, math.inf, 1.1])  # no weight: moves nothing
    lo, hi = slope_range(middle_open, slope_weights(np.array(FIT)))
    assert (lo, hi) == pytest.approx((-math.log(1.1) / math.log(4), math.log(1.1) / math.log(4)))
    assert _step_need(middle_open, slope_weights(np.array(FIT)), law).startswith("B steps <= ")
    edge = _brackets([1.0, 1.0, 3.0], [1.0, 1.0, 3.0])
    w = slope_weights(np.array(FIT))
    on_end = verdicts.Criterion(
        weighted_slope(w, np.array([1.0, 1.0, 3.0])), math.inf, False, "> it"
    )
    assert _step_need(edge, w, on_end) == (
        "the slope through the brackets' centres sits on the criterion's end"
    )
    near = _brackets([1.0, 1.0, 4**0.84692], [1.0, 1.0, 4**0.84692])  # step 3.97 %
    assert _step_need(near, slope_weights(np.array(FIT)), law).startswith("B steps <= 3.9 % near")
    centred = _brackets([1.0, 1.0, 4**0.85], [1.0, 1.0, 4**0.85])  # slope 0.85: gap 0.025
    step = math.exp(2 * 0.025 * math.log(4) / 2) - 1  # sum|w| = 2 / log 4
    assert _step_need(centred, slope_weights(np.array(FIT)), law) == (
        f"B steps <= {_floored(100 * step)} near B_min at L = 16, 64 (B_min at its "
        "bracket's centre)"
    )


def test_c6_quorum_terms_name_the_cells_of_each_bracket():
    brackets = [
        Bracket(8, 1.0, 1.1, 1.1, None, 1.0),
        Bracket(16, 2.2, 2.4, 2.6, 2.2, 2.0),
        Bracket(32, 3.9, math.inf, math.inf, None, 3.0),
        Bracket(64, 4.4, 4.8, 4.8, 4.4, 4.0),
    ]
    seeds = {
        ("regression", n, b): verdicts.Estimate(f, f, f, "bootstrap over seeds", 4, "seeds")
        for n, b, f in ((8, 1.1, 1.0), (16, 2.4, 0.5), (16, 2.2, 0.0), (32, 3.9, 0.25))
        + ((64, 4.8, 1.0), (64, 4.4, 0.75))
    }
    terms = _quorum_terms(brackets, {16, 32, 64}, seeds)
    assert [(t.name, t.estimate.point, t.criterion.text) for t in terms] == [
        ("seeds exact at B_min, L = 8 (B = 1.1 x bound)", 1.0, ">= 0.5"),
        ("seeds exact at B_min, L = 16 (B = 1.2 x bound)", 0.5, ">= 0.5"),
        ("seeds exact below B_min, L = 16 (B = 1.1 x bound)", 0.0, "< 0.5"),
        ("seeds exact at the largest B, L = 32 (B = 1.3 x bound)", 0.25, ">= 0.5"),
        ("seeds exact at B_min, L = 64 (B = 1.2 x bound)", 1.0, ">= 0.5"),
        ("seeds exact below B_min, L = 64 (B = 1.1 x bound)", 0.75, "< 0.5"),
    ]
    assert len(_quorum_terms(brackets, {32}, seeds)) == 4  # under B_min: fit lengths only


def test_c6_weights_are_the_least_squares_slope():
    lengths = np.array([8.0, 16.0, 64.0, 100.0])
    values = np.array([1.0, 3.0, 2.0, 7.0])
    w = slope_weights(lengths)
    assert weighted_slope(w, values) == pytest.approx(
        np.polyfit(np.log(lengths), np.log(values), 1)[0]
    )
    assert list(slope_weights(np.array(FIT)) == 0) == [False, True, False]


def test_c6_percentages_are_floored_to_two_digits():
    assert [_floored(p) for p in (1.269, 12.69, 0.04569, 3.0)] == [
        "1.2 %",
        "12 %",
        "0.045 %",
        "3 %",
    ]


def test_c6_value_and_what_it_needs_to_run():
    assert _c6(exact=_exact_from({64: 1.3})).value == (
        "regression: 0 exact runs below the bound; B_min / bound in (1, 1.1] (L = 8), (1, 1.1] "
        "(L = 16), (1, 1.1] (L = 32), (1.2, 1.3] (L = 64); slope 0.75 (0.75), lower bound 0.74 "
        "over L = 32-128; classification at B = 0.5 (regression lower bound >= 2.38): 1 (L = 16), "
        "1 (L = 32), 1 (L = 64)"
    )
    assert _c6(lengths=(8, 16)) is None
    assert _c6(lengths=(16, 32, 64)).verdict == HOLDS
    assert _finding("C.6", section={"theory": {"fit_points": 2}}) is None
    spec = next(spec for spec in CLAIMS if spec.id == "C.6")
    assert spec.units == {TRAINING: ("seed",)} and TRAINING in spec.tables


def test_the_registry_evaluates_study_c_in_order(monkeypatch):
    monkeypatch.setattr(verdicts, "RESAMPLES", 20)  # all seeds exact: any count of resamples
    table, terms = evaluate_claims(_tables(), {"counting": SECTION})
    ours = table[table["claim"].str.startswith("C.")]
    assert set(terms.loc[terms["claim"].str.startswith("C."), "verdict"]) == {"holds"}
    assert list(ours["claim"]) == [f"C.{k}" for k in range(1, 7)]
    assert set(ours["verdict"]) == {"holds"} and set(ours["figure"]) <= {
        f"C{k}" for k in range(1, 8)
    }


def test_the_docs_list_every_claim_and_the_fit_minimum():
    text = (ROOT / "docs" / "counting.md").read_text()
    section = text.split("## Claims\n", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^- \*\*(C\.\d)\*\*", section, re.MULTILINE) == [s.id for s in CLAIMS]
    assert f"`MIN_FIT_POINTS` = {MIN_FIT_POINTS}" in section


@pytest.mark.slow
def test_claims_of_the_tiny_run(tiny_run):
    """Every Study C claim has a verdict on the tiny run, a value where the preset runs it (its
    two-point fits and lengths below the pre-norm wall leave C.3, C.4 and C.6 unrun), and the
    claims rule wrote exactly what the claims compute from the tables."""
    results = tiny_run.workdir / "results"
    config = yaml.safe_load((results / "config.yaml").read_text())
    paths = {path for spec in CLAIMS for path in spec.tables}
    tables = {p: read_table(results / p, table_model(results / p), config) for p in paths}
    claims, terms = claims_tables(findings(CLAIMS, tables, config["counting"]))
    assert set(claims["verdict"]) <= set(VERDICTS)
    assert set(claims.loc[claims["verdict"] == NOT_RUN, "claim"]) == {"C.3", "C.4", "C.6"}
    assert claims.loc[claims["verdict"] != NOT_RUN, "value"].map(bool).all()
    written = pd.read_csv(results / "claims.csv").set_index("claim")
    for row in claims.itertuples():
        line = written.loc[row.claim]
        assert (line["verdict"], line["figure"]) == (row.verdict, row.figure)
        assert (line["value"] if isinstance(line["value"], str) else None) == (
            row.value if isinstance(row.value, str) else None
        )
    written_terms = pd.read_csv(results / "claim_terms.csv")
    ours = written_terms[written_terms["claim"].str.startswith("C.")]
    assert list(ours["term"]) == list(terms["term"])
    assert list(ours["verdict"]) == list(terms["verdict"])
