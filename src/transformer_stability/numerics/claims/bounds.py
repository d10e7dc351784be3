"""N.1 and N.5, on the synthetic experiments: every measured error and Lipschitz estimate lies
below its bound, the rounding-error bounds are not loose by orders of magnitude, and the
attention bound over the ball does not grow with the sequence length. Both count the
Lipschitz table's violations the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    LIPSCHITZ,
    NORMS,
    SOFTMAX,
    UNITS,
    Tables,
    _g,
    _none_above,
    _slope,
)
from transformer_stability.verdicts import Estimate, Term, at_most, below

TIGHT = 100.0  # "not loose by orders of magnitude": a median bound/error of at most 10^2
SQRT_N_MIDPOINT = 0.25  # growth in n: halfway between length-free (0) and the sqrt(n) bound (0.5)
LENGTH_SPAN = 4  # the sequence lengths must span this factor


# --- N.1: every measured error below its bound; rounding bounds within 10^2 of the errors ----


def _norm_pairs(norms: pd.DataFrame) -> pd.DataFrame:
    """One row per (norm, format, outlier, sample, quantity): err_X against bound_X."""
    keys = ["norm", "mantissa_bits", "outlier", "sample"]
    wide = norms.set_index([*keys, "metric"]).value.unstack("metric")
    kinds = [m.removeprefix("err_") for m in wide.columns if m.startswith("err_")]
    pairs = pd.concat(
        pd.DataFrame({"measured": wide[f"err_{k}"], "bound": wide[f"bound_{k}"]}) for k in kinds
    )
    return pairs.reset_index()


def _lipschitz_pairs(lipschitz: pd.DataFrame) -> pd.DataFrame:
    """The random-input estimate against the bound at that input, the worst found against the
    bound over the ball."""
    at_input = lipschitz.rename(columns={"estimate": "measured"})[["measured", "bound"]]
    found = lipschitz.dropna(subset=["worst"])
    over_ball = pd.DataFrame({"measured": found.worst, "bound": found.ball_bound})
    return pd.concat([at_input, over_ball])


def _violations(pairs: pd.DataFrame) -> tuple[int, int]:
    """(measured errors above their bound, pairs with a measured value)."""
    checked = pairs.dropna(subset=["measured"])
    return int((checked.measured > checked.bound).sum()), len(checked)


def _tightness_frame(norm_pairs: pd.DataFrame, evaluation: pd.DataFrame) -> pd.DataFrame:
    """bound/measured of every pair with a measured error, by part (norms, softmax), with the
    setting whose samples are drawn together (`condition`) and the sample."""

    def part(pairs: pd.DataFrame, name: str, setting: list[str]) -> pd.DataFrame:
        some = pairs[pairs.measured > 0]
        condition = some[setting].astype(str).agg(" ".join, axis=1)
        ratio = some.bound / some.measured
        return pd.DataFrame(
            {"part": name, "condition": condition, "sample": some["sample"], "ratio": ratio}
        )

    return pd.concat(
        [
            part(norm_pairs, "norms", ["mantissa_bits", "outlier"]),
            part(evaluation, "softmax", ["sweep", "p_max", "offset"]),
        ],
        ignore_index=True,
    )


def _part_medians(ratios: pd.DataFrame) -> pd.Series:
    """The median bound/error of each part, pooled over its settings."""
    parts, values = ratios.part.to_numpy(), ratios.ratio.to_numpy(float)
    return pd.Series({name: np.nanmedian(values[parts == name]) for name in ("norms", "softmax")})


def bounds_hold(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.1: every measured error and Lipschitz estimate against its bound (exact counts); how
    far the rounding-error bounds (norms, softmax evaluation) lie above the errors they bound
    (medians, bootstrapped over the samples of each setting)."""
    softmax = tables[SOFTMAX].dropna(subset=["bound"])
    norm_pairs = _norm_pairs(tables[NORMS])
    parts = {
        "norms": norm_pairs,
        "softmax": softmax[["measured", "bound"]],
        "attention": _lipschitz_pairs(tables[LIPSCHITZ]),
    }
    counts = {name: _violations(pairs) for name, pairs in parts.items()}
    ratios = _tightness_frame(norm_pairs, softmax[softmax["mode"] != "propagation"])
    tight = verdicts.bootstrap(ratios, _part_medians, "sample", "samples", ["part", "condition"])
    above = sum(v for v, _ in counts.values())
    value = (
        f"{above} of {sum(n for _, n in counts.values())} above their bound ("
        + ", ".join(f"{name} {v}/{n}" for name, (v, n) in counts.items())
        + "); median bound/error: "
        + ", ".join(f"{name} {e.text()}" for name, e in tight.items())
    )
    terms = [_none_above(f"values above bound, {name}", v) for name, (v, _) in counts.items()]
    terms += [Term(f"median bound/error, {name}", e, at_most(TIGHT)) for name, e in tight.items()]
    return Finding("measured values above their bound; median bound/error", value, tuple(terms))


# --- N.5: a Lipschitz bound of attention that does not grow with n ---------------------------


def length_free_lipschitz(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.5: per weight draw (the same weights at every n), the largest Lipschitz constant found
    (random input or ascent) relative to the n-free bound, against n; a constant growing like
    sqrt(n) would give slope 0.5. The claim is about every draw, so each draw's slope is a
    term of its own, exact: the draw fixes the weights, the seeded inputs and the ascent, and
    the table holds nothing within a draw to resample. The bound's margin over what was found,
    per n over the draws, is reported."""
    table = tables[LIPSCHITZ]
    lengths = sorted(table.seq_len.unique())
    if len(lengths) < 2 or lengths[-1] / lengths[0] < LENGTH_SPAN:
        return None
    inf = table[table.norm == "inf"]
    inf = inf.assign(found=np.fmax(inf.estimate, inf.worst))
    slopes = {
        draw: _slope(rows.seq_len, rows.found / rows.ball_bound)
        for draw, rows in inf.groupby("draw")
    }
    margin = (inf.ball_bound / inf.found).groupby(inf.seq_len).agg(["min", "max"])
    frob = table[table.norm == "frobenius"].groupby("seq_len").ball_bound.median()
    above, checked = _violations(_lipschitz_pairs(table))
    value = (
        f"slope of found/bound vs n per draw: {_g(min(slopes.values()))} to "
        f"{_g(max(slopes.values()))} ({len(slopes)} draws, n = {lengths[0]}..{lengths[-1]}); "
        "bound/found over the draws: "
        + ", ".join(f"n={n} {_g(row['min'])}-{_g(row['max'])}" for n, row in margin.iterrows())
        + f"; {above} of {checked} above their bound; Euclidean bound slope "
        f"{_g(_slope(pd.Series(frob.index), frob))} (sqrt n: 0.5)"
    )
    basis = "exact for this draw (its weights, inputs and ascent fixed)"
    terms = [_none_above("values above bound", above)]
    terms += [
        Term(
            f"slope found/bound vs n, draw {draw}", Estimate.exact(s, basis), below(SQRT_N_MIDPOINT)
        )
        for draw, s in slopes.items()
    ]
    return Finding(
        "per weight draw, log-log slope of the largest Lipschitz constant found / the n-free "
        "bound vs n; bound/found per n",
        value,
        tuple(terms),
    )


N1 = ClaimSpec(
    id="N.1",
    statement="The parts of a transformer (LayerNorm, RMSNorm, softmax, self-attention) have "
    "condition numbers and forward-error bounds that bound the measured errors.",
    criterion=f"no measured error or Lipschitz estimate above its bound (an exact count over "
    f"every sample: the softmax per entry, in the emulated format and through real "
    f"fp16/bf16 casts, subnormals included), and the rounding-error bounds of the norms "
    f"and the softmax not loose by orders of magnitude: the median bound/error <= "
    f"{TIGHT:g} for each over its whole bootstrap interval (samples of each setting); the "
    f"attention bound is a worst case over the ball and not claimed tight",
    figure="N5, N6, N7",
    tables=(NORMS, SOFTMAX, LIPSCHITZ),
    test=bounds_hold,
    units={NORMS: UNITS[NORMS], SOFTMAX: UNITS[SOFTMAX], LIPSCHITZ: UNITS[LIPSCHITZ]},
)

N5 = ClaimSpec(
    id="N.5",
    statement="Self-attention's local Lipschitz constant has a bound independent of the "
    "sequence length.",
    criterion=f"no estimate or worst found above its bound (an exact count), and for every "
    f"weight draw (the same weights at every n; each draw's slope exact, its weights, "
    f"inputs and ascent fixed) the log-log slope of the largest constant found (exact at "
    f"a random input, or by Adam ascent on the exact Jacobian over the ball) over the "
    f"n-free bound against n below {SQRT_N_MIDPOINT:g} (0: length-free; 0.5: growing as "
    f"sqrt(n) like the Euclidean bound); needs lengths spanning a factor {LENGTH_SPAN}",
    figure="N7",
    tables=(LIPSCHITZ,),
    test=length_free_lipschitz,
    units={LIPSCHITZ: UNITS[LIPSCHITZ]},
)
