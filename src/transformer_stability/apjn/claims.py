"""Study A's claims (issue 19): each sentence-level claim of the abstract, tested on the run's
tables by a statistic whose criterion the data could fail. The rows of results/claims.csv;
docs/apjn.md ("Claims") states the same statistics and criteria in words."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import gmfe
from transformer_stability.apjn.names import NormName
from transformer_stability.apjn.style import variant_label
from transformer_stability.apjn.tables import CLOSURES
from transformer_stability.apjn.tuning import (
    MATCH,
    TOLERANCE,
    factor_effects,
    partial_correlation,
    sensitive,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables

CURVES = "apjn/measured_curves.csv"
AGREEMENT = "apjn/agreement_means.csv"
WIDTH_EXCESS = "apjn/width_excess.csv"
WIDTH_SLOPES = "apjn/width_slopes.csv"
ASYMPTOTICS = "apjn/asymptotics.csv"
DEPTH = "apjn/theory_depth.csv"
END_TO_END = "apjn/end_to_end.csv"
RATIOS = "apjn/sensitivity_ratios.csv"
TRAINABILITY = "apjn/trainability.csv"
WINDOWS = "apjn/tuning_windows.csv"
PAIRS = "apjn/matched_pairs.csv"
FINITE_N = "apjn/finite_n_compare.csv"

AGREES = 1.05
"""The GMFE at which a measured curve agrees with the theory (the line A3 and A9 draw)."""
CORRELATION_GAP = 0.05
"""The largest gap between measured and theoretical token correlation p/q that agrees."""
SLOPE_GAP = 0.05
"""The largest gap between measured and theoretical depth exponents that agrees."""
LAW_WINDOW = 10
"""The depth laws are told apart over the deepest factor LAW_WINDOW of the theory's depths."""
MEASURED_SPAN = 4
"""A.2 compares measured and theoretical exponents over the deepest factor MEASURED_SPAN of the
measured depths."""
MIN_POINTS = 5
"""The fewest depths a fit of a depth law takes."""
MIN_RATES = 3
"""The fewest learning rates from which a tuning window is worth reading."""


def _g(value: float) -> str:
    return f"{value:.3g}"


def _label(norm: NormName, alpha: float) -> str:
    return variant_label(norm, None if pd.isna(alpha) else float(alpha))


def _means(rows: pd.DataFrame, by: list[str], columns: list[str]) -> pd.DataFrame:
    """The mean of `columns` over initializations and samples, per value of `by`."""
    return rows.groupby(by, dropna=False)[columns].mean().reset_index()


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


# --- A.1: the recursions on permutation-symmetric input ------------------------------------


def _worst(values: pd.Series) -> str:
    """'1.02 (Derf α=1.5, backward)': the largest value and where it is."""
    key = values.idxmax()
    return f"{_g(values.max())} ({', '.join(str(k) for k in np.atleast_1d(key))})"


def _worst_ci(means: pd.DataFrame, column: str) -> tuple[float, str]:
    """(largest, '1.02 [1.01, 1.03] (Derf α=1.5, backward)'): the largest `column` of a
    labelled table with `column`_lo and `column`_hi, where it is, and its bootstrap interval."""
    row = means.loc[means[column].idxmax()]
    interval = f"[{_g(row[f'{column}_lo'])}, {_g(row[f'{column}_hi'])}]"
    return float(row[column]), f"{_g(row[column])} {interval} ({row['model']}, {row['direction']})"


def _compared_means(tables: Tables, kind: str) -> pd.DataFrame:
    """The labelled rows of agreement_means.csv for input `kind` over every compared block."""
    means = tables[AGREEMENT]
    return _labelled(means[(means["input"] == kind) & (means["region"] == "compared")])


def _labelled(means: pd.DataFrame) -> pd.DataFrame:
    labels = [_label(n, a) for n, a in zip(means["norm"], means["alpha"], strict=True)]
    return means.assign(model=labels)


def permsym_recursions(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """GMFE of the averaged APJN curves (per variant and direction) and of the averaged q, and
    the gap in p/q, on the permutation-symmetric input, source block left out."""
    curves = tables[CURVES]
    curves = curves[
        (curves["input"] == "equiangular") & (curves["block"] != curves["source_block"])
    ]
    if curves.empty:
        return None
    columns = ["q", "q_theory", "p", "p_theory"]
    means = _labelled(_means(curves, ["norm", "alpha", "direction", "block"], columns))
    apjn, apjn_text = _worst_ci(_compared_means(tables, "equiangular"), "gmfe_averaged")
    stats = means[means["direction"] == "forward"]  # blocks after the input, each once
    q = stats.groupby("model").apply(lambda m: gmfe(m["q"].to_numpy(), m["q_theory"].to_numpy()))
    rho = (stats["p"] / stats["q"] - stats["p_theory"] / stats["q_theory"]).abs()
    rho = rho.groupby(stats["model"]).max()
    return Finding(
        statistic="GMFE of the APJN curves averaged over initializations and samples, against "
        "the recursion, per variant and direction, with its 95 % bootstrap interval "
        "(initializations, then samples within each); GMFE of the averaged q and largest gap "
        "in p/q along depth",
        value=f"APJN GMFE worst {apjn_text}; q GMFE worst {_worst(q)}; "
        f"largest p/q gap {_worst(rho)}",
        holds=bool(apjn <= AGREES and q.max() <= AGREES and rho.max() <= CORRELATION_GAP),
    )


# --- A.2: attention changes the depth exponent --------------------------------------------


def _measured_exponent(end_to_end: pd.DataFrame) -> tuple[float, float] | None:
    """Pre-LN's d ln J / d ln L fitted over the deepest factor MEASURED_SPAN of the measured
    depths: measured (mean over initializations) and the recursion seeded by each input; None
    below MIN_POINTS depths."""
    rows = end_to_end[(end_to_end["sweep"] == "depth") & (end_to_end["norm"] == "ln")]
    means = _means(rows, ["depth"], ["apjn", "apjn_theory"])
    deep = means[means["depth"] >= means["depth"].max() / MEASURED_SPAN]
    if len(deep) < MIN_POINTS:
        return None
    x = np.log(deep["depth"].to_numpy(float))
    return _slope(x, np.log(deep["apjn"])), _slope(x, np.log(deep["apjn_theory"]))


CLOSURE_NAMES = {"exact": "exact", "released": "authors'"}


def _fitting_closures(group: pd.DataFrame) -> list[str]:
    """The closures whose measured/theory interval covers 1 at every compared block."""
    return [
        CLOSURE_NAMES[c]
        for c in CLOSURES
        if ((group[f"ratio_{c}_lo"] <= 1) & (group[f"ratio_{c}_hi"] >= 1)).all()
    ]


def _ratio_text(row: pd.Series, closure: str) -> str:
    lo, hi = row[f"ratio_{closure}_lo"], row[f"ratio_{closure}_hi"]
    return f"{CLOSURE_NAMES[closure]} {_g(row[f'ratio_{closure}'])} [{_g(lo)}, {_g(hi)}]"


def finite_n_fits(compare: pd.DataFrame) -> tuple[str, bool] | None:
    """Per token count N and input of finite_n_compare.csv: measured/theory at the deepest
    compared block for both closures (mean, bootstrap interval) and the closures that fit at
    every compared block; whether, with identical tokens (exactly uniform attention), some
    closure fits for every N. None without identical-token rows."""
    if not (compare["input"] == "identical").any():
        return None
    texts, identical_fit = [], True
    for (n, kind), group in compare.groupby(["n_tokens", "input"], sort=True):
        deepest = group.loc[group["block"].idxmax()]
        fitting = _fitting_closures(group)
        ratios = ", ".join(_ratio_text(deepest, c) for c in CLOSURES)
        texts.append(
            f"N = {n} {kind}, L = {int(deepest['block'])}: {ratios}; fits at every block: "
            f"{' and '.join(fitting) or 'neither'}"
        )
        identical_fit &= kind != "identical" or bool(fitting)
    return "; ".join(texts), identical_fit


def attention_exponent(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Pre-LN's exponent of J^{L,0} ~ L^zeta fitted on the recursion for L << N^3 against
    zeta_- = m/(m + 2a) (with attention) and 1 (without), for every token count N; the
    exponent measured in the built ViTs against the recursion's over the same depths; and, at
    few tokens and large depth, J^{b,0} measured against the exact and the authors' closure."""
    zeta_minus = tables[ASYMPTOTICS].query("quantity == 'zeta_minus'")
    fits = zeta_minus[zeta_minus["fitted"].notna()]
    unreached = ", ".join(str(n) for n in zeta_minus.loc[zeta_minus["fitted"].isna(), "n_tokens"])
    measured = _measured_exponent(tables[END_TO_END])
    finite_n = finite_n_fits(tables[FINITE_N])
    if fits.empty or measured is None or finite_n is None:
        return None
    nearer = (fits["fitted"] - fits["predicted"]).abs() < (fits["fitted"] - 1.0).abs()
    per_n = ", ".join(
        f"{_g(f)} (N = {n})" for n, f in zip(fits["n_tokens"], fits["fitted"], strict=True)
    )
    zeta = fits["predicted"].iloc[0]
    per_n += f" (no window within the theory depth for N = {unreached})" if unreached else ""
    return Finding(
        statistic="slope of ln J^{L,0} against ln L of the recursion over its window L << N^3, "
        "per token count N, against ζ₋ = m/(m + 2a) and the attention-free 1; pre-LN's slope "
        f"measured over the deepest factor {MEASURED_SPAN} of the measured depths against the "
        "recursion's; at few tokens N and large depth (finite_n_compare.csv), measured/theory "
        "J^{b,0} at the deepest block, mean over initializations with its 95 % bootstrap "
        "interval, for the exact and the authors' closure, and the closures whose interval "
        "covers 1 at every compared block",
        value=f"recursion {per_n}; ζ₋ = {_g(zeta)}, without attention 1; measured "
        f"{_g(measured[0])} vs recursion {_g(measured[1])}; finite N: {finite_n[0]}",
        holds=bool(nearer.all() and abs(measured[0] - measured[1]) <= SLOPE_GAP and finite_n[1]),
    )


# --- A.3: the theory on natural images in deep ViTs ---------------------------------------


def _widest(excess: pd.DataFrame) -> str:
    """'d = 768: 1.03 (Derf α=1.5, forward)': the worst full-Gram GMFE over the compared blocks
    at the widest model of the width scan, for context."""
    rows = excess[(excess["region"] == "compared") & (excess["closure"] == "gram")]
    rows = _labelled(rows[rows["width"] == rows["width"].max()])
    gmfe_mean = rows.set_index(["model", "direction"])["excess_mean"] + 1.0
    return f"d = {int(rows['width'].iloc[0])}: {_worst(gmfe_mean)}"


def image_agreement(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """GMFE of the image curves over the compared blocks (early blocks apart), mean over
    initializations and images per variant, direction and closure; and how its excess
    falls with width. Not run without a full-Gram curve or a width slope (fewer than two
    widths with a mismatch)."""
    means = _compared_means(tables, "images")
    full = means.dropna(subset="gmfe_gram")
    slopes = tables[WIDTH_SLOPES]
    slopes = slopes[(slopes["region"] == "compared") & (slopes["closure"] == "gram")]
    slopes = _labelled(slopes).dropna(subset="slope")
    if full.empty or slopes.empty:
        return None
    worst_full, full_text = _worst_ci(full, "gmfe_gram")
    return Finding(
        statistic="GMFE of the image curves over the compared blocks, mean over "
        "initializations and images (per curve the mean of the three depth regions), per "
        "variant and direction, with its 95 % bootstrap interval (initializations, then images "
        "within each): (q, p) closure and full-Gram closure; slope of ln(GMFE - 1) against "
        "ln(width) (full-Gram, width scan) with its bootstrap interval over the "
        "initializations of each width, and the full-Gram GMFE at the scan's widest model",
        value=f"(q, p) worst {_worst_ci(means, 'gmfe')[1]}; full-Gram worst {full_text}; "
        f"width slope largest {_worst_ci(slopes, 'slope')[1]}; "
        f"full-Gram at {_widest(tables[WIDTH_EXCESS])}",
        holds=bool(worst_full <= AGREES and (slopes["slope"] < 0).all()),
    )


# --- A.4: power law against stretched exponential -----------------------------------------

LAWS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "power law": np.log,
    "stretched exponential": np.sqrt,
    "exponential": lambda depth: depth,
}
"""ln J^{L,0} is linear in ln L, sqrt(L) or L."""
EXPECTED_LAW = {"ln": "power law", "derf": "stretched exponential", "dyt": "stretched exponential"}


def law_residuals(depth: np.ndarray, log_j: np.ndarray) -> dict[str, float]:
    """The RMS residual of ln J against a straight line in each law's variable."""
    out = {}
    for law, variable in LAWS.items():
        x = variable(depth)
        fit = np.polyval(np.polyfit(x, log_j, 1), x)
        out[law] = float(np.sqrt(np.mean((log_j - fit) ** 2)))
    return out


def _law_text(label: str, residuals: dict[str, float], stretch: float | None) -> str:
    """'Derf α=1: stretched exponential (next 31× its residual, stretch exponent 0.52)'."""
    best, runner = sorted(residuals, key=residuals.get)[:2]
    ratio = residuals[runner] / residuals[best] if residuals[best] > 0 else np.inf
    exponent = "" if stretch is None else f", stretch exponent {_g(stretch)}"
    return f"{label}: {best} (next {_g(ratio)}× its residual{exponent})"


def _stretch_exponents(fits: pd.DataFrame) -> dict[str, float]:
    """The fitted exponent of ln J ~ L^beta of each saturating variant, by label."""
    rows = _labelled(fits[fits["quantity"] == "stretch_exponent"])
    return dict(zip(rows["model"], rows["fitted"], strict=True))


def depth_laws(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Per variant, the law (power, stretched exponential, exponential) whose straight line
    fits ln J^{L,0} of the recursion best over the deepest decade of depths."""
    depth = tables[DEPTH]
    deep = depth[depth["depth"] >= depth["depth"].max() / LAW_WINDOW]
    stretch = _stretch_exponents(tables[ASYMPTOTICS])
    texts, matched = [], []
    for (norm, alpha), rows in deep.groupby(["norm", "alpha"], dropna=False, sort=False):
        if len(rows) < MIN_POINTS:
            return None
        label = _label(norm, alpha)
        residuals = law_residuals(rows["depth"].to_numpy(float), rows["log_apjn"].to_numpy())
        texts.append(_law_text(label, residuals, stretch.get(label)))
        matched.append(min(residuals, key=residuals.get) == EXPECTED_LAW[norm])
    if not texts:
        return None
    return Finding(
        statistic="RMS residual of ln J^{L,0} (recursion) about straight lines in ln L "
        "(power law), sqrt(L) (stretched exponential) and L (exponential) over the deepest "
        f"factor {LAW_WINDOW} of depths, the best law per variant; the fitted stretch "
        "exponent beta of ln J ~ L^beta (asymptotics.csv; theory 1/2)",
        value="; ".join(texts),
        holds=all(matched),
    )


# --- A.5: sensitivity to initialization and tuning ----------------------------------------


def multiplier_spread(end_to_end: pd.DataFrame) -> pd.DataFrame:
    """J^{L,0} at the largest over the smallest init multiplier (measured and theory, means
    over initializations and samples), per multiplier sweep and norm."""
    rows = []
    for sweep in ("attn_mult", "mlp_mult"):
        part = end_to_end[end_to_end["sweep"] == sweep]
        for norm, group in part.groupby("norm"):
            means = _means(group, [sweep], ["apjn", "apjn_theory"]).sort_values(sweep)
            if len(means) < 2:
                continue
            ratio = means.iloc[-1][["apjn", "apjn_theory"]] / means.iloc[0][["apjn", "apjn_theory"]]
            rows.append({"sweep": sweep, "norm": norm, **ratio.to_dict()})
    return pd.DataFrame(rows, columns=["sweep", "norm", "apjn", "apjn_theory"])


def _spread_text(spread: pd.DataFrame) -> str:
    return ", ".join(
        f"{s} {n} ×{_g(m)} (theory ×{_g(t)})"
        for s, n, m, t in spread[["sweep", "norm", "apjn", "apjn_theory"]].itertuples(index=False)
    )


def _point_text(row: pd.Series) -> str:
    """'0.83 [0.8, 0.86] (Derf α=1, attn_mult 2)': one sweep point's measured/theory."""
    sweep = row["sweep"]
    point = f"{_label(row['norm'], row['alpha'])}, {sweep} {row[sweep]:g}"
    return f"{_g(row['ratio'])} [{_g(row['ratio_lo'])}, {_g(row['ratio_hi'])}] ({point})"


def _ratios_text(ratios: pd.DataFrame) -> str:
    """The lowest and highest measured/theory of the sensitivity sweeps, with their bootstrap
    intervals, and how many points' intervals leave out 1."""
    off = int(((ratios["ratio_lo"] > 1) | (ratios["ratio_hi"] < 1)).sum())
    low, high = ratios.loc[ratios["ratio"].idxmin()], ratios.loc[ratios["ratio"].idxmax()]
    return (
        f"measured/theory from {_point_text(low)} to {_point_text(high)} over "
        f"{len(ratios)} points ({int(ratios['inits'].min())}+ initializations each), "
        f"{off} of whose intervals leave out 1"
    )


def _effects_text(effects: pd.DataFrame) -> str:
    """'derf alpha 0.1→4: window -2.3 rates, best +41%': each factor's effect per norm."""
    return "; ".join(
        f"{r.norm} {r.factor} {r.low:g}→{r.high:g}: window {r.window_change:+.2g} rates, "
        f"best {r.best_change:+.0%}"
        for r in effects.itertuples(index=False)
    )


def _pairs_text(pairs: pd.DataFrame, windows: pd.DataFrame) -> str:
    """The matched pairs' median |difference of best loss| against all pairs'."""
    finite = windows.loc[np.isfinite(windows["best_loss"]), "best_loss"].to_numpy()
    every = np.abs(finite[:, None] - finite[None, :])[np.triu_indices(len(finite), 1)]
    matched = (pairs["best_loss_first"] - pairs["best_loss_second"]).abs()
    matched = matched[np.isfinite(matched)]
    if not len(matched) or not len(every):
        return f"{len(pairs)} J-matched pairs"
    return (
        f"{len(pairs)} J-matched pairs (|Δ ln J| ≤ {MATCH:g}): median |Δ best loss| "
        f"{_g(float(np.median(matched)))} against {_g(float(np.median(every)))} over all pairs"
    )


def init_and_tuning(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Initialization: J^{L,0} over the init multipliers, Derf against pre-LN, and measured
    against theory over the sensitivity sweeps. Tuning: per norm and design factor, how the
    window of rates and the best loss change from the factor's smallest to its largest level
    (tuning.factor_effects). J: matched pairs and the partial correlation of the best loss with
    ln J^{L,0} given the design factors. Not run with fewer than MIN_RATES rates, one
    multiplier, one depth or no saturating map."""
    spread = multiplier_spread(tables[END_TO_END]).set_index(["sweep", "norm"])
    windows, pairs = tables[WINDOWS], tables[PAIRS]
    swept = [(s, n) in spread.index for s in ("attn_mult", "mlp_mult") for n in ("ln", "derf")]
    trained = (
        windows["rates"].min() >= MIN_RATES
        and windows["attn_mult"].nunique() >= 2
        and windows["depth"].nunique() >= 2
    )
    if not (all(swept) and trained and set(windows["norm"]) > {"ln"}):
        return None
    effects = factor_effects(windows)
    verdicts = {(r["norm"], r["factor"]): sensitive(r) for _, r in effects.iterrows()}
    saturating = all(v for (norm, _), v in verdicts.items() if norm != "ln")
    preln = not any(v for (norm, _), v in verdicts.items() if norm == "ln")
    wider = spread.xs("derf", level="norm")["apjn"] > spread.xs("ln", level="norm")["apjn"]
    rates = np.sort(tables[TRAINABILITY]["lr"].unique())
    return Finding(
        statistic="J^{L,0} at the largest over the smallest init multiplier (measured), per "
        "multiplier sweep, and measured/theory J^{L,0} at every point of the sensitivity sweeps "
        "(mean over initializations, 95 % bootstrap interval); per norm and design factor "
        "(α₀, init multiplier, depth), from its smallest to its largest level at equal other "
        "factors, the mean change of the window "
        f"(rates of {len(rates)}, {_g(rates[0])} to {_g(rates[-1])}, whose mean final loss is "
        f"within {TOLERANCE:.0%} of the best) and of the best loss; J-matched pairs; the partial "
        "correlation of the best loss with ln J^{L,0} given the design factors",
        value=f"{_spread_text(spread.reset_index())}; {_ratios_text(tables[RATIOS])}; "
        f"{_effects_text(effects)}; "
        f"{_pairs_text(pairs, windows)}; partial r {_g(partial_correlation(windows))}; "
        f"diverged runs {int(windows['diverged'].sum())}, loss spikes "
        f"{int(windows['loss_spikes'].sum())}, gradient blow-ups "
        f"{int(windows['grad_blowups'].sum())} in {int(windows['runs'].sum())} runs",
        holds=bool(wider.all() and saturating and preln),
    )


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="A.1",
        statement="At initialization, a ViT with bidirectional attention and "
        "permutation-symmetric input follows closed recursions for its token statistics and "
        "its APJN.",
        criterion=f"every variant and direction: the averaged APJN curve and the averaged q "
        f"within GMFE {AGREES:g} of the recursion, p/q within {CORRELATION_GAP:g}; a larger "
        "deviation contradicts it (the APJN GMFE's bootstrap interval is context)",
        figure="A1",
        tables=(CURVES, AGREEMENT),
        test=permsym_recursions,
    ),
    ClaimSpec(
        id="A.2",
        statement="Attention changes the large-depth asymptotics of the APJN as the theory "
        "predicts: pre-LN grows as L^ζ₋ with ζ₋ = m/(m + 2a) < 1, not as L.",
        criterion="for every token count N the recursion's exponent lies nearer ζ₋ than the "
        f"attention-free 1; the measured pre-LN exponent within {SLOPE_GAP:g} of the "
        "recursion's at the same depths; and with identical tokens (attention exactly "
        "uniform) at every few-token count N, the exact or the authors' closure with a "
        "measured/theory interval covering 1 at every compared block. An exponent nearer 1, a "
        "measured one off the recursion, or identical-token J^{b,0} outside both closures "
        "contradicts it. The generic input (attention not exactly uniform, which both closures "
        "assume) and which closure fits are context: the closures share ζ₋ and differ in ζ₊",
        figure="A4",
        tables=(ASYMPTOTICS, END_TO_END, FINITE_N),
        test=attention_exponent,
    ),
    ClaimSpec(
        id="A.3",
        statement="The theory matches the APJNs measured in deep ViTs on natural images.",
        criterion="every variant and direction (pre-LN and Derf: DyT has no full-Gram "
        f"closure): full-Gram GMFE over the compared blocks within {AGREES:g}, and its excess "
        "falling with width (negative slope); a larger GMFE, or one that does not fall with "
        "width (the closure's own error), contradicts it (the bootstrap intervals are context)",
        figure="A3",
        tables=(AGREEMENT, WIDTH_EXCESS, WIDTH_SLOPES),
        test=image_agreement,
    ),
    ClaimSpec(
        id="A.4",
        statement="With pre-LN the APJN grows as a power law in depth; with the tanh-like "
        "maps DyT and Derf as a stretched exponential, subcritical (slower than exponential).",
        criterion="the best-fitting law is the power law for pre-LN and the stretched "
        "exponential for every Derf and DyT variant; any other best law contradicts it",
        figure="A4",
        tables=(DEPTH, ASYMPTOTICS),
        test=depth_laws,
    ),
    ClaimSpec(
        id="A.5",
        statement="DyT and Derf are more sensitive to initialization and optimization and "
        "need careful tuning.",
        criterion="Derf's J^{L,0} spreads more than pre-LN's over each init multiplier sweep; "
        "for Derf and DyT each of α₀, init multiplier and depth, from its smallest to its "
        "largest level, narrows the window of rates within "
        f"{TOLERANCE:.0%} of the best by at least one rate or raises the best loss by more "
        f"than {TOLERANCE:.0%}, and neither multiplier nor depth does so for pre-LN; any of "
        "these reversed contradicts it. The partial correlation with ln J^{L,0} says whether "
        "the theory's APJN carries the effect beyond the design factors, and measured/theory "
        "over the sensitivity sweeps whether the theory describes the spread (context)",
        figure="A7",
        tables=(END_TO_END, RATIOS, TRAINABILITY, WINDOWS, PAIRS),
        test=init_and_tuning,
    ),
)
