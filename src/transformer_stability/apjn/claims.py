"""Study A's claims: each sentence-level claim of the abstract, tested on the run's tables by
terms whose intervals decide the verdict (transformer_stability.verdicts): bootstraps over the
initializations or training seeds of the measured tables, the intervals the agreement tables
carry, and exact values for the theory. The rows of results/claims.csv and claim_terms.csv;
docs/apjn.md ("Claims") states the same statistics and criteria in words."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.closures import closure_apjn, compared_blocks
from transformer_stability.apjn.names import NormName
from transformer_stability.apjn.style import variant_label
from transformer_stability.apjn.tables import (
    CLOSURES,
    AgreementMeans,
    Asymptotics,
    EndToEnd,
    FiniteN,
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
from transformer_stability.apjn.tuning import (
    CONFIG,
    MATCH,
    TOLERANCE,
    partial_correlation,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.tables import meta
from transformer_stability.verdicts import (
    Estimate,
    Term,
    above,
    at_least,
    at_most,
    below,
    bootstrap,
    nearer,
    within,
)

CURVES = meta(MeasuredCurves)["path"]
AGREEMENT = meta(AgreementMeans)["path"]
WIDTH_EXCESS = meta(WidthExcess)["path"]
WIDTH_SLOPES = meta(WidthSlopes)["path"]
ASYMPTOTICS = meta(Asymptotics)["path"]
DEPTH = meta(TheoryDepth)["path"]
END_TO_END = meta(EndToEnd)["path"]
RATIOS = meta(SensitivityRatios)["path"]
TRAINABILITY = meta(Trainability)["path"]
WINDOWS = meta(TuningWindows)["path"]
PAIRS = meta(MatchedPairs)["path"]
FINITE_N = meta(FiniteN)["path"]
FINITE_N_COMPARE = meta(FiniteNCompare)["path"]

AGREES = 1.05
"""The GMFE at which a measured curve agrees with the theory (the line A3 and A9 draw); also
the largest fold error at any compared block at which a closure describes J^{b,0} (A.2)."""
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

A1_STATISTIC = (
    "GMFE of the APJN curves averaged over initializations and samples, against "
    "the recursion, per variant and direction, with its 95 % bootstrap interval "
    "(initializations, then samples within each); per variant, GMFE of the averaged q and "
    "largest gap in p/q along depth, with 95 % bootstrap intervals over initializations"
)

A2_STATISTIC = (
    "slope of ln J^{L,0} against ln L of the recursion over its window L << N^3, "
    "per token count N, against ζ₋ = m/(m + 2a) and the attention-free 1 (exact); pre-LN's "
    f"slope measured over the deepest factor {MEASURED_SPAN} of the measured depths minus "
    "the recursion's, with its 95 % bootstrap interval over initializations; at few tokens "
    "N and large depth with identical tokens (finite_n.csv), the largest fold error of the "
    "mean measured/theory J^{b,0} over the compared blocks in the better of the exact and "
    "the authors' closure, with its 95 % bootstrap interval over initializations"
)

A3_STATISTIC = (
    "GMFE of the image curves over the compared blocks, mean over "
    "initializations and images (per curve the mean of the three depth regions), per "
    "variant and direction, with its 95 % bootstrap interval (initializations, then images "
    "within each): full-Gram closure, and the (q, p) closure for context; slope of "
    "ln(GMFE - 1) against ln(width) (full-Gram, width scan) with its bootstrap interval "
    "over the initializations of each width, and the full-Gram GMFE at the scan's widest "
    "model"
)

A4_STATISTIC = (
    "RMS residual of ln J^{L,0} (recursion) about straight lines in ln L "
    "(power law), sqrt(L) (stretched exponential) and L (exponential) over the deepest "
    f"factor {LAW_WINDOW} of depths; per variant the expected law's residual over the "
    "smallest other law's (exact); the fitted stretch exponent beta of ln J ~ L^beta "
    "(asymptotics.csv; theory 1/2)"
)

A5_STATISTIC = (
    "Derf's J^{{L,0}} at the largest over the smallest init multiplier (measured) over "
    "pre-LN's, per multiplier sweep, with its 95 % bootstrap interval over initializations; "
    "per norm and design factor (α₀, init multiplier, depth), from its smallest to its largest "
    "level at equal other factors, the mean change of the window (rates of {rates}, {low} to "
    "{high}, whose mean final loss over seeds is within {tolerance} of the best) and of the "
    "best loss, with 95 % bootstrap intervals over training seeds; context: measured/theory "
    "J^{{L,0}} over the sensitivity sweeps, J-matched pairs, the partial correlation of the best "
    "loss with ln J^{{L,0}} given the design factors"
)
"""What each claim's Finding says it computed (A.5 with its grid of rates)."""

INITS, SEEDS = "initializations", "training seeds"
NESTED = "bootstrap over initializations, then {} within each"
FACTOR_NAMES = {"alpha": "α₀", "attn_mult": "multiplier", "depth": "depth"}


def _g(value: float) -> str:
    return f"{value:.3g}"


def _label(norm: NormName, alpha: float) -> str:
    return variant_label(norm, None if pd.isna(alpha) else float(alpha))


def _labelled(means: pd.DataFrame) -> pd.DataFrame:
    labels = [_label(n, a) for n, a in zip(means["norm"], means["alpha"], strict=True)]
    return means.assign(model=labels)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


def grid_means(
    frame: pd.DataFrame, keys: list[str], columns: list[str]
) -> tuple[list[pd.Index], dict[str, np.ndarray]]:
    """The levels of each of `keys` (sorted distinct values, NaN last) and the mean of each of
    `columns` in every cell of their grid (NaN in a cell without rows). By np.bincount: a
    bootstrap recomputes it on each of its resamples, where a groupby would take seconds."""
    codes, levels = zip(
        *(pd.factorize(frame[k], sort=True, use_na_sentinel=False) for k in keys), strict=True
    )
    shape = tuple(len(level) for level in levels)
    cells = np.ravel_multi_index(codes, shape)
    count = np.bincount(cells, minlength=int(np.prod(shape)))
    with np.errstate(invalid="ignore"):  # 0 / 0: a cell without rows
        means = {
            c: (np.bincount(cells, frame[c].to_numpy(float), count.size) / count).reshape(shape)
            for c in columns
        }
    return list(levels), means


def labelled(values: Mapping[tuple, float]) -> pd.Series:
    """`values` as a Series on an index of tuples: a bootstrap statistic's result, built in
    microseconds where a MultiIndex takes milliseconds."""
    return pd.Series(list(values.values()), pd.Index(list(values), tupleize_cols=False), float)


def _where(label: Any) -> str:
    return ", ".join(str(k) for k in np.atleast_1d(label))


def _worst(estimates: Mapping[Any, Estimate]) -> str:
    """'1.02 [1.01, 1.03] (Derf α=1.5, backward)': the largest point value, its interval and
    where it is."""
    label = max(estimates, key=lambda k: estimates[k].point)
    return f"{estimates[label].text()} ({_where(label)})"


def _terms(name: str, estimates: Mapping[Any, Estimate], criterion: Any) -> tuple[Term, ...]:
    """One term per label: '<name>, <label>'."""
    return tuple(Term(f"{name}, {_where(k)}", e, criterion) for k, e in estimates.items())


def _carried(rows: pd.DataFrame, column: str, basis: str, units: int) -> dict[Any, Estimate]:
    """The Estimates of `column` whose bootstrap interval a table carries (`column`_lo, _hi),
    by (model, direction)."""
    return {
        (r["model"], r["direction"]): Estimate(
            float(r[column]), float(r[f"{column}_lo"]), float(r[f"{column}_hi"]), basis, units,
            INITS,
        )
        for _, r in rows.iterrows()
    }  # fmt: skip


def _compared_means(tables: Tables, kind: str) -> pd.DataFrame:
    """The labelled rows of agreement_means.csv for input `kind` over every compared block."""
    means = tables[AGREEMENT]
    return _labelled(means[(means["input"] == kind) & (means["region"] == "compared")])


# --- A.1: the recursions on permutation-symmetric input ------------------------------------


CURVE_COLUMNS = ["model", "norm", "alpha", "init_seed", "block", "q", "q_theory", "p", "p_theory"]
"""The columns the bootstrap of A.1 reads (fewer columns, faster resamples)."""


def token_statistics(curves: pd.DataFrame) -> pd.Series:
    """Per variant ('model'), the GMFE of the averaged q against the recursion's and the
    largest gap of the averaged p/q from the recursion's, over the blocks of the forward
    curves (averaged over initializations and samples): indexed (statistic, model)."""
    (models, _), m = grid_means(curves, ["model", "block"], ["q", "q_theory", "p", "p_theory"])
    q = np.exp(np.nanmean(np.abs(np.log(m["q"] / m["q_theory"])), axis=1))
    gap = np.nanmax(np.abs(m["p"] / m["q"] - m["p_theory"] / m["q_theory"]), axis=1)
    values = {("q GMFE", model): v for model, v in zip(models, q, strict=True)}
    return labelled(values | {("p/q gap", model): v for model, v in zip(models, gap, strict=True)})


def permsym_recursions(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """GMFE of the averaged APJN curves (per variant and direction) with the interval of
    agreement_means.csv, and the GMFE of the averaged q and the largest p/q gap per variant,
    bootstrapped over initializations, on the permutation-symmetric input, source block left
    out."""
    curves = tables[CURVES]
    curves = curves[
        (curves["input"] == "equiangular") & (curves["block"] != curves["source_block"])
    ]
    if curves.empty:
        return None
    inits = int(curves.groupby(["norm", "alpha"], dropna=False)["init_seed"].nunique().min())
    means = _compared_means(tables, "equiangular")
    apjn = _carried(means, "gmfe_averaged", NESTED.format("samples"), inits)
    forward = _labelled(curves[curves["direction"] == "forward"])[CURVE_COLUMNS]  # blocks once
    stats = bootstrap(forward, token_statistics, "init_seed", INITS, strata=["norm", "alpha"])
    q = {k[1]: e for k, e in stats.items() if k[0] == "q GMFE"}
    gap = {k[1]: e for k, e in stats.items() if k[0] == "p/q gap"}
    return Finding(
        statistic=A1_STATISTIC,
        value=f"APJN GMFE worst {_worst(apjn)}; q GMFE worst {_worst(q)}; "
        f"largest p/q gap {_worst(gap)}",
        terms=_terms("APJN GMFE", apjn, at_most(AGREES))
        + _terms("q GMFE", q, at_most(AGREES))
        + _terms("p/q gap", gap, at_most(CORRELATION_GAP)),
    )


# --- A.2: attention changes the depth exponent --------------------------------------------


def exponents(rows: pd.DataFrame) -> pd.Series:
    """d ln J / d ln L over the deepest factor MEASURED_SPAN of the depths of `rows`, measured
    (mean over initializations and samples) and of the recursion seeded by each input, and
    their gap."""
    (depths,), means = grid_means(rows, ["depth"], ["apjn", "apjn_theory"])
    deep = depths.to_numpy(float) >= depths.max() / MEASURED_SPAN
    x = np.log(depths.to_numpy(float)[deep])
    measured = _slope(x, np.log(means["apjn"][deep]))
    theory = _slope(x, np.log(means["apjn_theory"][deep]))
    return pd.Series({"measured": measured, "recursion": theory, "gap": measured - theory})


DEPTH_COLUMNS = ["depth", "init_seed", "apjn", "apjn_theory"]
"""The columns the bootstrap of the measured exponent reads (fewer columns, faster resamples)."""


def _depth_rows(end_to_end: pd.DataFrame) -> pd.DataFrame | None:
    """Pre-LN's rows of the depth sweep; None below MIN_POINTS depths in the fit."""
    rows = end_to_end[(end_to_end["sweep"] == "depth") & (end_to_end["norm"] == "ln")]
    depths = rows["depth"].unique()
    enough = (depths >= depths.max(initial=0) / MEASURED_SPAN).sum() >= MIN_POINTS
    return rows if enough else None


def closure_ratios(finite_n: pd.DataFrame) -> pd.DataFrame:
    """Measured/theory J^{b,0} per initialization, token count, closure and compared block, of
    the identical-token rows of finite_n.csv (each initialization against the closure seeded
    by its own a, m, q0, p0, as in finite_n_compare.csv)."""
    frames = []
    identical = finite_n[finite_n["input"] == "identical"]
    for (n, init), curve in identical.groupby(["n_tokens", "init_seed"], sort=True):
        curve = curve.sort_values("block")
        blocks = compared_blocks(int(curve["depth"].iloc[0]))
        measured = curve["apjn"].to_numpy()[blocks]
        for closure in CLOSURES:
            ratio = measured / closure_apjn(curve, closure == "exact")[blocks]
            ids = {"n_tokens": n, "init_seed": init, "closure": closure}
            frames.append(pd.DataFrame({**ids, "block": blocks, "ratio": ratio}))
    return pd.concat(frames, ignore_index=True)


def closure_fold_error(ratios: pd.DataFrame) -> pd.Series:
    """Per token count: the largest fold error exp|ln r| over the compared blocks of the mean
    measured/theory r, in the closure where it is smaller (either closure may fit)."""
    (counts, _, _), means = grid_means(ratios, ["n_tokens", "closure", "block"], ["ratio"])
    worst = np.nanmax(np.abs(np.log(means["ratio"])), axis=2)
    return pd.Series(np.exp(worst.min(axis=1)), counts)


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


def finite_n_text(compare: pd.DataFrame) -> str:
    """Per token count N and input of finite_n_compare.csv: measured/theory at the deepest
    compared block for both closures (mean, bootstrap interval) and the closures whose interval
    covers 1 at every compared block (context)."""
    texts = []
    for (n, kind), group in compare.groupby(["n_tokens", "input"], sort=True):
        deepest = group.loc[group["block"].idxmax()]
        fitting = " and ".join(_fitting_closures(group)) or "neither"
        ratios = ", ".join(_ratio_text(deepest, c) for c in CLOSURES)
        texts.append(
            f"N = {n} {kind}, L = {int(deepest['block'])}: {ratios}; covers 1 at every "
            f"block: {fitting}"
        )
    return "; ".join(texts)


def _exponent_terms(fits: pd.DataFrame) -> tuple[Term, ...]:
    """The recursion's exponent per token count against ζ₋ and 1: exact (theory)."""
    return tuple(
        Term(f"recursion exponent, N = {n}", Estimate.exact(f), nearer(z, [1.0]))
        for n, f, z in zip(fits["n_tokens"], fits["fitted"], fits["predicted"], strict=True)
    )


def attention_exponent(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Pre-LN's exponent of J^{L,0} ~ L^zeta fitted on the recursion for L << N^3 against
    zeta_- = m/(m + 2a) (with attention) and 1 (without), for every token count N whose window
    the theory reaches (exact); the exponent measured in the built ViTs minus the recursion's
    over the same depths, bootstrapped over initializations; and, at few tokens and large
    depth with identical tokens, the worst fold error of J^{b,0} over the compared blocks in
    the better closure, bootstrapped over initializations."""
    zeta_minus = tables[ASYMPTOTICS].query("quantity == 'zeta_minus'")
    fits = zeta_minus[zeta_minus["fitted"].notna()]
    unreached = ", ".join(str(n) for n in zeta_minus.loc[zeta_minus["fitted"].isna(), "n_tokens"])
    depth_rows = _depth_rows(tables[END_TO_END])
    finite_n = tables[FINITE_N]
    if fits.empty or depth_rows is None or not (finite_n["input"] == "identical").any():
        return None
    slopes = bootstrap(depth_rows[DEPTH_COLUMNS], exponents, "init_seed", INITS)
    folds = bootstrap(closure_ratios(finite_n), closure_fold_error, "init_seed", INITS)
    per_n = ", ".join(
        f"{_g(f)} (N = {n})" for n, f in zip(fits["n_tokens"], fits["fitted"], strict=True)
    )
    per_n += f" (no window within the theory depth for N = {unreached})" if unreached else ""
    fold_text = ", ".join(f"N = {n}: {e.text()}" for n, e in folds.items())
    return Finding(
        statistic=A2_STATISTIC,
        value=f"recursion {per_n}; ζ₋ = {_g(fits['predicted'].iloc[0])}, without attention 1; "
        f"measured {slopes['measured'].text()} vs recursion {slopes['recursion'].text()}; "
        f"identical-token fold error {fold_text}; finite N: "
        f"{finite_n_text(tables[FINITE_N_COMPARE])}",
        terms=_exponent_terms(fits)
        + (
            Term(
                "measured − recursion exponent, pre-LN",
                slopes["gap"],
                within(-SLOPE_GAP, SLOPE_GAP),
            ),
        )
        + tuple(
            Term(f"closure fold error, identical tokens, N = {n}", e, at_most(AGREES))
            for n, e in folds.items()
        ),
    )


# --- A.3: the theory on natural images in deep ViTs ---------------------------------------


def _widest(excess: pd.DataFrame) -> str:
    """'d = 768: 1.03 (Derf α=1.5, forward)': the worst full-Gram GMFE over the compared blocks
    at the widest model of the width scan, for context."""
    rows = excess[(excess["region"] == "compared") & (excess["closure"] == "gram")]
    width = rows["width"].max()
    rows = _labelled(rows[rows["width"] == width])
    gmfe_mean = rows.set_index(["model", "direction"])["excess_mean"] + 1.0
    return f"d = {int(width)}: {_g(gmfe_mean.max())} ({_where(gmfe_mean.idxmax())})"


def image_agreement(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Full-Gram GMFE of the image curves over the compared blocks (early blocks apart), mean
    over initializations and images per variant and direction, and the slope of its excess
    against width, each with the bootstrap interval its table carries. Not run without a
    full-Gram curve or a width slope (fewer than two widths with a mismatch)."""
    means = _compared_means(tables, "images")
    full = means.dropna(subset="gmfe_gram")
    slopes = tables[WIDTH_SLOPES]
    slopes = slopes[(slopes["region"] == "compared") & (slopes["closure"] == "gram")]
    slopes = _labelled(slopes).dropna(subset="slope")
    if full.empty or slopes.empty:
        return None

    def carried(rows: pd.DataFrame, column: str) -> dict[Any, Estimate]:
        return _carried(rows, column, NESTED.format("images"), section["measure"]["inits"])

    gram, qp = carried(full, "gmfe_gram"), carried(means, "gmfe")
    scan = _carried(slopes, "slope", "bootstrap over the initializations of each width",
                    section["width_scan"]["inits"])  # fmt: skip
    return Finding(
        statistic=A3_STATISTIC,
        value=f"(q, p) worst {_worst(qp)}; full-Gram worst {_worst(gram)}; "
        f"width slope largest {_worst(scan)}; full-Gram at {_widest(tables[WIDTH_EXCESS])}",
        terms=_terms("full-Gram GMFE", gram, at_most(AGREES))
        + _terms("width slope", scan, below(0)),
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


def expected_share(residuals: dict[str, float], expected: str) -> float:
    """The expected law's residual over the smallest of the other laws': below 1 exactly when
    the expected law fits best."""
    rival = min(r for law, r in residuals.items() if law != expected)
    return residuals[expected] / rival


def depth_laws(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Per variant, whether the expected law (power law for pre-LN, stretched exponential for
    the saturating maps) fits ln J^{L,0} of the recursion over the deepest decade of depths
    better than every other law: the ratio of residuals, exact (theory)."""
    depth = tables[DEPTH]
    deep = depth[depth["depth"] >= depth["depth"].max() / LAW_WINDOW]
    stretch = _stretch_exponents(tables[ASYMPTOTICS])
    texts, terms = [], []
    for (norm, alpha), rows in deep.groupby(["norm", "alpha"], dropna=False, sort=False):
        if len(rows) < MIN_POINTS:
            return None
        label = _label(norm, alpha)
        residuals = law_residuals(rows["depth"].to_numpy(float), rows["log_apjn"].to_numpy())
        texts.append(_law_text(label, residuals, stretch.get(label)))
        share = expected_share(residuals, EXPECTED_LAW[norm])
        terms.append(Term(f"{EXPECTED_LAW[norm]} residual / best rival's, {label}",
                          Estimate.exact(share), below(1)))  # fmt: skip
    if not terms:
        return None
    return Finding(
        statistic=A4_STATISTIC,
        value="; ".join(texts),
        terms=tuple(terms),
    )


# --- A.5: sensitivity to initialization and tuning ----------------------------------------


def multiplier_spread(end_to_end: pd.DataFrame) -> pd.DataFrame:
    """J^{L,0} at the largest over the smallest init multiplier (measured and theory, means
    over initializations and samples), per multiplier sweep and norm."""
    rows = []
    for sweep in ("attn_mult", "mlp_mult"):
        part = end_to_end[end_to_end["sweep"] == sweep]
        for norm, group in part.groupby("norm"):
            means = group.groupby(sweep)[["apjn", "apjn_theory"]].mean().sort_index()
            if len(means) < 2:
                continue
            ratio = means.iloc[-1] / means.iloc[0]
            rows.append({"sweep": sweep, "norm": norm, **ratio.to_dict()})
    return pd.DataFrame(rows, columns=["sweep", "norm", "apjn", "apjn_theory"])


SWEEP_COLUMNS = ["sweep", "norm", "attn_mult", "mlp_mult", "init_seed", "apjn"]
TRAIN_COLUMNS = [*CONFIG, "lr", "train_seed", "final_loss", "diverged"]
"""The columns the bootstraps of A.5 read (fewer columns, faster resamples)."""


def spread_contrast(sweeps: pd.DataFrame) -> pd.Series:
    """Per multiplier sweep (rows of end_to_end.csv of the attn_mult and mlp_mult sweeps):
    Derf's measured spread J^{L,0}(largest multiplier)/J^{L,0}(smallest) over pre-LN's, means
    over initializations and samples."""
    mult = np.where(sweeps["sweep"] == "attn_mult", sweeps["attn_mult"], sweeps["mlp_mult"])
    (names, norms, _), means = grid_means(sweeps.assign(mult=mult), ["sweep", "norm", "mult"],
                                          ["apjn"])  # fmt: skip
    spread = {}
    for (i, sweep), (j, norm) in itertools.product(enumerate(names), enumerate(norms)):
        swept = means["apjn"][i, j][~np.isnan(means["apjn"][i, j])]
        spread[(sweep, norm)] = swept[-1] / swept[0] if len(swept) >= 2 else np.nan
    return pd.Series({s: spread[(s, "derf")] / spread[(s, "ln")] for s in names})


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


def factor_levels(train: pd.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """Per norm and design factor with two levels or more: its smallest and largest level."""
    out = {}
    for norm, part in train.groupby("norm"):
        for factor in FACTOR_NAMES:
            levels = part[factor].dropna()
            if levels.nunique() >= 2:
                out[(norm, factor)] = (levels.min(), levels.max())
    return out


def _factor_effect(
    window: np.ndarray, best: np.ndarray, present: np.ndarray, axis: int, levels: pd.Index
) -> tuple[float, float] | None:
    """(window change, relative best-loss change) of one norm's configurations (arrays over
    its factors' grid) from the smallest to the largest trained level along `axis`, mean over
    the other factors' configurations trained at both; None with fewer than two levels."""
    trained_at = np.moveaxis(present, axis, 0).reshape(len(levels), -1).any(axis=1)
    trained = np.flatnonzero(trained_at & levels.notna())
    if len(trained) < 2:
        return None
    low, high = trained[0], trained[-1]
    both = np.take(present, low, axis) & np.take(present, high, axis)

    def change(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.take(value, high, axis)[both], np.take(value, low, axis)[both]

    (window_high, window_low), (best_high, best_low) = change(window), change(best)
    with np.errstate(invalid="ignore"):  # inf / inf: neither level ever trained
        return float(np.mean(window_high - window_low)), float(np.mean(best_high / best_low - 1))


def tuning_effects(train: pd.DataFrame) -> pd.Series:
    """Per norm and design factor with two levels or more, from trainability rows: the mean
    change of the window (rates whose mean final loss over seeds is within TOLERANCE of the
    configuration's best; a diverged seed counts as an infinite loss) and the mean relative
    change of the best loss from the factor's smallest to its largest level at equal other
    factors, and their sensitivity max(-window change, best change / TOLERANCE), which is
    >= 1 exactly when the factor narrows the window by a rate or more or raises the best loss
    by TOLERANCE or more (tuning.rate_windows and factor_effects, on a grid for the
    bootstrap). Indexed (quantity, norm, factor)."""
    loss = train["final_loss"].where(~train["diverged"], np.inf)
    levels, means = grid_means(train.assign(loss=loss), [*CONFIG, "lr"], ["loss"])
    losses = means["loss"]
    present = (~np.isnan(losses)).any(axis=-1)
    best = np.where(np.isnan(losses), np.inf, losses).min(axis=-1)
    window = ((losses <= best[..., None] * (1 + TOLERANCE)) & np.isfinite(best)[..., None]).sum(-1)
    out = {}
    for (n, norm), (axis, factor) in itertools.product(enumerate(levels[0]), enumerate(CONFIG[1:])):
        effect = _factor_effect(window[n], best[n], present[n], axis, levels[axis + 1])
        if effect is not None:
            out[("window", norm, factor)], out[("best", norm, factor)] = effect
            out[("sensitivity", norm, factor)] = float(np.fmax(-effect[0], effect[1] / TOLERANCE))
    return labelled(out)


def _effect_text(effects: Mapping[Any, Estimate], levels: Mapping[tuple[str, str], tuple]) -> str:
    """'derf alpha 0.1→4: window -2.3 [-3, -1.7] rates, best +0.41 [0.3, 0.5]'."""
    return "; ".join(
        f"{norm} {factor} {low:g}→{high:g}: window {effects[('window', norm, factor)].text()} "
        f"rates, best {effects[('best', norm, factor)].text()}"
        for (norm, factor), (low, high) in levels.items()
    )


def _tuning_terms(
    effects: Mapping[Any, Estimate], levels: Mapping[tuple[str, str], tuple]
) -> tuple[Term, ...]:
    """A saturating norm's factor must make training sensitive (window narrowed by a rate or
    best loss raised by TOLERANCE); pre-LN's must do neither."""
    terms = []
    for norm, factor in levels:
        where = f"{_label(norm, np.nan)} {FACTOR_NAMES[factor]}"
        window, best, either = (
            effects[(q, norm, factor)] for q in ("window", "best", "sensitivity")
        )
        if norm == "ln":
            terms.append(Term(f"window change, {where}", window, above(-1)))
            terms.append(Term(f"best-loss change, {where}", best, at_most(TOLERANCE)))
        else:
            terms.append(Term(f"sensitivity, {where}", either, at_least(1)))
    return tuple(terms)


def init_and_tuning(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Initialization: Derf's spread of J^{L,0} over each init multiplier sweep over pre-LN's,
    bootstrapped over initializations. Tuning: per norm and design factor, how the window of
    rates and the best loss change from the factor's smallest to its largest level,
    bootstrapped over training seeds. Context: measured against theory over the sensitivity
    sweeps, J-matched pairs and the partial correlation of the best loss with ln J^{L,0} given
    the design factors. Not run with fewer than MIN_RATES rates, one multiplier, one depth or
    no saturating map."""
    ends, windows, train = tables[END_TO_END], tables[WINDOWS], tables[TRAINABILITY]
    spread = multiplier_spread(ends).set_index(["sweep", "norm"])
    swept = [(s, n) in spread.index for s in ("attn_mult", "mlp_mult") for n in ("ln", "derf")]
    trained = (
        windows["rates"].min() >= MIN_RATES
        and windows["attn_mult"].nunique() >= 2
        and windows["depth"].nunique() >= 2
    )
    if not (all(swept) and trained and set(windows["norm"]) > {"ln"}):
        return None
    sweeps = ends.loc[ends["sweep"].isin(["attn_mult", "mlp_mult"]), SWEEP_COLUMNS]
    contrast = bootstrap(sweeps, spread_contrast, "init_seed", INITS)
    levels = factor_levels(train)
    effects = bootstrap(train[TRAIN_COLUMNS], tuning_effects, "train_seed", SEEDS)
    rates = np.sort(train["lr"].unique())
    return Finding(
        statistic=A5_STATISTIC.format(
            rates=len(rates), low=_g(rates[0]), high=_g(rates[-1]), tolerance=f"{TOLERANCE:.0%}"
        ),
        value=f"{_spread_text(spread.reset_index())}; Derf's spread over pre-LN's "
        + ", ".join(f"{s} {e.text()}" for s, e in contrast.items())
        + f"; {_ratios_text(tables[RATIOS])}; {_effect_text(effects, levels)}; "
        f"{_pairs_text(tables[PAIRS], windows)}; partial r {_g(partial_correlation(windows))}; "
        f"diverged runs {int(windows['diverged'].sum())}, loss spikes "
        f"{int(windows['loss_spikes'].sum())}, gradient blow-ups "
        f"{int(windows['grad_blowups'].sum())} in {int(windows['runs'].sum())} runs",
        terms=tuple(
            Term(f"Derf's J spread over pre-LN's, {s}", e, above(1)) for s, e in contrast.items()
        )
        + _tuning_terms(effects, levels),
    )


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="A.1",
        statement="At initialization, a ViT with bidirectional attention and "
        "permutation-symmetric input follows closed recursions for its token statistics and "
        "its APJN.",
        criterion=f"every variant and direction: the averaged APJN curve's GMFE against the "
        f"recursion at most {AGREES:g}, and per variant the averaged q's GMFE at most "
        f"{AGREES:g} and the largest p/q gap at most {CORRELATION_GAP:g}, each over its whole "
        "95 % bootstrap interval (initializations, with their samples); any of them above its "
        "bound over its whole interval contradicts it",
        figure="A1",
        tables=(CURVES, AGREEMENT),
        test=permsym_recursions,
        units={CURVES: ("init_seed",)},
    ),
    ClaimSpec(
        id="A.2",
        statement="Attention changes the large-depth asymptotics of the APJN as the theory "
        "predicts: pre-LN grows as L^ζ₋ with ζ₋ = m/(m + 2a) < 1, not as L.",
        criterion="for every token count N whose window the theory reaches, the recursion's "
        "exponent nearer ζ₋ than the attention-free 1 (exact); the measured pre-LN exponent "
        f"minus the recursion's at the same depths within ±{SLOPE_GAP:g} over its whole "
        "bootstrap interval (initializations); and with identical tokens (attention exactly "
        "uniform) at every few-token count N, measured/theory J^{b,0} within a fold error of "
        f"{AGREES:g} (the agreement line of A.1 and A.3) at every compared block in the exact "
        "or the authors' closure, over the whole bootstrap interval of the worst block's fold "
        "error (initializations). The generic input (attention not exactly uniform, which both "
        "closures assume), which closure fits and whether an interval covers 1 are context: "
        "the closures share ζ₋ and differ in ζ₊",
        figure="A4",
        tables=(ASYMPTOTICS, END_TO_END, FINITE_N, FINITE_N_COMPARE),
        test=attention_exponent,
        units={END_TO_END: ("init_seed",), FINITE_N: ("init_seed",)},
    ),
    ClaimSpec(
        id="A.3",
        statement="The theory matches the APJNs measured in deep ViTs on natural images.",
        criterion="every variant and direction (pre-LN and Derf: DyT has no full-Gram "
        f"closure): full-Gram GMFE over the compared blocks at most {AGREES:g} over its whole "
        "bootstrap interval (initializations, with their images), and its excess falling with "
        "width: the slope of ln(GMFE - 1) against ln(width) negative over its whole bootstrap "
        "interval (initializations of each width); either beyond its bound over its whole "
        "interval contradicts it",
        figure="A3",
        tables=(AGREEMENT, WIDTH_EXCESS, WIDTH_SLOPES),
        test=image_agreement,
    ),
    ClaimSpec(
        id="A.4",
        statement="With pre-LN the APJN grows as a power law in depth; with the tanh-like "
        "maps DyT and Derf as a stretched exponential, subcritical (slower than exponential).",
        criterion="per variant the expected law's residual below every other law's (exact: "
        "the recursion has no sampling noise): the power law for pre-LN and the stretched "
        "exponential for every Derf and DyT variant; any other best law contradicts it",
        figure="A4",
        tables=(DEPTH, ASYMPTOTICS),
        test=depth_laws,
    ),
    ClaimSpec(
        id="A.5",
        statement="DyT and Derf are more sensitive to initialization and optimization and "
        "need careful tuning.",
        criterion="over its whole bootstrap interval (initializations), Derf's spread of "
        "J^{L,0} over each init multiplier sweep above pre-LN's (one ratio per sweep); for the "
        "trained saturating maps each of α₀, init multiplier and depth, from its smallest to "
        "its largest level, narrowing the window of rates within "
        f"{TOLERANCE:.0%} of the best by at least one rate or raising the best loss by at "
        f"least {TOLERANCE:.0%} (max(-window change, best change / {TOLERANCE:g}) >= 1), and "
        "for pre-LN neither multiplier nor depth doing either (window change above -1, best "
        f"change at most {TOLERANCE:.0%}), each over its whole bootstrap interval (training "
        "seeds); any of these reversed over its whole interval contradicts it. The partial "
        "correlation with ln J^{L,0} says whether the theory's APJN carries the effect beyond "
        "the design factors, and measured/theory over the sensitivity sweeps whether the "
        "theory describes the spread (context)",
        figure="A7",
        tables=(END_TO_END, RATIOS, TRAINABILITY, WINDOWS, PAIRS),
        test=init_and_tuning,
        units={END_TO_END: ("init_seed",), TRAINABILITY: ("train_seed",)},
    ),
)
