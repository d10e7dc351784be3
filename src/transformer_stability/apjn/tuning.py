"""Tuning windows: what the trainability grid says about "needs careful tuning".

Per trained configuration (norm, α₀, init multiplier, depth) the best outcome over the peak
rates, the window of rates whose outcome is within a tolerance of it, and its instability
events; then two ways of asking whether the theory's J^{L,0} carries the effect: pairs of
configurations with (nearly) equal J^{L,0} but different design, and the partial correlation of
the best outcome with ln J^{L,0} given the design factors. Torch-free: a derived-table rule.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

CONFIG = ["norm", "alpha", "attn_mult", "depth"]
"""The columns that name one configuration of the grid (attn_mult = mlp_mult)."""
TOLERANCE = 0.10
"""A rate is inside a configuration's window when its mean final loss exceeds the
configuration's best by at most this fraction of the lowest best loss of any configuration at
the same depth: a tolerance in loss units, one per depth, so that a worse configuration does not
get a wider window."""
MATCH = 0.1
"""Two configurations are J-matched when their ln J^{L,0} differ by at most this."""


def window_widths(loss: np.ndarray, limit: np.ndarray, lrs: np.ndarray) -> np.ndarray:
    """The width in decades of the log-rate interval where a mean loss, linear in log10(rate)
    between neighbouring rates, is at most `limit`: loss (..., rates) over the sorted `lrs`,
    limit (...). A segment with both ends within counts whole, one with one end within up to
    where the line crosses the limit (none past a diverged or untrained rate; none at all
    under an infinite or NaN limit, a configuration that never trained), so the width
    moves continuously with the losses instead of jumping a rate's cell at a time (a
    bootstrap's resamples then vary it smoothly). Rates beyond the grid count nothing; a single
    rate has no width."""
    x = np.log10(np.asarray(lrs, float))
    with np.errstate(invalid="ignore", divide="ignore"):  # inf - inf: never within
        over = np.asarray(loss, float) - np.asarray(limit, float)[..., None]
        a, b = over[..., :-1], over[..., 1:]
        crossing = np.where(a <= 0, a / (a - b), b / (b - a))  # the within end's share
    share = np.where((a <= 0) & (b <= 0), 1.0, np.where((a <= 0) ^ (b <= 0), crossing, 0.0))
    return (np.nan_to_num(share, nan=0.0) * np.diff(x)).sum(axis=-1)


def window_tolerances(best: pd.Series, depth: pd.Series) -> pd.Series:
    """Each configuration's tolerance: TOLERANCE times the lowest finite best loss at its
    depth (NaN where none trained)."""
    finite = best.where(np.isfinite(best))
    return TOLERANCE * finite.groupby(depth.to_numpy()).transform("min")


def _per_rate(train: pd.DataFrame) -> pd.DataFrame:
    """Mean final loss over seeds per configuration and rate (a diverged seed counts as an
    infinite loss), with the events summed over seeds."""
    loss = train["final_loss"].where(~train["diverged"], np.inf)
    return (
        train.assign(loss=loss)
        .groupby([*CONFIG, "lr"], dropna=False)
        .agg(
            loss=("loss", "mean"),
            log_apjn=("theory_log_apjn", "mean"),
            diverged=("diverged", "sum"),
            loss_spikes=("loss_spikes", "sum"),
            grad_blowups=("grad_blowups", "sum"),
            runs=("loss", "size"),
        )
        .reset_index()
    )


def _window(rates: pd.DataFrame, lrs: np.ndarray) -> pd.Series:
    """One configuration's best loss and rate, its window at tolerance `rates.tolerance` (the
    rates of the sweep's `lrs` within it, and its width) and its events."""
    best = rates["loss"].min()
    finite = bool(np.isfinite(best))
    limit = best + rates["tolerance"].iloc[0]
    inside = finite & (rates["loss"] <= limit)
    loss = rates.set_index("lr")["loss"].reindex(lrs).to_numpy(float)
    return pd.Series({
        "log_apjn": rates["log_apjn"].mean(),
        "best_loss": best,
        "best_lr": rates.loc[rates["loss"].idxmin(), "lr"] if finite else np.nan,
        "window_rates": int(inside.sum()),
        "window_decades": float(window_widths(loss, limit, lrs)),
        "rates": len(rates),
        "runs": int(rates["runs"].sum()),
        "diverged": int(rates["diverged"].sum()),
        "loss_spikes": int(rates["loss_spikes"].sum()),
        "grad_blowups": int(rates["grad_blowups"].sum()),
    })  # fmt: skip


def rate_windows(train: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: ln J^{L,0} of its models at init (mean over seeds), the best
    mean final loss over rates and its rate, the window (the rates within the depth's tolerance
    of the best, their number, and the width in decades of the log-rate interval within it,
    window_widths) and the events of all its runs."""
    per_rate = _per_rate(train)
    lrs = np.sort(per_rate["lr"].unique())
    best = per_rate.groupby(CONFIG, dropna=False)["loss"].transform("min")
    per_rate["tolerance"] = window_tolerances(best, per_rate["depth"])
    rows = [
        {**dict(zip(CONFIG, key, strict=True)), **_window(rates, lrs)}
        for key, rates in per_rate.groupby(CONFIG, dropna=False, sort=True)
    ]
    counts = ["depth", "window_rates", "rates", "runs", "diverged", "loss_spikes", "grad_blowups"]
    return pd.DataFrame(rows).astype(dict.fromkeys(counts, int))


def config_label(row: pd.Series) -> str:
    """'derf a1 x4 L16': a configuration in a pair table or a claim."""
    alpha = "" if pd.isna(row["alpha"]) else f" a{row['alpha']:g}"
    return f"{row['norm']}{alpha} x{row['attn_mult']:g} L{int(row['depth'])}"


def matched_pairs(windows: pd.DataFrame) -> pd.DataFrame:
    """Every pair of configurations whose ln J^{L,0} differ by at most MATCH, with both
    outcomes: if J^{L,0} decided trainability, matched pairs would train alike."""
    rows = []
    for (_, a), (_, b) in itertools.combinations(windows.iterrows(), 2):
        if abs(a["log_apjn"] - b["log_apjn"]) > MATCH:
            continue
        rows.append({
            "first": config_label(a), "second": config_label(b),
            "log_apjn_first": a["log_apjn"], "log_apjn_second": b["log_apjn"],
            "best_loss_first": a["best_loss"], "best_loss_second": b["best_loss"],
            "window_decades_first": a["window_decades"],
            "window_decades_second": b["window_decades"],
        })  # fmt: skip
    columns = ["first", "second", "log_apjn_first", "log_apjn_second", "best_loss_first",
               "best_loss_second", "window_decades_first", "window_decades_second"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def design_matrix(
    norm: np.ndarray, alpha: np.ndarray, mult: np.ndarray, depth: np.ndarray
) -> np.ndarray:
    """The design factors of configurations (their CONFIG columns, as arrays: a bootstrap builds
    it on every resample) as regressors: an intercept, one indicator per norm but the first,
    ln α₀ per saturating norm (0 for pre-LN), ln multiplier and ln depth."""
    alpha, mult, depth = (np.asarray(a, dtype=float) for a in (alpha, mult, depth))
    norms = sorted(set(norm))
    columns = [np.ones(len(norm))]
    columns += [(norm == name).astype(float) for name in norms[1:]]
    for name in norms:
        own = (norm == name) & ~np.isnan(alpha)
        if len(np.unique(alpha[own])) > 1:
            columns.append(np.log(np.where(own, alpha, 1.0)))
    for factor in (mult, depth):
        if len(np.unique(factor)) > 1:
            columns.append(np.log(factor))
    return np.column_stack(columns)


def partial_correlation(windows: pd.DataFrame, outcome: str = "best_loss") -> float:
    """Correlation of `outcome` with ln J^{L,0} after both are regressed on the design factors
    (least squares), over the configurations with a finite outcome; NaN when the factors leave
    no freedom."""
    configs = [windows[c].to_numpy() for c in CONFIG]
    return partial_correlation_of(
        *configs, windows["log_apjn"].to_numpy(float), windows[outcome].to_numpy(float)
    )


def partial_correlation_of(
    norm: np.ndarray,
    alpha: np.ndarray,
    mult: np.ndarray,
    depth: np.ndarray,
    log_apjn: np.ndarray,
    outcome: np.ndarray,
) -> float:
    """`partial_correlation` of the configurations' columns, as arrays."""
    finite = np.isfinite(outcome)
    design = design_matrix(norm[finite], alpha[finite], mult[finite], depth[finite])
    if finite.sum() <= design.shape[1] + 1:
        return float("nan")

    def residual(y: np.ndarray) -> np.ndarray:
        return y - design @ np.linalg.lstsq(design, y, rcond=None)[0]

    y, x = residual(outcome[finite]), residual(log_apjn[finite])
    if np.allclose(x, 0) or np.allclose(y, 0):
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])
