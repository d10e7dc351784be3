"""Study A tables: the study's config and the tidy theory tables behind its figures."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.items import Variant, base_spec
from transformer_stability.apjn.kernels import norm_kernel
from transformer_stability.apjn.spec import ViTSpec, resolve_init_std
from transformer_stability.apjn.tables import (
    Asymptotics,
    DepthLaws,
    PrelnCrossovers,
    PrelnTokens,
    TheoryCurves,
    TheoryDepth,
)
from transformer_stability.apjn.theory import (
    MeanField,
    PreLNModes,
    Trajectory,
    ViTShape,
    backward_log_apjn,
    end_to_end_log_apjn,
    forward_log_apjn,
    preln_mode_weights,
    preln_modes,
    preln_share_depth,
    preln_two_mode_log_apjn,
    propagate_statistics,
    sqrt_depth_slope,
)
from transformer_stability.tables import columns_of, select

log = logging.getLogger(__name__)

CROSSOVER_POINTS = 3000
"""Log-spaced depths at which the local exponent is sampled to locate the generic crossover."""

MODE_SHARE = 0.1
"""The pre-LN fit windows end (zeta_-) or start (zeta_+) where the other mode carries this share
of J, and span one decade."""


@dataclass(frozen=True)
class ApjnStudy:
    """The theory part of the `apjn` config section, typed."""

    spec: ViTSpec
    q0: float
    p0: float
    variants: tuple[Variant, ...]
    max_depth: int
    fit_from: float
    depth_points: int
    token_counts: tuple[int, ...]
    token_max_depth: int

    @classmethod
    def from_config(cls, apjn: dict[str, Any]) -> ApjnStudy:
        theory = apjn["theory"]
        return cls(
            spec=base_spec(apjn),
            q0=apjn["input"]["q0"],
            p0=apjn["input"]["p0"],
            variants=tuple(Variant(v["norm"], v.get("alpha")) for v in apjn["variants"]),
            max_depth=theory["max_depth"],
            fit_from=theory["fit_from"],
            depth_points=theory["depth_points"],
            token_counts=tuple(theory["token_counts"]),
            token_max_depth=theory["token_max_depth"],
        )

    @property
    def depth(self) -> int:
        return self.spec.depth

    @property
    def shape(self) -> ViTShape:
        return ViTShape(
            width=self.spec.width,
            n_tokens_total=self.spec.n_tokens,
            mlp_ratio=self.spec.mlp_ratio,
            init_std=resolve_init_std(self.spec.init_std, self.spec.width),
            attn_mult=self.spec.attn_mult,
            mlp_mult=self.spec.mlp_mult,
        )

    @property
    def mean_field(self) -> MeanField:
        return MeanField.from_shape(self.shape)


def theory_curves(study: ApjnStudy) -> pd.DataFrame:
    """Backward J^{L,b} and forward J^{b,0} for every variant at the configured depth."""
    mf, frames = study.mean_field, []
    for variant in study.variants:
        traj = propagate_statistics(
            norm_kernel(variant.norm, variant.alpha), mf, study.q0, study.p0, study.depth
        )
        blocks = np.arange(study.depth + 1)
        for direction, source, log_j in (
            ("backward", study.depth, backward_log_apjn(traj, mf)),
            ("forward", 0, forward_log_apjn(traj, mf)),
        ):
            frames.append(
                pd.DataFrame(
                    {
                        **variant.ids(study.spec),
                        "width": study.spec.width,
                        "depth": study.depth,
                        "direction": direction,
                        "source_block": source,
                        "block": blocks,
                        "apjn": np.exp(log_j),
                        "q": traj.q,
                        "p": traj.p,
                    }
                )
            )
        log.info("%s: J^{L,0} = %.4g", variant.id, np.exp(forward_log_apjn(traj, mf)[-1]))
    return select(pd.concat(frames, ignore_index=True), TheoryCurves)


def _fit_row(
    ids: dict[str, Any], quantity: str, x: np.ndarray, y: np.ndarray, window: tuple[int, int]
) -> dict[str, Any]:
    """A least-squares line of y against x: slope (`fitted`), intercept and window."""
    slope, intercept = np.polyfit(x, y, 1) if len(x) >= 2 else (np.nan, np.nan)
    return {
        **ids,
        "quantity": quantity,
        "fitted": float(slope),
        "fit_intercept": float(intercept),
        "fit_min_depth": window[0],
        "fit_max_depth": window[1],
    }


def _saturating_fits(study: ApjnStudy, variant: Variant, log_j: np.ndarray) -> list[dict]:
    """Derf/DyT: the sqrt-depth slope and the stretch exponent on [fit_from * max_depth,
    max_depth]."""
    lo = max(2, math.floor(study.fit_from * study.max_depth))
    depth = np.arange(lo, study.max_depth + 1, dtype=float)
    y, mf = log_j[lo:], study.mean_field
    ids = {**variant.ids(study.spec), "n_tokens": mf.n_tokens, "two_mode_fit": np.nan}
    window = (lo, study.max_depth)
    return [
        _fit_row(ids, "sqrt_depth_slope", np.sqrt(depth), y, window)
        | {"predicted": sqrt_depth_slope(variant.norm, variant.alpha, mf)},
        _fit_row(ids, "stretch_exponent", np.log(depth), np.log(y), window) | {"predicted": 0.5},
    ]


def _mode_windows(study: ApjnStudy, mf: MeanField) -> dict[str, tuple[int, int]]:
    """One decade below the depth where zeta_+ carries MODE_SHARE of J, one decade above the
    depth where zeta_- does (two-mode closed form); the zeta_- window starts no earlier than
    where q has grown tenfold, past the transient."""
    below = preln_share_depth(mf, study.q0, MODE_SHARE)
    above = preln_share_depth(mf, study.q0, 1 - MODE_SHARE)
    start = 10 * study.q0 / preln_modes(mf).growth
    return {
        "zeta_minus": (math.ceil(max(below / 10, start)), math.floor(below)),
        "zeta_plus": (math.ceil(above), math.floor(10 * above)),
    }


def _preln_fits(
    study: ApjnStudy, mf: MeanField, log_j: np.ndarray, ids: dict[str, Any]
) -> list[dict[str, Any]]:
    """zeta_- and zeta_+ fitted on the recursion and on the two-mode closed form over their
    windows; a window beyond the computed depth (or before the transient) gives NaN fits."""
    modes, rows = preln_modes(mf), []
    for quantity, (lo, hi) in _mode_windows(study, mf).items():
        reached = 2 <= lo < hi <= len(log_j) - 1
        depth = np.arange(lo, hi + 1) if reached else np.array([], dtype=int)
        x = np.log(depth)
        two_mode = preln_two_mode_log_apjn(mf, study.q0, depth)
        row = _fit_row(ids, quantity, x, log_j[depth], (lo, hi))
        row["two_mode_fit"] = float(np.polyfit(x, two_mode, 1)[0]) if reached else np.nan
        row["predicted"] = getattr(modes, quantity)
        rows.append(row)
    return rows


def _generic_crossover(
    depths: np.ndarray, slope: np.ndarray, modes: PreLNModes, q0: float
) -> tuple[float, float]:
    """From a generic input: the plateau (smallest local exponent past the transient, L >= 10
    q0/c) and the first depth after it where the exponent reaches (zeta_- + zeta_+)/2; NaN
    where it does not within the computed depths, or where the plateau already lies above."""
    midpoint = 0.5 * (modes.zeta_minus + modes.zeta_plus)
    past = np.where(depths >= 10 * q0 / modes.growth, slope, np.inf)
    low = int(np.argmin(past))
    above = np.nonzero(slope[low:] >= midpoint)[0]
    reached = len(above) > 0 and slope[low] < midpoint
    return float(slope[low]), float(depths[low + above[0]]) if reached else np.nan


def _token_trajectories(study: ApjnStudy, counts: list[int]) -> dict[tuple[str, int], Trajectory]:
    """The (q, p) trajectory behind each (closure, N): the released statistics do not depend
    on N (one trajectory); the exact ones keep the 1/N_tot self-term (one per N)."""
    base, kernel = study.mean_field, norm_kernel("ln")
    shared = propagate_statistics(kernel, base, study.q0, study.p0, study.token_max_depth, True)
    out = {("released", n): shared for n in counts}
    for n in counts:
        mf = MeanField(base.a, base.m, n, exact=True)
        out["exact", n] = propagate_statistics(
            kernel, mf, study.q0, study.p0, study.token_max_depth, self_term=True
        )
    return out


def preln_token_scaling(
    study: ApjnStudy,
) -> tuple[pd.DataFrame, list[dict[str, Any]], pd.DataFrame]:
    """Pre-LN's local exponent against L / N^3 for every configured token count N (and the
    model's own) in both closures, with the two-mode closed form beside it; the zeta_-/zeta_+
    fits of each N (released closure); and each closure's modes and crossovers per N."""
    base, depth_max = study.mean_field, study.token_max_depth
    counts = sorted({*study.token_counts, base.n_tokens})
    trajectories = _token_trajectories(study, counts)
    depths = np.unique(np.geomspace(1, depth_max, study.depth_points).round().astype(int))
    fine = np.unique(np.geomspace(1, depth_max, CROSSOVER_POINTS).round().astype(int))
    ids = Variant("ln").ids(study.spec)
    frames, rows, crossovers = [], [], []
    for (closure, n), traj in trajectories.items():
        mf = MeanField(base.a, base.m, n, exact=closure == "exact")
        log_j = forward_log_apjn(traj, mf)
        two_mode = preln_two_mode_log_apjn(mf, study.q0, depths)
        modes = preln_modes(mf)
        rho_one = preln_share_depth(mf, study.q0)
        plateau, generic = _generic_crossover(
            fine, np.gradient(log_j[fine], np.log(fine)), modes, study.q0
        )
        frames.append(
            pd.DataFrame(
                {
                    "closure": closure,
                    "n_tokens": n,
                    "depth": depths,
                    "scaled_depth": depths / float(n) ** 3,
                    "local_slope": np.gradient(log_j[depths], np.log(depths)),
                    "two_mode_slope": np.gradient(two_mode, np.log(depths)),
                    "zeta_minus": modes.zeta_minus,
                    "zeta_plus": modes.zeta_plus,
                    "crossover_depth": rho_one,
                }
            )
        )
        crossovers.append(
            {
                "closure": closure,
                "n_tokens": n,
                "zeta_minus": modes.zeta_minus,
                "zeta_plus": modes.zeta_plus,
                "weight_plus": preln_mode_weights(mf)[1],
                "crossover_depth": rho_one,
                "generic_crossover_depth": generic,
                "generic_min_slope": plateau,
            }
        )
        if closure == "released":
            rows.extend(_preln_fits(study, mf, log_j, {**ids, "n_tokens": n}))
    tokens = select(pd.concat(frames, ignore_index=True), PrelnTokens)
    return tokens, rows, select(pd.DataFrame(crossovers), PrelnCrossovers)


def _law_variable(norm: str, depth: np.ndarray) -> np.ndarray:
    """The variable in which ln J is linear asymptotically: ln L (pre-LN's power law) or
    sqrt(L) (the saturating maps' stretched exponential)."""
    return np.log(depth) if norm == "ln" else np.sqrt(depth)


def _laws(
    curve: pd.DataFrame, fit: dict[str, Any], variant: Variant, spec: ViTSpec
) -> pd.DataFrame:
    """ln J of the fitted law and of the closed-form rate over the fit window, at the sampled
    depths; the closed form passes through the curve at the window's start."""
    depth, log_j = curve["depth"].to_numpy(float), curve["log_apjn"].to_numpy()
    lo, hi = fit["fit_min_depth"], fit["fit_max_depth"]
    window = depth[(depth >= lo) & (depth <= hi)]
    t, t_lo = _law_variable(variant.norm, window), _law_variable(variant.norm, np.array([lo]))
    return pd.DataFrame(
        {
            **variant.ids(spec),
            "quantity": fit["quantity"],
            "depth": window,
            "fitted_log_apjn": fit["fit_intercept"] + fit["fitted"] * t,
            "predicted_log_apjn": np.interp(lo, depth, log_j) + fit["predicted"] * (t - t_lo),
        }
    )


def depth_scaling(
    study: ApjnStudy,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """End-to-end J^{L,0} vs L up to max_depth (log-spaced sample) with its local slope in the
    law's variable, the asymptotic fits, the fitted and closed-form law lines (zeta_- for
    pre-LN), pre-LN's local exponent for several token counts and its crossovers."""
    mf = study.mean_field
    depths = np.unique(np.geomspace(1, study.max_depth, study.depth_points).round().astype(int))
    tokens, preln_rows, crossovers = preln_token_scaling(study)
    curves, fits, laws = [], list(preln_rows), []
    for variant in study.variants:
        log.info("depth scaling of %s to L = %d", variant.id, study.max_depth)
        log_j = end_to_end_log_apjn(
            variant.norm, variant.alpha, mf, study.q0, study.p0, study.max_depth, progress=True
        )
        curve = pd.DataFrame(
            {
                **variant.ids(study.spec),
                "width": study.spec.width,
                "n_tokens": mf.n_tokens,
                "depth": depths,
                "apjn": np.exp(log_j[depths]),
                "log_apjn": log_j[depths],
                "local_slope": np.gradient(log_j[depths], _law_variable(variant.norm, depths)),
            }
        )
        if variant.norm == "ln":  # its fits come from the token family, at its own N
            primary = next(
                r
                for r in preln_rows
                if r["quantity"] == "zeta_minus" and r["n_tokens"] == mf.n_tokens
            )
        else:
            variant_fits = _saturating_fits(study, variant, log_j)
            primary = variant_fits[0]  # the sqrt-depth slope
            fits.extend(variant_fits)
        laws.append(_laws(curve, primary, variant, study.spec))
        curves.append(curve)
    asymptotics = pd.DataFrame(fits, columns=columns_of(Asymptotics))
    return (
        select(pd.concat(curves, ignore_index=True), TheoryDepth),
        asymptotics,
        select(pd.concat(laws, ignore_index=True), DepthLaws),
        tokens,
        crossovers,
    )


__all__ = [
    "ApjnStudy",
    "Variant",
    "depth_scaling",
    "preln_token_scaling",
    "theory_curves",
]
