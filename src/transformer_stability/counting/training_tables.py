"""Study C training items -> tidy rows: the learned-post-norm model trained on a grid of norm
bounds x seeds per (read-out, L) (regression: the rounds of the search for B_min's bracket),
plus unconstrained runs, each round one batched training.

The regression bounds are multiples of the theory's lower bound, so editing the lower bounds
reruns the regression training jobs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from transformer_stability.counting.bracket import bracket, next_ratio
from transformer_stability.counting.items import TrainItem
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.tables import QUORUM, Training
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
        head_fit=item.head_fit,
        **extra,
    )


def bound_scale(spec: ModelSpec) -> float:
    """What the grid's ratios multiply: the theory's lower bound for regression; NaN for
    classification, which has none (scaling the head keeps the argmax) and whose grid holds the
    bounds themselves."""
    if spec.readout == "regression":
        return lower_bound(spec.placement, spec.length, spec.d)
    return math.nan


Run = tuple[float, float, int]  # (B, ratio, seed); ratio NaN: unconstrained or classification


def grid_runs(item: TrainItem, scale: float, ratios: Sequence[float]) -> list[Run]:
    """(B, ratio, seed) of each of `ratios` of the item's grid with each seed (classification's
    grid holds the bounds themselves: ratio NaN)."""
    relative = item.grid is not None and item.grid.relative
    return [
        (ratio * scale, ratio, seed) if relative else (ratio, math.nan, seed)
        for ratio in ratios
        for seed in item.seeds
    ]


def _trained(
    item: TrainItem, spec: ModelSpec, scale: float, runs: list[Run], cfg: TrainConfig
) -> pd.DataFrame:
    """training.csv rows of `runs`, trained together."""
    log.info("%s: %d runs x %d steps", item.id, len(runs), cfg.steps)
    metrics, params = train_runs(spec, [b for b, _, _ in runs], [s for _, _, s in runs], cfg)
    classification = spec.readout == "classification"
    best = line_head_margin(spec, params) if classification else np.full(len(runs), np.nan)
    ratios = np.array([r for _, r, _ in runs])
    return pd.DataFrame(
        {
            "placement": spec.placement,
            "readout": spec.readout,
            "d": spec.d,
            "L": spec.length,
            "B": [b for b, _, _ in runs],
            "lower_bound": np.where(np.isfinite(ratios), scale, np.nan),
            "ratio": ratios,
            "seed": [s for _, _, s in runs],
            "steps": cfg.steps,
            "train_points": "edges" if item.edges_only else "grid",
        }
        | metrics
        | {"best_head_margin": best}
    )


def _passed(frame: pd.DataFrame) -> dict[float, bool]:
    """Per ratio of `frame`: whether at least QUORUM of its seeds count the whole grid (as
    success.csv counts them; not read from derived_tables.py, whose edits would then rerun the
    training)."""
    return (frame.groupby("ratio").accuracy.apply(lambda a: (a >= 1.0).mean()) >= QUORUM).to_dict()


def _grid_rounds(
    item: TrainItem, spec: ModelSpec, scale: float, cfg: TrainConfig, free: list[Run]
) -> list[pd.DataFrame]:
    """The grid's rows: its ratios in one round (with the unconstrained runs `free`), then
    (regression) the rounds of the search for B_min's bracket (counting/bracket.py), each round
    one batched training."""
    grid = item.grid
    frames = [_trained(item, spec, scale, grid_runs(item, scale, grid.ratios) + free, cfg)]
    passed = _passed(frames[0]) if grid.resolution is not None else {}
    for _ in range(grid.rounds - 1):
        ratio = next_ratio(passed, grid.resolution) if passed else None
        if ratio is None:
            break
        frames.append(_trained(item, spec, scale, grid_runs(item, scale, [ratio]), cfg))
        passed |= _passed(frames[-1])
    if passed:
        lo, hi = bracket(passed)
        log.info("%s: B_min / lower bound in (%s, %s]", item.id, lo, hi)
    return frames


def training_table(item: TrainItem, device: torch.device | str) -> pd.DataFrame:
    """training.csv rows of one item: every (B, seed) run of the bound grid (regression: of
    every round of the B_min search) and the unconstrained runs (B = inf, their own steps) of
    the learned-post-norm model at length L; `lower_bound` and `ratio` = B / lower bound for
    regression's constrained runs, and the best head's margin on each classification run's
    representation."""
    cfg = train_config(item, device)
    spec = ModelSpec(TRAINED_PLACEMENT, item.readout, item.width, item.length)
    scale = bound_scale(spec)
    free = [(math.inf, math.nan, seed) for seed in item.seeds] if item.unconstrained else []
    joined = free if item.joins_first_round else []
    frames = _grid_rounds(item, spec, scale, cfg, joined) if item.grid is not None else []
    if free and not joined:
        steps = replace(cfg, steps=item.unconstrained_steps)
        frames.append(_trained(item, spec, scale, free, steps))
    return select(pd.concat(frames, ignore_index=True), Training)
