"""Study C theory tables: lower bounds and verified constructions of B_min(L) and the bare
pre-norm wall per width (one theory item), and the C1 geometry of the constructions. Nothing
here trains: the training items live in counting/experiment.py, so editing the theory never
reruns them."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from transformer_stability.counting.constructions import construct, grid_errors
from transformer_stability.counting.items import GeometryItem, TheoryItem
from transformer_stability.counting.model import ModelSpec, grid_representation
from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.counting.theory import lower_bound, prenorm_wall

log = logging.getLogger(__name__)

THEORY_COLUMNS = ["placement", "attention", "readout", "d", "L", "bound", "bmin"]
GEOMETRY_COLUMNS = ["placement", "readout", "d", "L", "c", "x", "y", "radius"]
WALL_COLUMNS = ["placement", "readout", "d", "max_length"]


def _theory_rows(placement: str, d: int, length: int, margin: float) -> list[dict[str, Any]]:
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
    found = construct(ModelSpec(placement, "regression", d, length), margin)
    bmin = math.inf
    if found is not None:
        _, exact = grid_errors(found)
        if not exact:
            raise RuntimeError(f"construction {placement} L={length} fails on the grid")
        bmin = found.max_norm
    return rows + [base | {"bound": "construction", "bmin": bmin}]


def _verified(spec: ModelSpec, margin: float) -> float:
    found = construct(spec, margin)
    if found is None or not grid_errors(found)[1]:
        raise RuntimeError(f"construction {spec} fails on the grid")
    return found.max_norm


def theory_table(item: TheoryItem) -> pd.DataFrame:
    """bmin_theory.csv rows of one width d: per (placement, attention, read-out, L) the
    reduced-problem lower bound and the verified construction (inf where no B suffices:
    pre-norm past its wall)."""
    d, margin, rows = item.d, item.margin, []
    for placement in PLACEMENTS:
        for length in item.lengths:
            rows += _theory_rows(placement, d, length, margin)
            spec = ModelSpec(placement, "classification", d, length)
            if length <= item.classification_max_length:
                rows.append(
                    {
                        "placement": placement,
                        "attention": "softmax",
                        "readout": "classification",
                        "d": d,
                        "L": length,
                        "bound": "construction",
                        "bmin": _verified(spec, margin),
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
                        "bmin": _verified(linear, margin),
                    }
                )
            log.info("%s d=%d L=%d: %s", placement, d, length, rows[-1]["bmin"])
    return pd.DataFrame(rows, columns=THEORY_COLUMNS)


def wall_table(item: TheoryItem) -> pd.DataFrame:
    """walls.csv row of one width d: the bare pre-norm wall, the largest L at which any
    parameters count (regression read-out); every theory row past it has bmin = inf."""
    row = {"placement": "pre_bare", "readout": "regression", "d": item.d}
    return pd.DataFrame([row | {"max_length": prenorm_wall(item.d)}], columns=WALL_COLUMNS)


def theory_tables(item: TheoryItem) -> dict[str, pd.DataFrame]:
    """Everything a theory item computes, by chunk-rule output name."""
    return {"theory": theory_table(item), "walls": wall_table(item)}


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
    return pd.concat(frames, ignore_index=True)[GEOMETRY_COLUMNS]
