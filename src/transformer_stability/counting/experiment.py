"""Study C training items -> tidy rows: the learned-post-norm model trained on the whole grid,
B_min found per (L, seed) by bisection on B (every round one batched training of all seeds'
probes), plus the unconstrained run.

The regression bracket comes from the theory (lower bound, construction), so editing the
bounds or constructions reruns the regression training jobs.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import torch

from transformer_stability.counting.bisection import Bracket, probes, update
from transformer_stability.counting.constructions import construct
from transformer_stability.counting.items import Bisection, TrainItem
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.tables import Training
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import TrainConfig, train_runs
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
        **extra,
    )


def initial_bracket(spec: ModelSpec, bisection: Bisection) -> Bracket:
    """Regression: (the theory's lower bound, upper_factor x the verified construction's norm);
    classification: the configured (low, high), whose low is only a floor (probed too)."""
    if spec.readout == "regression":
        found = construct(spec, bisection.margin)
        if found is None:
            raise RuntimeError(f"no construction to bracket {spec}")
        low = lower_bound(spec.placement, spec.length, spec.d)
        return Bracket(low, bisection.upper_factor * found.max_norm)
    return Bracket(bisection.low, bisection.high, low_proven=False)


def _frame(spec: ModelSpec, runs: list[tuple[float, int]], metrics: dict, **fixed) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "placement": spec.placement,
            "readout": spec.readout,
            "d": spec.d,
            "L": spec.length,
            "B": [b for b, _ in runs],
            "seed": [s for _, s in runs],
        }
        | fixed
    )
    for key, values in metrics.items():
        frame[key] = values
    return frame


def bisect(
    spec: ModelSpec, item: TrainItem, cfg: TrainConfig
) -> tuple[pd.DataFrame, dict[int, Bracket]]:
    """Every round's runs (rows) and each seed's final bracket: a seed leaves the batch once
    its bracket is resolved to the precision or its upper bracket failed."""
    bisection = item.bisection
    start = initial_bracket(spec, bisection)
    brackets = {seed: start for seed in item.seeds}
    frames = []
    for round_ in range(1, bisection.max_rounds + 1):
        open_seeds = [s for s in item.seeds if not brackets[s].done(bisection.precision)]
        if not open_seeds:
            break
        tried = {s: probes(brackets[s], bisection.probes) for s in open_seeds}
        runs = [(float(b), s) for s in open_seeds for b in tried[s]]
        log.info("%s round %d: %d runs x %d steps", item.id, round_, len(runs), cfg.steps)
        metrics, _ = train_runs(spec, [b for b, _ in runs], [s for _, s in runs], cfg)
        success = (metrics["accuracy"] >= 1.0).reshape(len(open_seeds), -1)
        for seed, ok in zip(open_seeds, success, strict=True):
            brackets[seed] = update(brackets[seed], tried[seed], ok)
        frames.append(
            _frame(
                spec,
                runs,
                metrics,
                round=round_,
                bracket_low=start.low,
                bracket_high=start.high,
                steps=cfg.steps,
            )
        )
        log.info("%s after round %d: %s", item.id, round_, brackets)
    return pd.concat(frames, ignore_index=True), brackets


def training_table(item: TrainItem, device: torch.device | str) -> pd.DataFrame:
    """training.csv rows of one item: every bisection run (round >= 1) and the unconstrained
    runs (round 0, B = inf) of the learned-post-norm model at length L."""
    cfg = train_config(item, device)
    spec = ModelSpec(TRAINED_PLACEMENT, item.readout, item.width, item.length)
    frames = []
    if item.bisection is not None:
        frames.append(bisect(spec, item, cfg)[0])
    if item.unconstrained:
        runs = [(np.inf, s) for s in item.seeds]
        log.info("%s unconstrained: %d runs x %d steps", item.id, len(runs), cfg.steps)
        metrics, _ = train_runs(spec, [np.inf] * len(runs), list(item.seeds), cfg)
        fixed = {"round": 0, "bracket_low": np.nan, "bracket_high": np.nan, "steps": cfg.steps}
        frames.append(_frame(spec, runs, metrics, **fixed))
    return select(pd.concat(frames, ignore_index=True), Training)
