"""Study A's claims (apjn/claims.py): each test holds on tables made to satisfy its claim, fails
on tables made to contradict it, and is not run where the tables lack what it needs. The tables
are small hand-made ones that pass their pandera models."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from transformer_stability.apjn import claims
from transformer_stability.apjn.agreement import agreement, agreement_means, sensitivity_ratios
from transformer_stability.apjn.claims import CLAIMS
from transformer_stability.apjn.tables import (
    AgreementMeans,
    Asymptotics,
    EndToEnd,
    FiniteNCompare,
    MatchedPairs,
    MeasuredCurves,
    SensitivityRatios,
    TheoryDepth,
    Trainability,
    TuningWindows,
    WidthExcess,
    WidthSlopes,
)
from transformer_stability.apjn.tuning import matched_pairs, rate_windows
from transformer_stability.claims import HOLDS, NOT_RUN, VERDICTS, Claims
from transformer_stability.io import read_table
from transformer_stability.provenance import with_provenance
from transformer_stability.registry import table_model
from transformer_stability.tables import Table, columns_of, table_problems, table_schema

VARIANTS = (("ln", np.nan), ("derf", 1.0))
RATES = (1e-3, 3e-3, 1e-2)


def table(model: type[Table], rows: list[dict]) -> pd.DataFrame:
    """`rows` as a table of `model`, provenance appended, checked against the model."""
    frame = with_provenance(pd.DataFrame(rows, columns=columns_of(model)), seed=0, device="cpu",
                            dtype="float64")  # fmt: skip
    assert table_problems(frame, table_schema(model)) == []
    return frame


def ids(norm: str, alpha: float, mult: float = 1.0) -> dict:
    return {"norm": norm, "alpha": alpha, "attn_mult": mult, "mlp_mult": mult}


# --- A.1 -----------------------------------------------------------------------------------


def curve_rows(
    input_kind: str = "equiangular", apjn_factor: float = 1.0, q_factor: float = 1.0,
    rho_shift: float = 0.0,
) -> list[dict]:  # fmt: skip
    """Two initializations whose measured curves scatter by ±2 % around the theory's, times
    `apjn_factor` (APJN), `q_factor` (q and p) and with p/q raised by `rho_shift`."""
    rows, depth = [], 4
    for (norm, alpha), init, direction in [
        (v, i, d) for v in VARIANTS for i in (0, 1) for d in ("backward", "forward")
    ]:
        noise = 1.0 + (0.02 if init else -0.02)
        source = depth if direction == "backward" else 0
        for block in range(depth + 1):
            theory = 1.5 ** (abs(block - source))
            q, rho = 1.0 + 0.3 * block, 0.2 + 0.1 * block
            rows.append({
                **ids(norm, alpha), "width": 64, "depth": depth, "input": input_kind,
                "init_seed": init, "sample": 0, "direction": direction,
                "source_block": source, "block": block,
                "apjn": theory * noise * apjn_factor, "apjn_theory": theory,
                "q": q * noise * q_factor, "p": (rho + rho_shift) * q * noise * q_factor,
                "q_theory": q, "p_theory": rho * q, "q_theory_self": q, "p_theory_self": rho * q,
                "apjn_theory_gram": np.nan, "q_theory_gram": np.nan, "p_theory_gram": np.nan,
            })  # fmt: skip
    return rows


def a1(rows: list[dict]):
    curves = table(MeasuredCurves, rows)
    means = agreement_means(agreement(curves), curves)
    tables = {claims.CURVES: curves, claims.AGREEMENT: table(AgreementMeans, means)}
    return claims.permsym_recursions(tables, {})


def test_a1_holds_when_the_averaged_curves_follow_the_recursion():
    finding = a1(curve_rows())
    assert finding.holds
    assert finding.value.startswith("APJN GMFE worst 1 [1, 1.02] (")


@pytest.mark.parametrize(
    "contradiction", [{"apjn_factor": 1.08}, {"q_factor": 0.9}, {"rho_shift": 0.08}]
)
def test_a1_fails_when_an_apjn_q_or_correlation_leaves_the_recursion(contradiction):
    assert not a1(curve_rows(**contradiction)).holds


def test_a1_not_run_without_permutation_symmetric_input():
    assert a1(curve_rows(input_kind="images")) is None


# --- A.2 -----------------------------------------------------------------------------------


def asymptotic_rows(fitted: tuple[float, ...]) -> list[dict]:
    """pre-LN's zeta_- fitted per token count (NaN: no window) against 2/3, with zeta_+ rows."""
    rows = []
    for n, fit in zip((4, 16, 64), fitted, strict=False):
        for quantity, predicted, value in (("zeta_minus", 2 / 3, fit), ("zeta_plus", 1.05, 1.2)):
            rows.append({
                **ids("ln", np.nan), "n_tokens": n, "quantity": quantity, "fitted": value,
                "predicted": predicted, "two_mode_fit": value, "fit_intercept": 0.0,
                "fit_min_depth": 10, "fit_max_depth": 100,
            })  # fmt: skip
    return rows


def depth_rows(exponent: float, theory_exponent: float, depths=range(1, 17)) -> list[dict]:
    """The depth sweep: pre-LN's J^{L,0} = L^exponent measured, L^theory_exponent in theory."""
    return [
        {"sweep": "depth", **ids("ln", np.nan), "width": 64, "depth": depth, "init_seed": 0,
         "sample": 0, "apjn": depth**exponent + 1e-9, "apjn_theory": depth**theory_exponent}
        for depth in depths
    ]  # fmt: skip


def finite_n_rows(identical: tuple[float, float], inputs=("identical", "generic")) -> list[dict]:
    """finite_n_compare.csv at N = 4 and 8, blocks 8 and 16: measured/exact `identical[0]` and
    measured/authors' `identical[1]` with identical tokens, each with a ±2 % interval; the
    generic input off both closures."""
    rows = []
    for n, kind, block in [(n, k, b) for n in (4, 8) for k in inputs for b in (8, 16)]:
        exact, released = identical if kind == "identical" else (1.1, 1.2)
        ratios = {"exact": exact, "released": released}
        row = {"width": 64, "n_tokens": n, "input": kind, "block": block, "inits": 8,
               "apjn_mean": 10.0, "apjn_released": 10.0 / released, "apjn_exact": 10.0 / exact,
               "verdict": "neither"}  # fmt: skip
        for closure, ratio in ratios.items():
            row |= {f"ratio_{closure}": ratio, f"ratio_{closure}_lo": ratio - 0.02,
                    f"ratio_{closure}_hi": ratio + 0.02}  # fmt: skip
        rows.append(row)
    return rows


def a2(fitted, exponent=0.7, theory_exponent=0.7, depths=range(1, 17), finite_n=None):
    tables = {
        claims.ASYMPTOTICS: table(Asymptotics, asymptotic_rows(fitted)),
        claims.END_TO_END: table(EndToEnd, depth_rows(exponent, theory_exponent, depths)),
        claims.FINITE_N: table(FiniteNCompare, finite_n or finite_n_rows((1.0, 0.95))),
    }
    return claims.attention_exponent(tables, {})


def test_a2_holds_when_the_exponent_follows_the_attention_law():
    finding = a2((0.7, 0.8, np.nan))
    assert finding.holds
    assert "0.7 (N = 4), 0.8 (N = 16) (no window within the theory depth for N = 64)" in (
        finding.value
    )
    assert "ζ₋ = 0.667" in finding.value and "measured 0.7 vs recursion 0.7" in finding.value


@pytest.mark.parametrize(
    "fitted, exponent", [((0.7, 0.9), 0.7), ((0.7, 0.75), 0.8)], ids=["near 1", "measured off"]
)
def test_a2_fails_without_the_attention_exponent_or_off_the_measurement(fitted, exponent):
    assert not a2(fitted, exponent=exponent).holds


def test_a2_reports_both_closures_at_the_deepest_block_and_which_fit():
    value = a2((0.7, 0.8)).value
    assert (
        "N = 4 identical, L = 16: authors' 0.95 [0.93, 0.97], exact 1 [0.98, 1.02]; "
        "fits at every block: exact" in value
    )
    assert "N = 8 generic, L = 16: authors' 1.2 [1.18, 1.22], exact 1.1 [1.08, 1.12]" in value
    assert "exact 1.1 [1.08, 1.12]; fits at every block: neither" in value
    assert "fits at every block: authors' and exact" in a2((0.7, 0.8), finite_n=finite_n_rows(
        (1.0, 1.01))).value  # fmt: skip


def test_a2_holds_when_only_the_authors_closure_fits_identical_tokens():
    assert a2((0.7, 0.8), finite_n=finite_n_rows((0.9, 1.0))).holds


def test_a2_fails_when_identical_tokens_leave_both_closures():
    assert not a2((0.7, 0.8), finite_n=finite_n_rows((1.05, 0.95))).holds


def test_a2_not_run_without_a_fit_window_enough_measured_depths_or_identical_tokens():
    assert a2((np.nan, np.nan)) is None
    assert a2((0.7, 0.8), finite_n=finite_n_rows((1.0, 1.0), inputs=("generic",))) is None
    assert a2((0.7,), depths=range(1, 5)) is None


# --- A.3 -----------------------------------------------------------------------------------


def agreement_rows(gmfe_gram: float, input_kind: str = "images") -> list[dict]:
    """Mean GMFEs over the compared blocks, (q, p) 0.05 above the full-Gram closure's, with
    intervals of ±0.01."""
    values = {"gmfe": gmfe_gram + 0.05, "gmfe_gram": gmfe_gram, "gmfe_averaged": gmfe_gram}
    intervals = {
        f"{column}{end}": value + shift for column, value in values.items()
        for end, shift in (("", 0.0), ("_lo", -0.01), ("_hi", 0.01))
    }  # fmt: skip
    return [
        {"norm": norm, "alpha": alpha, "input": input_kind, "direction": direction,
         "region": region, **intervals}
        for norm, alpha in VARIANTS for direction in ("backward", "forward")
        for region in ("shallow", "middle", "deep", "compared")
    ]  # fmt: skip


def slope_rows(slope: float) -> list[dict]:
    return [
        {"norm": norm, "alpha": alpha, "direction": direction, "region": region,
         "closure": closure, "slope": slope, "slope_lo": slope - 0.1, "slope_hi": slope + 0.1,
         "points": 3}
        for norm, alpha in VARIANTS for direction in ("backward", "forward")
        for region in ("early", "compared") for closure in ("gram", "qp")
    ]  # fmt: skip


def excess_rows() -> list[dict]:
    """GMFE - 1 halving with each doubling of the width from 0.08 at width 32."""
    return [
        {"norm": norm, "alpha": alpha, "direction": direction, "region": "compared",
         "closure": closure, "width": width, "excess_mean": 2.56 / width,
         "excess_min": 1.28 / width, "excess_max": 5.12 / width}
        for norm, alpha in VARIANTS for direction in ("backward", "forward")
        for closure in ("gram", "qp") for width in (32, 64, 128)
    ]  # fmt: skip


def a3(gmfe_gram: float, slope: float, input_kind: str = "images"):
    tables = {
        claims.AGREEMENT: table(AgreementMeans, agreement_rows(gmfe_gram, input_kind)),
        claims.WIDTH_EXCESS: table(WidthExcess, excess_rows()),
        claims.WIDTH_SLOPES: table(WidthSlopes, slope_rows(slope)),
    }
    return claims.image_agreement(tables, {})


def test_a3_holds_when_the_image_curves_agree_and_the_mismatch_falls_with_width():
    finding = a3(1.03, -0.7)
    assert finding.holds
    assert "(q, p) worst 1.08 [1.07, 1.09] (" in finding.value
    assert "full-Gram worst 1.03 [1.02, 1.04] (" in finding.value
    assert "width slope largest -0.7 [-0.8, -0.6] (" in finding.value
    assert "full-Gram at d = 128: 1.02 (" in finding.value


@pytest.mark.parametrize("gmfe_gram, slope", [(1.08, -0.7), (1.03, 0.05)])
def test_a3_fails_on_a_large_or_width_independent_mismatch(gmfe_gram, slope):
    assert not a3(gmfe_gram, slope).holds


def test_a3_not_run_without_image_rows_or_a_width_slope():
    assert a3(1.03, -0.7, input_kind="equiangular") is None
    assert a3(1.03, np.nan) is None


# --- A.4 -----------------------------------------------------------------------------------

LAW_CURVES = {
    "power law": lambda depth: 0.7 * np.log(depth),
    "stretched exponential": lambda depth: 0.5 * np.sqrt(depth),
    "exponential": lambda depth: 0.01 * depth,
}


@pytest.mark.parametrize("law", sorted(LAW_CURVES))
def test_law_residuals_single_out_the_law_that_made_the_curve(law):
    depth = np.geomspace(100, 10_000, 30)
    residuals = claims.law_residuals(depth, LAW_CURVES[law](depth))
    assert residuals[law] < 1e-9 < min(r for name, r in residuals.items() if name != law)


def theory_depth_rows(laws: dict[str, str], points: int = 40) -> list[dict]:
    """J^{L,0} of each norm following the named law, at `points` log-spaced depths."""
    depths = np.unique(np.geomspace(1, 10_000, points).round())
    rows = []
    for norm, alpha in (("ln", np.nan), ("derf", 1.0), ("dyt", 1.0)):
        log_j = LAW_CURVES[laws[norm]](depths)
        rows += [
            {**ids(norm, alpha), "width": 64, "n_tokens": 16, "depth": int(d), "apjn": np.exp(y),
             "log_apjn": y, "local_slope": 0.5}
            for d, y in zip(depths, log_j, strict=True)
        ]  # fmt: skip
    return rows


STRETCH = {
    **ids("derf", 1.0), "n_tokens": 16, "quantity": "stretch_exponent", "fitted": 0.55,
    "predicted": 0.5, "two_mode_fit": np.nan, "fit_intercept": 0.0, "fit_min_depth": 1000,
    "fit_max_depth": 10_000,
}  # fmt: skip
EXPECTED = {"ln": "power law", "derf": "stretched exponential", "dyt": "stretched exponential"}


def a4(laws: dict[str, str], points: int = 40):
    tables = {
        claims.DEPTH: table(TheoryDepth, theory_depth_rows(laws, points)),
        claims.ASYMPTOTICS: table(Asymptotics, asymptotic_rows((0.7,)) + [STRETCH]),
    }
    return claims.depth_laws(tables, {})


def test_a4_holds_when_each_norm_follows_its_law():
    finding = a4(EXPECTED)
    assert finding.holds
    assert "pre-LN: power law (next" in finding.value
    assert "residual, stretch exponent 0.55); DyT α=1: stretched" in finding.value


@pytest.mark.parametrize(
    "changed", [{"derf": "exponential"}, {"dyt": "power law"}, {"ln": "stretched exponential"}]
)
def test_a4_fails_when_a_norm_follows_another_law(changed):
    assert not a4(EXPECTED | changed).holds


def test_a4_not_run_with_too_few_deep_depths():
    assert a4(EXPECTED, points=8) is None


# --- A.5 -----------------------------------------------------------------------------------


def sensitivity_rows(derf_power: float) -> list[dict]:
    """J^{L,0} = mult^power over each multiplier sweep: pre-LN power 1, Derf `derf_power`."""
    return [
        {"sweep": sweep, **ids(norm, alpha), "attn_mult": mult if sweep == "attn_mult" else 1.0,
         "mlp_mult": mult if sweep == "mlp_mult" else 1.0, "width": 64, "depth": 8,
         "init_seed": 0, "sample": 0, "apjn": 3 * mult**power, "apjn_theory": 3 * mult**power}
        for sweep in ("attn_mult", "mlp_mult")
        for (norm, alpha), power in zip(VARIANTS, (1.0, derf_power), strict=True)
        for mult in (0.5, 1.0, 2.0)
    ]  # fmt: skip


def train_rows(derf_losses: tuple[float, ...], derf_rise: float = 0.5, rates=RATES,
               mults=(1.0, 4.0), depths=(2, 4)) -> list[dict]:  # fmt: skip
    """Final losses per rate, two seeds: pre-LN flat over rates (1, 1, 1.05) everywhere; Derf
    α₀ 1 `derf_losses`, α₀ 2 and every larger init multiplier or depth raised by `derf_rise`;
    at the largest α₀, multiplier and depth Derf's first seed diverges at the largest rate."""
    rows = []
    alphas = {"ln": (np.nan,), "derf": (1.0, 2.0)}
    grid = [(v, a, m, d, s) for v in alphas for a in alphas[v] for m in mults for d in depths
            for s in (0, 1)]  # fmt: skip
    for norm, alpha, mult, depth, seed in grid:
        steps = (alpha == 2.0) + (mult > 1) + (depth > min(depths))
        losses = (1.0, 1.0, 1.05) if norm == "ln" else [x + steps * derf_rise for x in derf_losses]
        for lr, loss in zip(rates, losses, strict=False):
            lost = norm == "derf" and steps == 3 and seed == 0 and lr == max(rates)
            rows.append({
                **ids(norm, alpha, mult), "width": 16, "depth": depth, "init_std": 0.1,
                "lr": lr, "dataset": "textures", "train_seed": seed, "steps": 100,
                "final_loss": np.nan if lost else loss, "train_accuracy": np.nan if lost else 0.5,
                "test_accuracy": np.nan if lost else 0.5, "diverged": lost, "loss_spikes": 0,
                "grad_blowups": int(lost), "theory_log_apjn": 1.0 + steps + (norm == "ln"),
                "measured_log_apjn": 1.1,
            })  # fmt: skip
    return rows


def a5(derf_power: float, derf_losses: tuple[float, ...], **train):
    runs = table(Trainability, train_rows(derf_losses, **train))
    windows = rate_windows(runs)
    ends = table(EndToEnd, sensitivity_rows(derf_power))
    tables = {
        claims.END_TO_END: ends,
        claims.RATIOS: table(SensitivityRatios, sensitivity_ratios(ends).to_dict("records")),
        claims.TRAINABILITY: runs,
        claims.WINDOWS: table(TuningWindows, windows.to_dict("records")),
        claims.PAIRS: table(MatchedPairs, matched_pairs(windows).to_dict("records")),
    }
    return claims.init_and_tuning(tables, {})


def test_a5_holds_when_derf_spreads_more_and_each_factor_degrades_its_best():
    finding = a5(derf_power=4.0, derf_losses=(0.9, 1.5, 2.0))
    assert finding.holds
    assert "attn_mult derf ×256 (theory ×256)" in finding.value
    assert "measured/theory from 1 [1, 1] (pre-LN, attn_mult 0.5)" in finding.value
    assert "over 12 points (1+ initializations each), 0 of whose intervals leave out 1" in (
        finding.value
    )
    assert "derf alpha 1→2: window +0 rates, best +38%" in finding.value
    assert "ln depth 2→4: window +0 rates, best +0%" in finding.value
    assert "diverged runs 1, loss spikes 0, gradient blow-ups 1 in 72 runs" in finding.value
    assert "J-matched pairs" in finding.value and "partial r" in finding.value


@pytest.mark.parametrize(
    "derf_power, derf_losses, derf_rise",
    [(0.5, (0.9, 1.5, 2.0), 0.5), (4.0, (1.0, 1.0, 1.05), 0.0), (4.0, (0.9, 1.5, 2.0), 0.0)],
    ids=["smaller spread", "as wide a window, no rise", "no rise with any factor"],
)  # fmt: skip
def test_a5_fails_on_a_smaller_spread_or_no_effect_of_the_factors(
    derf_power, derf_losses, derf_rise
):
    assert not a5(derf_power, derf_losses, derf_rise=derf_rise).holds


def test_a5_not_run_with_fewer_than_three_rates_one_multiplier_or_one_depth():
    assert a5(4.0, (0.9, 1.5), rates=RATES[:2]) is None
    assert a5(4.0, (0.9, 1.5, 2.0), mults=(1.0,)) is None
    assert a5(4.0, (0.9, 1.5, 2.0), depths=(4,)) is None


# --- on a finished tiny run ----------------------------------------------------------------

RUN_AT_TINY = {"A.1", "A.3", "A.4"}
"""The claims the tiny preset measures: its theory depth cannot reach pre-LN's zeta_- window
(A.2) and it trains at two rates (A.5)."""


def evaluate_on_tree(results: Path, section: dict) -> dict[str, object]:
    """Each claim's Finding on the tables of a results tree, read and checked with their
    models."""
    found = {}
    for spec in CLAIMS:
        tables = {p: read_table(results / p, table_model(results / p)) for p in spec.tables}
        found[spec.id] = spec.test(tables, section)
    return found


@pytest.mark.slow
def test_claims_on_the_tiny_run(tiny_run):
    results = tiny_run.workdir / "results"
    section = yaml.safe_load((results / "config.yaml").read_text())["apjn"]
    found = evaluate_on_tree(results, section)
    assert {k for k, f in found.items() if f is not None} == RUN_AT_TINY
    assert all(f.value and f.statistic for f in found.values() if f is not None)
    written = read_table(results / "claims.csv", Claims).set_index("claim")
    for spec in CLAIMS:
        row, finding = written.loc[spec.id], found[spec.id]
        assert row["verdict"] in VERDICTS
        assert (row["verdict"] == NOT_RUN) == (finding is None)
        if finding is not None:
            assert row["value"] == finding.value
            assert (row["verdict"] == HOLDS) == finding.holds
