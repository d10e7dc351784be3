"""Study N's claims (numerics/claims.py) on hand-made tables whose answer is known: each claim
holds on data built to satisfy it, fails on data built to contradict it, and is not run where
the preset does not measure what it needs. The tables go through their models (written and
read back), as the claims rule reads them."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from transformer_stability.claims import NOT_RUN, claim_rows
from transformer_stability.io import read_table, write_table
from transformer_stability.numerics import claims
from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Lipschitz,
    Norms,
    RecursionSources,
    Softmax,
)
from transformer_stability.provenance import with_provenance
from transformer_stability.registry import table_model
from transformer_stability.tables import Table

U7 = 2.0**-8  # unit roundoff of 7 mantissa bits
SECTION = {"norms": {"dim": 32}}


@pytest.fixture
def checked(tmp_path: Path):
    """A frame as the claims rule sees it: written and read back through its model."""

    def through(frame: pd.DataFrame, model: type[Table]) -> pd.DataFrame:
        path = tmp_path / f"{model.__name__}.csv"
        write_table(with_provenance(frame, seed=0, device="cpu", dtype="float64"), path, model)
        return read_table(path, model)

    return through


# --- builders ---------------------------------------------------------------------------------


def norms_frame(
    outliers=(0.0, 1000.0), bound_over_error=5.0, ln_penalty=True, ln_kappa=1.0
) -> pd.DataFrame:
    """Errors u (LayerNorm's bulk error u(1 + M/d) with `ln_penalty`), bounds a fixed multiple,
    bulk conditions 4 (LayerNorm's times `ln_kappa`)."""
    rows = []
    for norm in ("layernorm", "rmsnorm"):
        ln = norm == "layernorm"
        for outlier in outliers:
            bulk = U7 * (1 + outlier / SECTION["norms"]["dim"]) if ln and ln_penalty else U7
            errors = {"normwise": U7, "comp_median": U7, "comp_max": 2 * U7, "bulk": bulk}
            metrics = {f"err_{k}": v for k, v in errors.items()}
            metrics |= {f"bound_{k}": bound_over_error * v for k, v in errors.items()}
            metrics |= {
                "kappa_normwise": 1.0,
                "kappa_comp_median": 2.0,
                "kappa_bulk": 4.0 * (ln_kappa if ln else 1.0),
            }
            for sample in (0, 1):
                rows += [
                    {"norm": norm, "mantissa_bits": 7, "outlier": outlier, "sample": sample}
                    | {"metric": m, "value": v}
                    for m, v in metrics.items()
                ]
    return pd.DataFrame(rows)


def _softmax_row(sweep, p_max, offset, mode, metric, measured, bound, fmt="m7") -> dict:
    return {
        "sweep": sweep,
        "p_max": p_max,
        "offset": offset,
        "format": "fp64" if mode == "propagation" else fmt,
        "mantissa_bits": {"fp64": 52, "fp16": 10}.get(fmt, 7),
        "mode": mode,
        "metric": metric,
        "sample": 0,
        "measured": measured,
        "bound": bound,
    }


def softmax_frame(
    p_maxes=(0.5, 1 - 1e-3, 1 - 1e-5),
    offsets=(0.0, 30.0),
    sink_aware=True,
    unshifted_sensitive=True,
    bound_over_error=4.0,
    cast_floor=None,
) -> pd.DataFrame:
    """Sink rows: errors min(1 - p_max, u)/2, bounds that fall with them (`sink_aware`) or stay
    at 2u. Offset rows: condition 5 + 2c unshifted, 5 shifted; errors u kappa (unshifted errors
    flat unless `unshifted_sensitive`). Every evaluation bound is `bound_over_error` times its
    error. With `cast_floor`, fp16 sink rows too, their error and bound floored there."""
    rows = []
    for p in p_maxes if cast_floor is not None else ():
        error = max(min(1 - p, U7) / 2, cast_floor)
        rows += [
            _softmax_row(
                "sink", p, 0.0, "shifted", "l1_abs", error, max(4 * error, 20 * cast_floor), "fp16"
            ),
            _softmax_row("sink", p, 0.0, "shifted", "worst_entry", error / 9, error / 8, "fp16"),
        ]
    for p in p_maxes:
        gain = 2 * (1 - p**2)
        rows += [
            _softmax_row("sink", p, 0.0, "propagation", "l1_gain", 0.6 * gain, gain),
            _softmax_row("sink", p, 0.0, "propagation", "jacobian_abs_sum", 0.95 * gain, gain),
        ]
        error = min(1 - p, U7) / 2
        for mode in ("unshifted", "shifted"):
            bound = bound_over_error * error if sink_aware else 2 * U7
            rows += [
                _softmax_row("sink", p, 0.0, mode, "l1_abs", error, bound),
                _softmax_row("sink", p, 0.0, mode, "max_rel", 5 * U7, bound_over_error * 5 * U7),
                _softmax_row("sink", p, 0.0, mode, "kappa_max", 5.0, np.nan),
            ]
    for c in offsets:
        for mode in ("unshifted", "shifted"):
            kappa = 5 + 2 * c if mode == "unshifted" else 5.0
            error = U7 * (kappa if unshifted_sensitive else 5.0)
            rows += [
                _softmax_row("offset", 0.5, c, mode, "kappa_max", kappa, np.nan),
                _softmax_row("offset", 0.5, c, mode, "max_rel", error, bound_over_error * error),
                _softmax_row(
                    "offset", 0.5, c, mode, "l1_abs", error / 2, bound_over_error * error / 2
                ),
            ]
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


def recursion_frame(collapses=True, violated=False) -> pd.DataFrame:
    """Amplification omega alpha / stream (collapses over alpha >= 1) or omega alpha; bounds
    far above the measured errors (below them at one add where `violated`)."""
    u = 2.0**-11
    rows = []
    for alpha in ALPHAS:
        for checkpoint, kind in ADDS:
            omega = 1e5 if kind == "attn" else 300.0
            amp = omega * alpha / (stream(alpha) if collapses else 1.0)
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
        claims.NORMS: checked(norms_frame() if norms is None else norms, Norms),
        claims.SOFTMAX: checked(softmax_frame() if softmax is None else softmax, Softmax),
        claims.LIPSCHITZ: checked(lipschitz_frame() if lipschitz is None else lipschitz, Lipschitz),
    }


def gpt2_tables(checked, errors=None, recursion=None, sources=None) -> dict:
    return {
        claims.ERRORS: checked(errors_frame() if errors is None else errors, Gpt2Errors),
        claims.RECURSION: checked(
            recursion_frame() if recursion is None else recursion, Gpt2Recursion
        ),
        claims.SOURCES: checked(sources_frame() if sources is None else sources, RecursionSources),
    }


# --- N.1 --------------------------------------------------------------------------------------


def test_bounds_hold_on_valid_tight_bounds(checked):
    finding = claims.bounds_hold(bound_tables(checked), SECTION)
    assert finding.holds
    assert finding.value.startswith("0 of ")
    assert "norms 5" in finding.value and "softmax 4" in finding.value


def test_bounds_fail_when_an_error_exceeds_its_bound(checked):
    finding = claims.bounds_hold(
        bound_tables(checked, norms=norms_frame(bound_over_error=0.9)), SECTION
    )
    assert not finding.holds
    assert not finding.value.startswith("0 of ")


def test_bounds_fail_when_loose_by_orders_of_magnitude(checked):
    loose = softmax_frame(bound_over_error=1e3)
    assert not claims.bounds_hold(bound_tables(checked, softmax=loose), SECTION).holds


def test_bounds_fail_when_attention_worst_exceeds_ball_bound(checked):
    above = lipschitz_frame(ball_bound=4.0)
    assert not claims.bounds_hold(bound_tables(checked, lipschitz=above), SECTION).holds


# --- N.2 --------------------------------------------------------------------------------------


def test_layernorm_worse_under_massive_outlier(checked):
    finding = claims.norms_under_outlier({claims.NORMS: checked(norms_frame(), Norms)}, SECTION)
    assert finding.holds
    assert "LN/RMS 32.2" in finding.value  # 1 + M/d


@pytest.mark.parametrize(
    "frame", [norms_frame(ln_penalty=False), norms_frame(ln_kappa=5.0)], ids=["equal", "kappa"]
)
def test_norms_claim_fails_on_contradicting_data(checked, frame):
    assert not claims.norms_under_outlier({claims.NORMS: checked(frame, Norms)}, SECTION).holds


def test_norms_claim_not_run_without_a_massive_outlier(checked):
    tables = {claims.NORMS: checked(norms_frame(outliers=(0.0, 100.0)), Norms)}
    assert claims.norms_under_outlier(tables, SECTION) is None


# --- N.3 --------------------------------------------------------------------------------------


def test_sink_aware_bound_falls_with_tail_mass(checked):
    finding = claims.sink_bound({claims.SOFTMAX: checked(softmax_frame(), Softmax)}, SECTION)
    assert finding.holds
    assert "bound slope 1," in finding.value and "bound/error 4" in finding.value


def test_flat_softmax_bound_fails_the_sink_claim(checked):
    frame = softmax_frame(sink_aware=False)
    assert not claims.sink_bound({claims.SOFTMAX: checked(frame, Softmax)}, SECTION).holds


def test_sink_claim_not_run_without_strong_sinks(checked):
    frame = softmax_frame(p_maxes=(0.5, 0.99))  # 1 - p_max > u everywhere
    assert claims.sink_bound({claims.SOFTMAX: checked(frame, Softmax)}, SECTION) is None


def test_sink_claim_tests_the_emulated_format_and_reports_the_casts(checked):
    frame = softmax_frame(cast_floor=1e-5)  # a floor: the fp16 bound does not fall
    finding = claims.sink_bound({claims.SOFTMAX: checked(frame, Softmax)}, SECTION)
    assert finding.holds
    assert finding.value.startswith("m7: ")
    assert "torch casts, median bound/error: fp16 " in finding.value


def test_bounds_fail_when_a_cast_entry_exceeds_its_bound(checked):
    frame = softmax_frame(cast_floor=1e-5)
    above = (frame.format == "fp16") & (frame.metric == "worst_entry") & (frame.p_max == 0.5)
    frame.loc[above, "measured"] = 2 * frame.loc[above, "bound"]
    finding = claims.bounds_hold(bound_tables(checked, softmax=frame), SECTION)
    assert not finding.holds
    assert "softmax 1/" in finding.value
    frame.loc[above, "measured"] = frame.loc[above, "bound"]  # equal: within the bound
    assert claims.bounds_hold(bound_tables(checked, softmax=frame), SECTION).holds


# --- N.4 --------------------------------------------------------------------------------------


def test_unshifted_error_follows_its_condition(checked):
    finding = claims.shifted_evaluation(
        {claims.SOFTMAX: checked(softmax_frame(), Softmax)}, SECTION
    )
    assert finding.holds
    assert "kappa^1 " in finding.value and "shifted error x1," in finding.value


def test_shift_claim_fails_when_unshifted_error_ignores_the_offset(checked):
    frame = softmax_frame(unshifted_sensitive=False)
    assert not claims.shifted_evaluation({claims.SOFTMAX: checked(frame, Softmax)}, SECTION).holds


def test_shift_claim_not_run_without_a_sensitivity_range(checked):
    frame = softmax_frame(offsets=(0.0, 1.0))  # kappa 5 -> 7
    assert claims.shifted_evaluation({claims.SOFTMAX: checked(frame, Softmax)}, SECTION) is None


# --- N.5 --------------------------------------------------------------------------------------


def test_length_free_lipschitz_bound(checked):
    finding = claims.length_free_lipschitz(
        {claims.LIPSCHITZ: checked(lipschitz_frame(), Lipschitz)}, SECTION
    )
    assert finding.holds
    assert "Euclidean bound slope 0.5 " in finding.value
    assert "(2 draws, n = 4..256)" in finding.value
    assert "n=4 20-24" in finding.value  # 120 / 6 and 120 / 5: the spread over the draws


def test_lipschitz_claim_fails_when_the_constant_grows_as_sqrt_n(checked):
    frame = lipschitz_frame(growth=0.5)
    tables = {claims.LIPSCHITZ: checked(frame, Lipschitz)}
    assert not claims.length_free_lipschitz(tables, SECTION).holds


def test_lipschitz_claim_fails_when_one_draw_grows(checked):
    frame = lipschitz_frame()
    grows = (frame.draw == 1) & (frame.norm == "inf")
    frame.loc[grows, "worst"] = 5.0 * np.sqrt(frame.seq_len[grows] / 4)
    finding = claims.length_free_lipschitz({claims.LIPSCHITZ: checked(frame, Lipschitz)}, SECTION)
    assert not finding.holds
    assert "to 0.5 (2 draws" in finding.value


def test_lipschitz_claim_fails_when_a_found_constant_exceeds_the_bound(checked):
    frame = lipschitz_frame()
    frame.loc[(frame.draw == 0) & (frame.seq_len == 16) & (frame.norm == "inf"), "worst"] = 130.0
    finding = claims.length_free_lipschitz({claims.LIPSCHITZ: checked(frame, Lipschitz)}, SECTION)
    assert not finding.holds
    assert "1 of " in finding.value


def test_lipschitz_claim_not_run_on_one_length(checked):
    tables = {claims.LIPSCHITZ: checked(lipschitz_frame(seq_lens=(16,)), Lipschitz)}
    assert claims.length_free_lipschitz(tables, SECTION) is None


# --- GPT-2: N.6, N.7 --------------------------------------------------------------------------


def test_stream_regimes():
    regimes = claims.stream_regimes(errors_frame()).set_index("alpha").regime
    assert list(regimes) == ["embedding", "residual", "residual"]


def test_stream_regimes_at_each_models_own_last_add():
    deeper = errors_frame().assign(model="random-gpt2-deep")
    deeper["checkpoint"] += 2
    regimes = claims.stream_regimes(pd.concat([errors_frame(), deeper]))
    assert regimes.groupby("model").regime.apply(list).to_dict() == dict.fromkeys(
        ["random-gpt2", "random-gpt2-deep"], ["embedding", "residual", "residual"]
    )


def test_recursion_amplification_collapses(checked):
    finding = claims.worst_case_recursion(gpt2_tables(checked), SECTION)
    assert finding.holds
    assert finding.value.startswith("0 of 20 adds above the bound")
    assert "bound/measured at the first add, per source: 1e+03-1e+03" in finding.value
    assert "per source 3-3 (random-gpt2 3-3), test formats 5-5" in finding.value


@pytest.mark.parametrize(
    "recursion",
    [recursion_frame(collapses=False), recursion_frame(violated=True)],
    ids=["grows-with-alpha", "violated"],
)
def test_recursion_claim_fails_on_contradicting_data(checked, recursion):
    tables = gpt2_tables(checked, recursion=recursion)
    assert not claims.worst_case_recursion(tables, SECTION).holds


@pytest.mark.parametrize(
    "sources",
    [sources_frame(typical=11.0), sources_frame(typical=0.09), sources_frame(violated=True)],
    ids=["typical-too-high", "typical-too-low", "source-above-its-bound"],
)
def test_recursion_claim_fails_on_contradicting_sources(checked, sources):
    tables = gpt2_tables(checked, sources=sources)
    assert not claims.worst_case_recursion(tables, SECTION).holds
    assert claims.worst_case_recursion(
        gpt2_tables(checked, sources=sources_frame(9.5)), SECTION
    ).holds


def test_relative_error_preserved_across_residual_dominated_alpha(checked):
    finding = claims.alpha_invariance(gpt2_tables(checked), SECTION)
    assert finding.holds
    assert "(1, 100) at most 1 (random-gpt2 m10)" in finding.value
    assert "(0.01): random-gpt2 m10 0.1x the plateau" in finding.value


@pytest.mark.parametrize(
    "errors",
    [errors_frame(plateau_spread=10.0), errors_frame(flipped_error=1.0)],
    ids=["not-preserved", "no-flip"],
)
def test_alpha_claim_fails_on_contradicting_data(checked, errors):
    assert not claims.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).holds


def test_alpha_claim_leaves_a_stream_rounding_format_untested_after_the_flip(checked):
    """bf16 rounds the stream itself at its u: its error may stay on the plateau at small alpha
    (reported); its plateau is still tested."""
    errors = pd.concat(
        [errors_frame(), errors_frame(flipped_error=1.0, precision="bf16")], ignore_index=True
    )
    finding = claims.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.holds
    assert "random-gpt2 bf16 1, random-gpt2 m10 0.1x the plateau" in finding.value
    errors = pd.concat(
        [errors_frame(), errors_frame(plateau_spread=10.0, precision="bf16")], ignore_index=True
    )
    assert not claims.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).holds


def test_gpt2_claims_not_run_with_one_residual_dominated_alpha(checked):
    errors = errors_frame()
    errors = errors[errors.alpha < 100]
    recursion = recursion_frame()
    tables = gpt2_tables(checked, errors, recursion[recursion.alpha < 100])
    assert claims.alpha_invariance(tables, SECTION) is None
    assert claims.worst_case_recursion(tables, SECTION) is None


def _trained(errors: pd.DataFrame) -> pd.DataFrame:
    return errors.assign(weights="trained", model="trained-small")


def test_trained_alpha_claim_tests_the_trained_rows_alone(checked):
    """N.8 is N.7 on the trained model's rows: a random model's contradicting rows beside it do
    not change its verdict, the trained model's own do."""
    errors = pd.concat([_trained(errors_frame()), errors_frame(plateau_spread=10.0)])
    finding = claims.trained_alpha_invariance(gpt2_tables(checked, errors=errors), SECTION)
    assert finding.holds and "random-gpt2" not in finding.value
    assert "trained-small m10" in finding.value
    assert not claims.alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).holds
    errors = pd.concat([_trained(errors_frame(flipped_error=1.0)), errors_frame()])
    assert not claims.trained_alpha_invariance(gpt2_tables(checked, errors=errors), SECTION).holds


def test_trained_alpha_claim_not_run_without_a_trained_model(checked):
    assert claims.trained_alpha_invariance(gpt2_tables(checked), SECTION) is None


def sinks_frame(trained_p_max: float, random_p_max: float = 0.02) -> pd.DataFrame:
    """Two blocks of 4 heads per model; one trained head at `trained_p_max` on the first
    token, the others at half of it; every random head at `random_p_max`."""
    rows = []
    for weights, model in (("random", "random-gpt2"), ("trained", "trained-small")):
        for block in range(2):
            for head in range(4):
                top = random_p_max if weights == "random" else trained_p_max
                top = top if weights == "random" or (block, head) == (1, 2) else top / 2
                for statistic, value in (("p_max", top), ("first_token", top / 3)):
                    quantiles = dict.fromkeys(("p01", "p25", "p50", "p75", "p99", "mean"), value)
                    rows.append(
                        {"weights": weights, "model": model, "block": block, "head": head}
                        | {"statistic": statistic}
                        | quantiles
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("trained", "random", "holds"),
    [(0.9, 0.02, True), (0.45, 0.02, False), (0.9, 0.3, False), (0.9, 0.6, False)],
)
def test_sink_claim_needs_sink_heads_and_concentration_beyond_random(
    checked, trained, random, holds
):
    """A sink head (median p_max >= 1/2) in the trained model, none in the random one, and the
    median over heads at least 2x the random model's."""
    tables = {claims.SINKS: checked(sinks_frame(trained, random), AttentionSinks)}
    finding = claims.attention_sinks(tables, SECTION)
    assert finding.holds == holds
    sink_heads = int(trained >= 0.5)
    assert f"{sink_heads} of 8 heads with median p_max >= 0.5" in finding.value


def test_sink_claim_reports_the_heads_in_n3_s_strong_sink_regime(checked):
    tables = {claims.SINKS: checked(sinks_frame(1 - 2.0**-9), AttentionSinks)}
    finding = claims.attention_sinks(tables, SECTION)
    assert "trained-small: median p_max 0.499" in finding.value
    assert "1 with p99 of p_max >= 1 - 2^-8" in finding.value
    assert "random-gpt2: median p_max 0.02" in finding.value


def test_sink_claim_not_run_without_a_trained_model(checked):
    frame = sinks_frame(0.9)
    tables = {claims.SINKS: checked(frame[frame.weights == "random"], AttentionSinks)}
    assert claims.attention_sinks(tables, SECTION) is None


# --- the tiny run -----------------------------------------------------------------------------


def evaluate_on(results: Path) -> dict[str, dict]:
    """Study N's claim rows on a results tree, its tables read through their models."""
    config = yaml.safe_load((results / "config.yaml").read_text())
    paths = {p for spec in claims.CLAIMS for p in spec.tables}
    tables = {p: read_table(results / p, table_model(p), config) for p in paths}
    return {row["claim"]: row for row in claim_rows(claims.CLAIMS, tables, config["numerics"])}


@pytest.mark.slow
def test_claims_on_the_tiny_run(tiny_run):
    """Every claim the tiny preset measures gets a verdict and a value; N.3 needs sinks with
    1 - p_max <= u, which the tiny preset (p_max <= 0.99 at 7 bits) does not draw."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    rows = evaluate_on(tiny_run.workdir / "results")
    assert list(rows) == [spec.id for spec in claims.CLAIMS]
    assert rows["N.3"]["verdict"] == NOT_RUN
    for claim, row in rows.items():
        if claim != "N.3":
            assert row["verdict"] != NOT_RUN and row["value"], row


def test_docs_list_every_claim_with_its_figure():
    """docs/numerics.md's Claims table: one row per claim, in order, with the figure code."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "numerics.md").read_text()
    rows = re.findall(r"^\| (N\.\d) \| .* \| ([^|]+) \|$", text, re.MULTILINE)
    assert rows == [(spec.id, spec.figure) for spec in claims.CLAIMS]
