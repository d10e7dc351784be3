"""Study C's claims (counting/claims.py) on hand-made tables that satisfy each claim, that
contradict it, and that lack what it needs; and on the tiny run's tables."""

import functools
import math
import re

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from transformer_stability import verdicts
from transformer_stability.claims import NOT_RUN, VERDICTS, claims_tables, findings
from transformer_stability.counting import claims as C
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.tables import (
    BminTheory,
    Precision,
    Rates,
    Residual,
    Training,
    Walls,
)
from transformer_stability.counting.rates import empirical_bmin, success_table
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


def _theory(lengths=LENGTHS, law=_law, linear=lambda length: math.sqrt(2), classified=1.0):
    """bmin_theory.csv: softmax regression bounds and constructions (1.3x) per placement,
    unit-norm classification constructions, the linear construction."""
    base = {"attention": "softmax", "d": D}
    rows = []
    for p in PLACEMENTS:
        for length in lengths:
            bound = law(p, length)
            cell = base | {"placement": p, "L": length, "readout": "regression"}
            rows.append(cell | {"bound": "lower_bound", "bmin": bound})
            rows.append(cell | {"bound": "construction", "bmin": 1.3 * bound})
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
        if row["placement"] == C.TRAINED and row["readout"] == "classification"
    ]
    return _table(rows + trained, Precision)


def _rates(fitted=None, points=3, trained=None, bound=0.74):
    """rates.csv: every regression curve fitted at its predicted exponent unless `fitted`
    (placement, source) says otherwise; the trained regression B_min at `trained` (default:
    its law) beside the lower bound's `bound` on the same window."""
    fitted = fitted or {}
    rows = []
    for p in C.LAW_SETTINGS:
        law = predicted_exponent(p, "regression")
        for source in C.SOURCES:
            exponent = fitted.get((p, source), law)
            rows.append(
                {"placement": p, "readout": "regression", "source": source}
                | {"fitted_exponent": exponent, "predicted_exponent": law}
            )
    law = predicted_exponent(C.TRAINED, "regression")
    for source, exponent in (
        ("training", law if trained is None else trained),
        ("training_bound", bound),
    ):
        rows.append(
            {"placement": C.TRAINED, "readout": "regression", "source": source}
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
    law=lambda length: _law(C.TRAINED, length),
    classified=lambda length, seed: True,
    bound=0.5,
):
    """training.csv: the regression grid (B = ratio x `law`) x SEEDS seeds, exact where
    `exact(L, ratio, seed)`; classification at one `bound`, exact where `classified(L, seed)`;
    and an unconstrained run per length (left out of the grids)."""
    base = {"placement": C.TRAINED, "d": D, "steps": 10, "balanced_accuracy": 1.0}
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
    """training.csv with the success and B_min tables the pipeline derives from it."""
    training = _training(**kwargs)
    success = success_table(training)
    return {
        C.TRAINING: training,
        C.SUCCESS: success,
        C.EMPIRICAL: empirical_bmin(training, success),
    }


def _walls(wall=WALL):
    return _table(
        [{"placement": "pre_bare", "readout": "regression", "d": D, "max_length": wall}], Walls
    )


@functools.cache
def _satisfying() -> dict[str, pd.DataFrame]:
    """Tables on which every claim holds (built once: tests only read them)."""
    return {
        C.THEORY: _theory(),
        C.WALLS: _walls(),
        C.RESIDUAL: _residual(),
        C.PRECISION: _precision(),
        C.RATES: _rates(),
        **_trained(),
    }


def _tables(**overrides) -> dict[str, pd.DataFrame]:
    return _satisfying() | overrides


def _finding(claim_id: str, section=SECTION, **overrides):
    spec = next(spec for spec in C.CLAIMS if spec.id == claim_id)
    tables = _tables(**overrides)
    return spec.test({path: tables[path] for path in spec.tables}, section)


def test_a_fit_identifies_the_law_it_lies_closest_to():
    assert C.LAWS == (0.0, 0.75, 1.0, 1.5)
    assert C.identifies(0.8, 0.75) and not C.identifies(0.9, 0.75) and C.identifies(0.9, 1.0)
    assert not C.identifies(math.nan, 0.75) and not C.identifies(math.inf, 1.5)
    assert C.identifies(0.3, 0.5, (0.0,)) and not C.identifies(0.2, 0.5, (0.0,))


def test_every_claim_holds_on_tables_that_satisfy_it():
    for spec in C.CLAIMS:
        finding = _finding(spec.id)
        assert finding is not None and finding.holds, (spec.id, finding)
        assert finding.value and finding.statistic


def test_c1_fails_when_the_linear_norm_grows_or_the_error_is_not_zero():
    growing = _theory(linear=lambda length: math.sqrt(2) * math.log(length))
    assert not _finding("C.1", **{C.THEORY: growing}).holds
    assert not _finding("C.1", **{C.RESIDUAL: _residual(linear_error=1e-3)}).holds
    assert _finding("C.1", **{C.THEORY: _theory(lengths=(16,))}) is None


def test_c2_fails_when_the_error_vanishes_at_finite_b_or_a_bound_stops_growing():
    saturating = _residual(rate=lambda p: 0.05 if p == "post_bare" else error_exponent(p))
    assert not _finding("C.2", **{C.RESIDUAL: saturating}).holds
    flat = _theory(law=lambda p, length: 3.0 if p == "post_learned" else _law(p, length))
    assert not _finding("C.2", **{C.THEORY: flat}).holds
    assert _finding("C.2", **{C.RESIDUAL: _residual(errors=(0.1,))}) is None


def test_c3_fails_when_a_fit_points_to_another_law_and_needs_three_points():
    other = _rates(fitted={("post_learned", "construction"): 0.95})
    finding = _finding("C.3", **{C.RATES: other})
    assert not finding.holds and "post_learned 0.75/0.95 (0.75)" in finding.value
    assert "construction/bound 1.30 at L = 128" in finding.value
    assert _finding("C.3", **{C.RATES: _rates(points=2)}) is None


def test_c4_fails_past_the_wall_if_bare_prenorm_counts_or_a_learned_gain_does_not():
    def counting_past(p, length):
        return 0.1 * length**2 if p == "pre_bare" else _law(p, length)

    assert not _finding("C.4", **{C.THEORY: _theory(law=counting_past)}).holds

    def stuck_learned(p, length):
        return math.inf if p == "pre_learned" and length > WALL else _law(p, length)

    assert not _finding("C.4", **{C.THEORY: _theory(law=stuck_learned)}).holds
    finding = _finding("C.4")
    assert "bare pre-norm counts at 3/3 lengths up to it and 0/2 past it" in finding.value
    assert _finding("C.4", **{C.WALLS: _walls(wall=200)}) is None


def test_c5_fails_on_growing_norms_flat_storage_or_rising_margins():
    growing = _theory(classified=lambda p, length: math.sqrt(length))
    assert not _finding("C.5", **{C.THEORY: growing}).holds
    assert not _finding("C.5", **{C.PRECISION: _precision(head=lambda length: 5)}).holds
    assert not _finding(
        "C.5", **{C.PRECISION: _precision(margin=lambda length: 1e-6 * length)}
    ).holds
    assert not _finding("C.5", **{C.PRECISION: _precision(best=lambda length: 1e-6 * length)}).holds
    short = {C.THEORY: _theory(lengths=(8,)), C.PRECISION: _precision(lengths=(8,))}
    assert _finding("C.5", **short) is None


def test_c6_fails_without_the_split_and_needs_three_lengths_and_fit_points():
    unreached = _empirical(reached=lambda length: length < 64)
    assert not _finding("C.6", **{C.EMPIRICAL: unreached}).holds
    assert not _finding("C.6", **{C.EMPIRICAL: _empirical(below=1)}).holds
    assert not _finding("C.6", **{C.RATES: _rates(trained=1.0)}).holds
    assert not _finding("C.6", **{C.SUCCESS: _success(bound=3.0)}).holds  # above a bound
    failing = _success(fraction=lambda length: 0.25 if length == 64 else 1.0)
    assert not _finding("C.6", **{C.SUCCESS: failing}).holds
    finding = _finding("C.6")
    assert "slope 0.75 (0.75), lower bound 0.74 over L = 32-128" in finding.value
    assert _finding("C.6", **{C.EMPIRICAL: _empirical(lengths=(8, 16))}) is None
    assert _finding("C.6", section={"theory": {"fit_points": 2}}) is None


def test_the_registry_evaluates_study_c_in_order():
    table = evaluate_claims(_tables(), {"counting": SECTION})
    ours = table[table["claim"].str.startswith("C.")]
    assert list(ours["claim"]) == [f"C.{k}" for k in range(1, 7)]
    assert set(ours["verdict"]) == {"holds"} and set(ours["figure"]) <= {
        f"C{k}" for k in range(1, 8)
    }


def test_the_docs_list_every_claim_and_the_fit_minimum():
    text = (ROOT / "docs" / "counting.md").read_text()
    section = text.split("## Claims\n", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^- \*\*(C\.\d)\*\*", section, re.MULTILINE) == [s.id for s in C.CLAIMS]
    assert f"`MIN_FIT_POINTS` = {C.MIN_FIT_POINTS}" in section


@pytest.mark.slow
def test_claims_of_the_tiny_run(tiny_run):
    """Every Study C claim has a verdict on the tiny run, a value where the preset runs it (its
    two-point fits and lengths below the pre-norm wall leave C.3, C.4 and C.6 unrun), and the
    claims rule wrote exactly what the claims compute from the tables."""
    results = tiny_run.workdir / "results"
    config = yaml.safe_load((results / "config.yaml").read_text())
    paths = {path for spec in C.CLAIMS for path in spec.tables}
    tables = {p: read_table(results / p, table_model(results / p), config) for p in paths}
    rows = claim_rows(C.CLAIMS, tables, config["counting"])
    assert {row["verdict"] for row in rows} <= set(VERDICTS)
    assert {row["claim"] for row in rows if row["verdict"] == NOT_RUN} == {"C.3", "C.4", "C.6"}
    assert all(row["value"] for row in rows if row["verdict"] != NOT_RUN)
    written = pd.read_csv(results / "claims.csv").set_index("claim")
    for row in rows:
        line = written.loc[row["claim"]]
        assert (line["verdict"], line["figure"]) == (row["verdict"], row["figure"])
        assert (line["value"] if isinstance(line["value"], str) else None) == row["value"]
