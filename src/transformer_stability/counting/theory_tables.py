"""Study C theory tables: lower bounds and verified constructions of B_min(L) and the bare
pre-norm wall per width (one theory item), and the C1 geometry of the constructions. Nothing
here trains: the training items live in counting/training_tables.py, so editing the theory never
reruns them."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from transformer_stability.counting.constructions import HALF, construct, grid_errors
from transformer_stability.counting.items import GeometryItem, ResidualItem, TheoryItem
from transformer_stability.counting.model import ModelSpec, grid_representation
from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.counting.precision import (
    FORMATS,
    grid_margins,
    parameter_count,
)
from transformer_stability.counting.tables import (
    BminTheory,
    ConstructionPrecision,
    Geometry,
    Residual,
    Walls,
)
from transformer_stability.counting.theory import lower_bound, prenorm_wall
from transformer_stability.counting.training import line_head_margin
from transformer_stability.tables import columns_of, select

log = logging.getLogger(__name__)

RESIDUAL_PLACEMENTS = ("none", "post_bare", "post_learned")


def _checked(
    spec: ModelSpec, margin: float, precision: list[dict[str, Any]] | None, lp_max_length: int = 0
) -> float:
    """Norm of the spec's construction (inf if none exists), after checking that it counts
    the whole grid exactly in float64; appends its storage and margins in every float format
    to `precision` (None: float64 only, nothing recorded), with the best head's margin on its
    representation for classification up to lp_max_length."""
    found = construct(spec, margin)
    if found is None:
        return math.inf
    best = math.nan
    if spec.readout == "classification" and spec.length <= lp_max_length:
        best = line_head_margin(spec, found.params)[0]
    base = {
        "placement": spec.placement,
        "readout": spec.readout,
        "d": spec.d,
        "L": spec.length,
        "parameters": parameter_count(spec),
        "max_norm": found.max_norm,
        "best_head_margin": best,
    }
    formats = FORMATS if precision is not None else {"float64": FORMATS["float64"]}
    for name, dtype in formats.items():
        row = base | {"format": name} | grid_margins(found, dtype)
        if name == "float64" and row["accuracy"] < 1.0:
            raise RuntimeError(f"construction {spec} fails on the grid")
        if precision is not None:
            precision.append(row)
    return found.max_norm


def _theory_rows(
    placement: str, d: int, length: int, margin: float, precision: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Lower bound and construction of the softmax regression model at one (placement, d, L)."""
    base = {
        "placement": placement,
        "attention": "softmax",
        "readout": "regression",
        "d": d,
        "L": length,
    }
    wall = prenorm_wall(d) if placement == "pre_bare" else math.inf
    if length > wall:  # the lower bound proves that no parameters count: no construction
        return [base | {"bound": b, "bmin": math.inf} for b in ("lower_bound", "construction")]
    rows = [base | {"bound": "lower_bound", "bmin": lower_bound(placement, length, d)}]
    bmin = _checked(ModelSpec(placement, "regression", d, length), margin, precision)
    return rows + [base | {"bound": "construction", "bmin": bmin}]


def theory_tables(item: TheoryItem) -> dict[str, pd.DataFrame]:
    """Everything a theory item computes, by chunk-rule output name: bmin_theory.csv rows
    (per placement, attention, read-out and L the reduced-problem lower bound and the verified
    construction; inf where no B suffices: pre-norm past its wall), the wall, and precision.csv
    rows (storage and float32/float64 margins of every softmax construction up to
    classification_max_length, and the best head's margin on each classification
    construction's representation up to margin_lp_max_length)."""
    d, margin, rows, precision = item.d, item.margin, [], []
    for placement in PLACEMENTS:
        for length in item.lengths:
            measured = precision if length <= item.classification_max_length else None
            rows += _theory_rows(placement, d, length, margin, measured)
            if length <= item.classification_max_length:
                spec = ModelSpec(placement, "classification", d, length)
                rows.append(
                    {
                        "placement": placement,
                        "attention": "softmax",
                        "readout": "classification",
                        "d": d,
                        "L": length,
                        "bound": "construction",
                        "bmin": _checked(spec, margin, precision, item.margin_lp_max_length),
                    }
                )
            if placement == "none":
                linear = ModelSpec("none", "regression", d, length, attention="linear")
                rows.append(
                    {
                        "placement": "none",
                        "attention": "linear",
                        "readout": "regression",
                        "d": d,
                        "L": length,
                        "bound": "construction",
                        "bmin": _checked(linear, margin, None),
                    }
                )
            log.info("%s d=%d L=%d: %s", placement, d, length, rows[-1]["bmin"])
    return {
        "theory": pd.DataFrame(rows, columns=columns_of(BminTheory)),
        "walls": wall_table(item),
        "precision": pd.DataFrame(precision, columns=columns_of(ConstructionPrecision)),
    }


def wall_table(item: TheoryItem) -> pd.DataFrame:
    """walls.csv row of one width d: the bare pre-norm wall, the largest L at which any
    parameters count (regression read-out); every theory row past it has bmin = inf."""
    row = {"placement": "pre_bare", "readout": "regression", "d": item.d}
    return pd.DataFrame([row | {"max_length": prenorm_wall(item.d)}], columns=columns_of(Walls))


def geometry_table(item: GeometryItem) -> pd.DataFrame:
    """C1 data: psi(z(c, 0)), c = 0..L, of every construction, in the best 2-plane through the
    origin (top two right-singular vectors), with the radius |psi| for reference."""
    d, length = item.d, item.length
    frames = []
    for placement in PLACEMENTS:
        for readout in READOUTS:
            spec = ModelSpec(placement, readout, d, length)
            found = construct(spec, item.margin)
            if found is None:
                log.info("no %s %s construction at L = %d", placement, readout, length)
                continue
            c = torch.arange(length + 1)
            with torch.no_grad():
                rep = grid_representation(spec, found.params, c, torch.zeros_like(c))[0].numpy()
            _, _, vt = np.linalg.svd(rep, full_matrices=False)
            xy = rep @ vt[:2].T
            frames.append(
                pd.DataFrame(
                    {
                        "placement": placement,
                        "readout": readout,
                        "d": d,
                        "L": length,
                        "c": c.numpy(),
                        "x": xy[:, 0],
                        "y": xy[:, 1],
                        "radius": np.linalg.norm(rep, axis=1),
                    }
                )
            )
    return select(pd.concat(frames, ignore_index=True), Geometry)


def residual_table(item: ResidualItem) -> pd.DataFrame:
    """The smallest B at which softmax regression keeps max |y - c| <= e on the grid, for each
    target error e: the lower bound of the reduced problem (no parameters with a smaller B do
    better) and a construction with that error (verified on the whole grid: `max_error` is its
    measured error); linear attention's construction (error 0 up to rounding) at any L."""
    d, length, rows = item.d, item.length, []
    for placement in RESIDUAL_PLACEMENTS:
        spec = ModelSpec(placement, "regression", d, length)
        for error in item.errors:
            base = {"placement": placement, "attention": "softmax", "target_error": error}
            bound = lower_bound(placement, length, d, error)
            found = construct(spec, HALF - error)
            rows.append(base | {"source": "lower_bound", "B": bound, "max_error": error})
            measured = grid_errors(found)[0]
            rows.append(
                base | {"source": "construction", "B": found.max_norm, "max_error": measured}
            )
            log.info(
                "%s L=%d error %g: B >= %.4g, construction %.4g",
                placement,
                length,
                error,
                bound,
                found.max_norm,
            )
    linear = construct(ModelSpec("none", "regression", d, length, attention="linear"))
    rows.append(
        {
            "placement": "none",
            "attention": "linear",
            "target_error": 0.0,
            "source": "construction",
            "B": linear.max_norm,
            "max_error": grid_errors(linear)[0],
        }
    )
    return select(pd.DataFrame(rows).assign(d=d, L=length), Residual)
