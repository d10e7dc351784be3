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
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.theory import (
    MeanField,
    ViTShape,
    backward_log_apjn,
    end_to_end_log_apjn,
    forward_log_apjn,
    preln_exponent,
    propagate_statistics,
    sqrt_depth_slope,
)

log = logging.getLogger(__name__)

ID_COLUMNS = ["norm", "alpha", "attn_mult", "mlp_mult"]
"""The identifying columns every Study A table starts with (see variant_ids)."""
CURVE_COLUMNS = [*ID_COLUMNS, "width", "depth", "direction", "source_block", "block", "apjn",
                 "q", "p"]  # fmt: skip
DEPTH_COLUMNS = [*ID_COLUMNS, "width", "depth", "apjn", "log_apjn", "local_slope"]
LAW_COLUMNS = [*ID_COLUMNS, "quantity", "depth", "fitted_log_apjn", "predicted_log_apjn"]
ASYMPTOTIC_COLUMNS = [*ID_COLUMNS, "quantity", "fitted", "predicted", "fit_intercept",
                      "fit_min_depth", "fit_max_depth"]  # fmt: skip


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
            attn_mult=self.spec.attn_mult,
            mlp_mult=self.spec.mlp_mult,
        )

    @property
    def mean_field(self) -> MeanField:
        return MeanField.from_shape(self.shape)


def variant_ids(variant: Variant, spec: ViTSpec) -> dict[str, Any]:
    """The identifying columns every Study A table starts with."""
    return {
        "norm": variant.norm,
        "alpha": np.nan if variant.alpha is None else variant.alpha,
        "attn_mult": spec.attn_mult,
        "mlp_mult": spec.mlp_mult,
    }


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
                        **variant_ids(variant, study.spec),
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
    return pd.concat(frames, ignore_index=True)[CURVE_COLUMNS]


def _fits(study: ApjnStudy, variant: Variant, log_j: np.ndarray) -> list[dict[str, Any]]:
    """The asymptotic laws fitted on depths [fit_from * max_depth, max_depth]."""
    lo = max(2, math.floor(study.fit_from * study.max_depth))
    depth = np.arange(lo, study.max_depth + 1, dtype=float)
    y = log_j[lo:]
    mf = study.mean_field
    if variant.norm == "ln":
        laws = [("power_law_exponent", np.log(depth), y, preln_exponent(mf))]
    else:
        predicted = sqrt_depth_slope(variant.norm, variant.alpha, mf)
        laws = [
            ("sqrt_depth_slope", np.sqrt(depth), y, predicted),
            ("stretch_exponent", np.log(depth), np.log(y), 0.5),
        ]
    rows = []
    for quantity, x, yy, predicted in laws:
        slope, intercept = np.polyfit(x, yy, 1)
        rows.append(
            {
                **variant_ids(variant, study.spec),
                "quantity": quantity,
                "fitted": float(slope),
                "predicted": float(predicted),
                "fit_intercept": float(intercept),
                "fit_min_depth": lo,
                "fit_max_depth": study.max_depth,
            }
        )
    return rows


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
            **variant_ids(variant, spec),
            "quantity": fit["quantity"],
            "depth": window,
            "fitted_log_apjn": fit["fit_intercept"] + fit["fitted"] * t,
            "predicted_log_apjn": np.interp(lo, depth, log_j) + fit["predicted"] * (t - t_lo),
        }
    )


def depth_scaling(study: ApjnStudy) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """End-to-end J^{L,0} vs L up to max_depth (log-spaced sample) with its local slope in the
    law's variable, the asymptotic fits, and the fitted and closed-form law lines."""
    mf = study.mean_field
    depths = np.unique(np.geomspace(1, study.max_depth, study.depth_points).round().astype(int))
    curves, fits, laws = [], [], []
    for variant in study.variants:
        log.info("depth scaling of %s to L = %d", variant.id, study.max_depth)
        log_j = end_to_end_log_apjn(
            variant.norm, variant.alpha, mf, study.q0, study.p0, study.max_depth, progress=True
        )
        curve = pd.DataFrame(
            {
                **variant_ids(variant, study.spec),
                "width": study.spec.width,
                "depth": depths,
                "apjn": np.exp(log_j[depths]),
                "log_apjn": log_j[depths],
                "local_slope": np.gradient(log_j[depths], _law_variable(variant.norm, depths)),
            }
        )
        variant_fits = _fits(study, variant, log_j)
        primary = variant_fits[0]  # the power law (pre-LN) or the sqrt-depth slope
        laws.append(_laws(curve, primary, variant, study.spec))
        curves.append(curve)
        fits.extend(variant_fits)
    asymptotics = pd.DataFrame(fits, columns=ASYMPTOTIC_COLUMNS)
    return (
        pd.concat(curves, ignore_index=True)[DEPTH_COLUMNS],
        asymptotics,
        pd.concat(laws, ignore_index=True)[LAW_COLUMNS],
    )


__all__ = [
    "ASYMPTOTIC_COLUMNS",
    "CURVE_COLUMNS",
    "DEPTH_COLUMNS",
    "LAW_COLUMNS",
    "ApjnStudy",
    "Variant",
    "depth_scaling",
    "theory_curves",
]
