"""Study C's claims (docs/counting.md, "Claims"): each sentence of the abstract tested on the
run's tables by a statistic that the contrary science would fail. A growth law is judged by the
law it identifies: a fitted exponent holds when it lies closer to its predicted exponent than
to every rival (the study's other laws, or 0 where the rival is "bounded"), so the verdict says
which law the data point to, not how close a short run comes to an asymptote."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.counting.rates import REGRESSION_RATE_PLACEMENTS
from transformer_stability.counting.tables import (
    QUORUM,
    BminTheory,
    EmpiricalBmin,
    Precision,
    Rates,
    Residual,
    Success,
    Walls,
)
from transformer_stability.counting.theory import error_exponent, predicted_exponent
from transformer_stability.tables import meta

THEORY, WALLS, RESIDUAL, PRECISION, EMPIRICAL, SUCCESS, RATES = (
    meta(model)["path"]
    for model in (BminTheory, Walls, Residual, Precision, EmpiricalBmin, Success, Rates)
)
MIN_FIT_POINTS = 3  # any two points lie on some power law: a rate is tested by three or more
ROUNDING = 1e-9  # a grid error below this is 0 up to float64 rounding
SAME = 1e-6  # a relative spread below this: the same norm at every length, up to rounding
SOURCES = ("lower_bound", "construction")  # the theory's two curves of B_min(L)
LAW_SETTINGS = ("none", "post_bare", "post_learned")  # the abstract's three laws
TRAINED = "post_learned"  # counting/experiment.py: the one placement trained
LAWS = tuple(
    sorted(
        {e for p in PLACEMENTS for r in READOUTS if math.isfinite(e := predicted_exponent(p, r))}
    )
)


def identifies(exponent: float, predicted: float, rivals: Iterable[float] = LAWS) -> bool:
    """Whether `exponent` lies strictly closer to `predicted` than to every other rival."""
    if not math.isfinite(exponent):
        return False
    return all(abs(exponent - predicted) < abs(exponent - r) for r in rivals if r != predicted)


def _slope(curve: pd.Series) -> float:
    """Log-log slope of a curve (values indexed by L) between its first and last point."""
    return math.log(curve.iloc[-1] / curve.iloc[0]) / math.log(curve.index[-1] / curve.index[0])


def _curve(
    theory: pd.DataFrame,
    placement: str,
    bound: str,
    readout: str = "regression",
    attention: str = "softmax",
) -> pd.Series:
    """B_min against L (the index) of one theory curve at the smallest width."""
    rows = theory[
        (theory["placement"] == placement)
        & (theory["attention"] == attention)
        & (theory["readout"] == readout)
        & (theory["bound"] == bound)
        & (theory["d"] == theory["d"].min())
    ]
    return rows.set_index("L")["bmin"].sort_index()


def _g(value: float) -> str:
    """A number to 3 significant digits."""
    return f"{value:.3g}"


def _span(values: Iterable[float], fmt: str = "g") -> str:
    """'4-2048', or '8' where all values agree: the lengths (or norms) a statistic covers."""
    low, high = min(values), max(values)
    return f"{low:{fmt}}" if low == high else f"{low:{fmt}}-{high:{fmt}}"


def _listed(values: Mapping[str, float], theory: Mapping[str, float]) -> str:
    """'none 0.99 (1), post_bare 1.47 (1.5)': values with the theory's in brackets."""
    return ", ".join(f"{key} {values[key]:.2f} ({theory[key]:g})" for key in values)


# --- C.1 ---------------------------------------------------------------------------------


def linear_is_exact(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """The linear construction's norm is the same at every length and its grid error is 0."""
    linear = tables[THEORY][tables[THEORY]["attention"] == "linear"]
    if linear["L"].nunique() < 2:
        return None
    norms = linear.groupby("d")["bmin"]
    spread = float((norms.max() / norms.min() - 1).max())
    residual = tables[RESIDUAL]
    line = residual[residual["attention"] == "linear"]
    error = float(line["max_error"].max())
    holds = bool(np.isfinite(linear["bmin"]).all()) and spread <= SAME and error <= ROUNDING
    return Finding(
        statistic="relative spread of the linear construction's norm over L (per width); "
        "its largest grid error",
        value=f"norm {_span(linear['bmin'], '.3g')} over "
        f"d = {', '.join(map(str, sorted(norms.groups)))}, spread over L = {_span(linear['L'])} "
        f"at most {spread:.1g}; largest error {error:.1g} at L = {_span(line['L'])}",
        holds=holds,
    )


# --- C.2 ---------------------------------------------------------------------------------


def _error_rate(bounds: pd.DataFrame, errors: tuple[float, float]) -> float:
    """k of B(e) ~ e^-k between the two target errors (smaller first) on a lower-bound curve."""
    b = bounds.set_index("target_error")["B"]
    return math.log(b[errors[0]] / b[errors[1]]) / math.log(errors[1] / errors[0])


def softmax_is_never_exact(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """The lower bound diverges as the allowed error vanishes, and grows with L."""
    residual, theory = tables[RESIDUAL], tables[THEORY]
    bounds = residual[(residual["attention"] == "softmax") & (residual["source"] == "lower_bound")]
    errors = sorted(bounds["target_error"].unique())
    if len(errors) < 2 or theory["L"].nunique() < 2:
        return None
    smallest = (errors[0], errors[1])
    rates = {p: _error_rate(part, smallest) for p, part in bounds.groupby("placement")}
    rate_theory = {p: error_exponent(p) for p in rates}
    curves = {p: _curve(theory, p, "lower_bound") for p in REGRESSION_RATE_PLACEMENTS}
    slopes = {p: _slope(curve) for p, curve in curves.items()}
    slope_theory = {p: predicted_exponent(p, "regression") for p in slopes}
    rising = all(bool((np.diff(curve.to_numpy()) > 0).all()) for curve in curves.values())
    holds = (
        rising
        and all(identifies(rates[p], rate_theory[p], (0.0,)) for p in rates)
        and all(identifies(slopes[p], slope_theory[p], (0.0,)) for p in slopes)
    )
    length = int(bounds["L"].iloc[0])
    return Finding(
        statistic="k of the lower bound B ~ e^-k between the two smallest target errors e; "
        "log-log slope of the lower bound over L (theory in brackets)",
        value=f"k at e = {smallest[0]:g}-{smallest[1]:g}, L = {length}: "
        f"{_listed(rates, rate_theory)}; slope over L = {_span(theory['L'].unique())}: "
        f"{_listed(slopes, slope_theory)}; rising at every L: {'yes' if rising else 'no'}",
        holds=holds,
    )


# --- C.3 ---------------------------------------------------------------------------------


def _gap(theory: pd.DataFrame, placement: str) -> tuple[int, float]:
    """(L, construction / lower bound) at the longest L where both are finite."""
    ratio = _curve(theory, placement, "construction") / _curve(theory, placement, "lower_bound")
    ratio = ratio[np.isfinite(ratio)]
    return int(ratio.index[-1]), float(ratio.iloc[-1])


def bmin_follows_the_laws(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Every fitted exponent of the three settings identifies its predicted law."""
    rates, theory = tables[RATES], tables[THEORY]
    fits = rates[
        (rates["readout"] == "regression")
        & rates["placement"].isin(LAW_SETTINGS)
        & rates["source"].isin(SOURCES)
    ].set_index(["placement", "source"])
    if len(fits) < 2 * len(LAW_SETTINGS) or fits["fit_points"].min() < MIN_FIT_POINTS:
        return None
    holds = all(identifies(r.fitted_exponent, r.predicted_exponent) for r in fits.itertuples())
    parts = []
    for p in LAW_SETTINGS:
        length, gap = _gap(theory, p)
        bound, built = (fits.loc[(p, s), "fitted_exponent"] for s in SOURCES)
        parts.append(
            f"{p} {bound:.2f}/{built:.2f} ({predicted_exponent(p, 'regression'):g}), "
            f"construction/bound {gap:.2f} at L = {length}"
        )
    first = fits.iloc[0]
    window = f"fits over L = {first['fit_from']}-{first['fit_to']}, {first['fit_points']} points"
    return Finding(
        statistic="fitted log-log slopes of the lower bound / construction (theory in "
        "brackets); construction over lower bound at the longest L",
        value="; ".join([*parts, window]),
        holds=holds,
    )


# --- C.4 ---------------------------------------------------------------------------------


def _counts(rows: pd.DataFrame, placement: str, lengths: np.ndarray) -> int:
    """At how many of `lengths` both B_min curves of `placement` are finite (it counts there)."""
    part = rows[(rows["placement"] == placement) & rows["L"].isin(lengths)]
    finite = part.groupby("L")["bmin"].apply(lambda b: bool(np.isfinite(b).all()))
    return int(finite.sum())


def _wall_counts(rows: pd.DataFrame, wall: int) -> dict[str, int]:
    """Lengths up to and past the wall, and where bare and learned pre-norm count."""
    lengths = np.sort(rows["L"].unique())
    below, past = lengths[lengths <= wall], lengths[lengths > wall]
    return {
        "below": len(below),
        "past": len(past),
        "bare_below": _counts(rows, "pre_bare", below),
        "bare_past": _counts(rows, "pre_bare", past),
        "learned_past": _counts(rows, "pre_learned", past),
    }


def prenorm_has_a_wall(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Bare pre-norm counts up to a finite wall and at no length past it; a learned gain counts
    past it."""
    theory = tables[THEORY]
    rows = theory[(theory["attention"] == "softmax") & (theory["readout"] == "regression")]
    counts = {
        (int(w.d), int(w.max_length)): _wall_counts(rows[rows["d"] == w.d], int(w.max_length))
        for w in tables[WALLS].itertuples()
    }
    if not any(c["past"] for c in counts.values()):
        return None
    holds = all(
        c["bare_below"] == c["below"] and c["bare_past"] == 0 and c["learned_past"] == c["past"]
        for c in counts.values()
    )
    value = "; ".join(
        f"d = {d}: wall L = {wall}, bare pre-norm counts at {c['bare_below']}/{c['below']} "
        f"lengths up to it and {c['bare_past']}/{c['past']} past it, learned gain at "
        f"{c['learned_past']}/{c['past']} past it"
        for (d, wall), c in counts.items()
    )
    return Finding(
        statistic="the wall per width; theory lengths at which bare and learned pre-norm count",
        value=value,
        holds=holds,
    )


# --- C.5 ---------------------------------------------------------------------------------


def _storage(precision: pd.DataFrame) -> tuple[bool, float, int]:
    """(classification storage rises with L and regression's stays constant in every
    placement, classification / regression trainable numbers without a norm at the longest L,
    that L)."""
    ok = True
    for (_, readout), part in precision.groupby(["placement", "readout"]):
        counts = np.diff(part.sort_values("L")["parameters"].to_numpy())
        ok &= bool((counts > 0).all() if readout == "classification" else (counts == 0).all())
    longest = precision[
        (precision["L"] == precision["L"].max()) & (precision["placement"] == "none")
    ]
    sizes = longest.set_index("readout")["parameters"]
    return ok, float(sizes["classification"] / sizes["regression"]), int(longest["L"].iloc[0])


def _margin_slopes(built: pd.DataFrame, column: str) -> list[float]:
    """Log-log slope over L of a margin column, per placement of the classification
    constructions (its finite points)."""
    slopes = []
    for _, part in built[built["readout"] == "classification"].groupby("placement"):
        curve = part.set_index("L")[column].sort_index().dropna()
        if len(curve) >= 2:
            slopes.append(_slope(curve))
    return slopes


def _trained_precision(precision: pd.DataFrame) -> str:
    """The exact trained classifiers at their longest L: how many, their relative margin and
    how many float32 keeps exact."""
    runs = precision[(precision["source"] == "training") & (precision["accuracy"] >= 1.0)]
    if runs.empty:
        return "no exact trained classifier"
    longest = runs[runs["L"] == runs["L"].max()]
    kept = int((longest["accuracy_float32"] >= 1.0).sum())
    return (
        f"trained exact classifiers at L = {int(longest['L'].iloc[0])}: {len(longest)}, relative "
        f"margin {_span(longest['relative_margin'], '.2g')}, {kept} exact in float32"
    )


def classification_is_bounded(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Classification constructions keep their norm at every L; their head storage grows with L
    and the relative margin shrinks, for the constructions' heads and for the best head on their
    representations."""
    theory, precision = tables[THEORY], tables[PRECISION]
    lengths = theory.loc[theory["readout"] == "classification", "L"].unique()
    if len(lengths) < 2:
        return None
    curves = {p: _curve(theory, p, "construction", "classification") for p in PLACEMENTS}
    growth = {p: float(c.max() / c.iloc[0]) for p, c in curves.items()}
    bounded = (
        all(np.isfinite(c).all() for c in curves.values()) and max(growth.values()) <= 1 + SAME
    )
    built = precision[
        (precision["source"] == "construction") & (precision["d"] == precision["d"].min())
    ]
    stored, ratio, longest = _storage(built)
    slopes = _margin_slopes(built, "relative_margin")
    best = _margin_slopes(built, "best_head_margin")
    regression = _curve(theory, "none", "construction")
    best_text = f"{min(best):.2f} to {max(best):.2f}" if best else "not run"
    return Finding(
        statistic="largest classification norm over L relative to the shortest L; head storage; "
        "log-log slope of the float64 relative margin of the constructions and of the best "
        "head on their representations (LP); the trained classifiers' margins",
        value=f"largest norm {max(growth.values()):.3g}x the one at L = {min(lengths)} over "
        f"L = {_span(lengths)} in {len(curves)} placements (no-norm regression "
        f"{_g(regression.max() / regression.iloc[0])}x); {ratio:.3g}x the regression read-out's "
        f"trainable numbers at L = {longest}; margin slope {min(slopes):.2f} to "
        f"{max(slopes):.2f}, best head {best_text}; {_trained_precision(precision)}",
        holds=bounded and stored and max(slopes) < 0 and (not best or max(best) < 0),
    )


# --- C.6 ---------------------------------------------------------------------------------


def _classification_exact(success: pd.DataFrame) -> tuple[float, pd.Series]:
    """(the largest classification bound, the fraction of seeds exact there per L)."""
    part = success[(success["readout"] == "classification") & (success["placement"] == TRAINED)]
    top = float(part["B"].max())
    return top, part[part["B"] == top].set_index("L")["fraction"].sort_index()


def training_reproduces_the_split(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Trained regression B_min follows L^{3/4} and never beats the lower bound; classification
    counts exactly at one fixed bound below every regression lower bound at every length."""
    empirical = tables[EMPIRICAL][tables[EMPIRICAL]["placement"] == TRAINED].set_index("L")
    top, exact = _classification_exact(tables[SUCCESS])
    if len(empirical) < MIN_FIT_POINTS or exact.empty or section["theory"]["fit_points"] < 3:
        return None
    rates = tables[RATES][tables[RATES]["placement"] == TRAINED].set_index("source")
    fit, bound_fit = (rates.loc[s, "fitted_exponent"] for s in ("training", "training_bound"))
    window = f"L = {rates.loc['training', 'fit_from']}-{rates.loc['training', 'fit_to']}"
    law = predicted_exponent(TRAINED, "regression")
    below = int(empirical["exact_below_bound"].sum())
    smallest_bound = float(empirical["lower_bound"].min())
    holds = (
        below == 0
        and bool(np.isfinite(empirical["bmin"]).all())
        and identifies(fit, law)
        and top < smallest_bound
        and bool((exact >= QUORUM).all())
    )
    return Finding(
        statistic="regression: exact runs below the lower bound, B_min / lower bound per L, "
        "fitted slope of B_min beside the lower bound's on the same lengths; classification: "
        "fraction of seeds exact at its largest bound per L",
        value=f"regression: {below} exact runs below the bound; B_min / bound "
        + ", ".join(f"{_g(r)} (L = {length})" for length, r in empirical["ratio"].items())
        + f"; slope {fit:.2f} ({law:g}), lower bound {bound_fit:.2f} over {window}; "
        f"classification at B = {top:g} (regression lower bound >= {_g(smallest_bound)}): "
        + ", ".join(f"{f:.2g} (L = {length})" for length, f in exact.items()),
        holds=holds,
    )


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="C.1",
        statement="Unnormalized linear attention counts exactly with parameter norms that do not "
        "grow with the length L.",
        criterion="The verified linear-attention construction exists at every theory length with "
        f"the same norm (relative spread over L at most {SAME:g} at every width) and its largest "
        f"grid error is 0 up to float64 rounding (at most {ROUNDING:g}); a norm growing with L "
        "or a nonzero error fails it.",
        figure="C2",
        tables=(THEORY, RESIDUAL),
        test=linear_is_exact,
    ),
    ClaimSpec(
        id="C.2",
        statement="Softmax attention with a regression read-out never counts exactly with finite "
        "parameters; it counts after rounding only with vector norms that grow with L.",
        criterion="For every softmax placement of C7 the lower bound B grows as the allowed error "
        "e falls, as e^-k with k (between the two smallest target errors) closer to the theory's "
        "k than to 0 (k = 0: the error vanishes at a finite B); and every regression lower bound "
        "with a rate rises at every theory length, with a log-log slope over all lengths closer "
        "to its predicted exponent than to 0 (bounded norms).",
        figure="C7",
        tables=(RESIDUAL, THEORY),
        test=softmax_is_never_exact,
    ),
    ClaimSpec(
        id="C.3",
        statement="B_min(L) grows as L without normalization, as L^{3/2} with bare "
        "post-normalization and as L^{3/4} with post-normalization and a learned gain.",
        criterion="In each of the three settings the fitted log-log slopes (rates.csv, at least "
        f"{MIN_FIT_POINTS} points) of the lower bound and of the verified construction both lie "
        "closer to the setting's predicted exponent than to any other law of the study "
        f"({', '.join(f'{law:g}' for law in LAWS)}); the construction over the lower bound at "
        "the longest L shows how tight B_min is bracketed.",
        figure="C5",
        tables=(RATES, THEORY),
        test=bmin_follows_the_laws,
    ),
    ClaimSpec(
        id="C.4",
        statement="Bare pre-normalization bounds the attention scores: beyond a finite length no "
        "norm suffices.",
        criterion="At every width bare pre-norm has a lower bound and a verified construction at "
        "every theory length up to its wall and none past it, while pre-norm with a learned "
        "gain counts at every length past it; not run where no theory length passes a wall.",
        figure="C2",
        tables=(WALLS, THEORY),
        test=prenorm_has_a_wall,
    ),
    ClaimSpec(
        id="C.5",
        statement="A classification read-out keeps every norm bounded in every placement, at the "
        "price of L+1 stored head rows and of precision.",
        criterion="In every placement the verified classification construction exists at every "
        "length up to classification_max_length and its norm never exceeds the one at the "
        f"shortest length (relative {SAME:g}); its trainable numbers rise with L while the "
        "regression read-out's stay constant; its float64 relative logit margin falls with L "
        "(negative log-log slope) in every placement, and so does the best head's on the same "
        "representation (where the LP runs), so the cost is the representation's, not one "
        "head's. The trained classifiers' margins and float32 exactness are reported beside.",
        figure="C6",
        tables=(THEORY, PRECISION),
        test=classification_is_bounded,
    ),
    ClaimSpec(
        id="C.6",
        statement="Training the post-normalized model (learned gain) reproduces the split "
        "between the two read-outs.",
        criterion="Regression, trained on a grid of B / lower bound x seeds: no run is exact "
        "below the theory's lower bound; at every length some grid bound has at least "
        f"{QUORUM:.0%} of the seeds exact (B_min), and the fitted slope of B_min lies closer to "
        "L^{3/4} than to any other law of the study (the lower bound's slope on the same "
        "lengths shown beside it). Classification: at its largest bound, which lies below "
        f"every regression lower bound, at least {QUORUM:.0%} of the seeds are exact at every "
        f"length. Not run with fewer than {MIN_FIT_POINTS} regression lengths or fit points.",
        figure="C4",
        tables=(EMPIRICAL, SUCCESS, RATES),
        test=training_reproduces_the_split,
    ),
)
