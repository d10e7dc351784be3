"""Study C training items -> tidy rows: the learned-post-norm model trained on a grid of norm
bounds x seeds per (read-out, L), plus unconstrained runs, all in one batched training.

The regression bounds are multiples of the theory's lower bound, so editing the lower bounds
reruns the regression training jobs.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import torch

from transformer_stability.counting.items import TrainItem
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.tables import Training
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import TrainConfig, line_head_margin, train_runs
from transformer_stability.device import resolve_dtype
from transformer_stability.tables import select

log = logging.getLogger(__name__)

TRAINED_PLACEMENT = "post_learned"


def train_config(item: TrainItem, device: torch.device | str) -> TrainConfig:
    """The trainer's settings of an item (an item keeps the trainer's defaults for what its
    read-out never uses: logit scales for regression, the loss exponent for classification)."""
    extra = {}
    if item.logit_scale is not None:
        extra = {"logit_scale": item.logit_scale, "final_logit_scale": item.final_logit_scale}
    if item.p_range is not None:
        extra = {"p_start": item.p_range[0], "p_end": item.p_range[1]}
    return TrainConfig(
        steps=item.steps,
        lr=item.lr,
        final_lr_fraction=item.final_lr_fraction,
        dtype=resolve_dtype(item.dtype),
        device=str(device),
        edges_only=item.edges_only,
        polish_iterations=item.polish_iterations,
        **extra,
    )


def bound_scale(spec: ModelSpec) -> float:
    """What the grid's ratios multiply: the theory's lower bound for regression; NaN for
    classification, which has none (scaling the head keeps the argmax) and whose grid holds the
    bounds themselves."""
    if spec.readout == "regression":
        return lower_bound(spec.placement, spec.length, spec.d)
    return math.nan


def runs_of(item: TrainItem, scale: float) -> list[tuple[float, float, int]]:
    """(B, ratio, seed) of every run: each grid bound with each seed, then the unconstrained
    seeds (ratio NaN there and for classification, whose grid holds the bounds themselves)."""
    runs = []
    if item.grid is not None:
        relative = item.grid.relative
        runs = [
            (ratio * scale, ratio, seed) if relative else (ratio, math.nan, seed)
            for ratio in item.grid.ratios
            for seed in item.seeds
        ]
    if item.unconstrained:
        runs += [(math.inf, math.nan, seed) for seed in item.seeds]
    return runs


def training_table(item: TrainItem, device: torch.device | str) -> pd.DataFrame:
    """training.csv rows of one item: every (B, seed) run of the bound grid and the
    unconstrained runs (B = inf) of the learned-post-norm model at length L, trained together;
    `lower_bound` and `ratio` = B / lower bound for regression's constrained runs, and the best
    head's margin on each classification run's representation."""
    cfg = train_config(item, device)
    spec = ModelSpec(TRAINED_PLACEMENT, item.readout, item.width, item.length)
    scale = bound_scale(spec)
    runs = runs_of(item, scale)
    log.info("%s: %d runs x %d steps", item.id, len(runs), cfg.steps)
    metrics, params = train_runs(spec, [b for b, _, _ in runs], [s for _, _, s in runs], cfg)
    classification = spec.readout == "classification"
    best = line_head_margin(spec, params) if classification else np.full(len(runs), np.nan)
    bounds = np.array([b for b, _, _ in runs])
    ratios = np.array([r for _, r, _ in runs])
    frame = pd.DataFrame(
        {
            "placement": spec.placement,
            "readout": spec.readout,
            "d": spec.d,
            "L": spec.length,
            "B": bounds,
            "lower_bound": np.where(np.isfinite(ratios), scale, np.nan),
            "ratio": ratios,
            "seed": [s for _, _, s in runs],
            "steps": cfg.steps,
            "train_points": "edges" if item.edges_only else "grid",
        }
        | metrics
        | {"best_head_margin": best}
    )
    return select(frame, Training)
