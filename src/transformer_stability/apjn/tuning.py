"""Tuning windows: what the trainability grid says about "needs careful tuning".

Per trained configuration (norm, α₀, init multiplier, depth) the best outcome over the peak
rates, the window of rates whose outcome is within TOLERANCE of it, and its instability events;
then two ways of asking whether the theory's J^{L,0} carries the effect: pairs of
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
"""A rate is inside a configuration's window when its mean final loss is within this fraction
of the configuration's best."""
MATCH = 0.1
"""Two configurations are J-matched when their ln J^{L,0} differ by at most this."""


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


def _window(rates: pd.DataFrame) -> pd.Series:
    """One configuration's best loss and rate, its window and its events."""
    best = rates["loss"].min()
    inside = rates.loc[rates["loss"] <= best * (1 + TOLERANCE), "lr"]
    finite = bool(np.isfinite(best))
    return pd.Series({
        "log_apjn": rates["log_apjn"].mean(),
        "best_loss": best,
        "best_lr": rates.loc[rates["loss"].idxmin(), "lr"] if finite else np.nan,
        "window_rates": len(inside) if finite else 0,
        "window_decades": float(np.log10(inside.max() / inside.min())) if finite else 0.0,
        "rates": len(rates),
        "runs": int(rates["runs"].sum()),
        "diverged": int(rates["diverged"].sum()),
        "loss_spikes": int(rates["loss_spikes"].sum()),
        "grad_blowups": int(rates["grad_blowups"].sum()),
    })  # fmt: skip


def rate_windows(train: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: ln J^{L,0} of its models at init (mean over seeds), the best
    mean final loss over rates and its rate, the window (number of rates within TOLERANCE of
    the best, and the decades they span), and the events of all its runs."""
    per_rate = _per_rate(train)
    rows = [
        {**dict(zip(CONFIG, key, strict=True)), **_window(rates)}
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
            "window_rates_first": a["window_rates"], "window_rates_second": b["window_rates"],
        })  # fmt: skip
    columns = ["first", "second", "log_apjn_first", "log_apjn_second", "best_loss_first",
               "best_loss_second", "window_rates_first", "window_rates_second"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def design_matrix(windows: pd.DataFrame) -> np.ndarray:
    """The design factors as regressors: an intercept, one indicator per norm but the first,
    ln α₀ per saturating norm (0 for pre-LN), ln multiplier and ln depth."""
    norms = sorted(windows["norm"].unique())
    columns = [np.ones(len(windows))]
    for norm in norms[1:]:
        columns.append((windows["norm"] == norm).to_numpy(float))
    for norm in norms:
        alpha = windows["alpha"].where(windows["norm"] == norm)
        if alpha.notna().any() and alpha.nunique() > 1:
            columns.append(np.log(alpha.fillna(1.0)).to_numpy())
    for factor in ("attn_mult", "depth"):
        if windows[factor].nunique() > 1:
            columns.append(np.log(windows[factor].to_numpy(float)))
    return np.column_stack(columns)


def partial_correlation(windows: pd.DataFrame, outcome: str = "best_loss") -> float:
    """Correlation of `outcome` with ln J^{L,0} after both are regressed on the design factors
    (least squares), over the configurations with a finite outcome; NaN when the factors leave
    no freedom."""
    rows = windows[np.isfinite(windows[outcome])]
    design = design_matrix(rows)
    if len(rows) <= design.shape[1] + 1:
        return float("nan")

    def residual(y: np.ndarray) -> np.ndarray:
        return y - design @ np.linalg.lstsq(design, y, rcond=None)[0]

    y = residual(rows[outcome].to_numpy(float))
    x = residual(rows["log_apjn"].to_numpy(float))
    if np.allclose(x, 0) or np.allclose(y, 0):
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def factor_effects(windows: pd.DataFrame) -> pd.DataFrame:
    """Per norm and design factor (α₀, multiplier, depth): over configurations equal in every
    other factor, the mean change of the window (rates) and of the best loss (relative; inf if
    a largest-level configuration never trains) from the factor's smallest to its largest
    level."""
    rows = []
    for norm, part in windows.groupby("norm"):
        for factor in ("alpha", "attn_mult", "depth"):
            levels = part[factor].dropna().unique()
            if len(levels) < 2:
                continue
            others = [c for c in CONFIG if c != factor]
            low = part[part[factor] == levels.min()].set_index(others)
            high = part[part[factor] == levels.max()].set_index(others)
            high = high.loc[high.index.intersection(low.index)]
            low = low.loc[high.index]
            change = high["best_loss"].to_numpy() / low["best_loss"].to_numpy() - 1
            rows.append({
                "norm": norm, "factor": factor, "low": levels.min(), "high": levels.max(),
                "window_change": float((high["window_rates"] - low["window_rates"]).mean()),
                "best_change": float(np.mean(change)),
            })  # fmt: skip
    return pd.DataFrame(
        rows, columns=["norm", "factor", "low", "high", "window_change", "best_change"]
    )


def sensitive(effect: pd.Series) -> bool:
    """Whether a factor narrows the window (by at least one rate on average) or degrades the
    best loss by more than TOLERANCE."""
    return bool(effect["window_change"] <= -1 or effect["best_change"] > TOLERANCE)
