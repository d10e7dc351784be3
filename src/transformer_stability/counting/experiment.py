"""Study C training items -> tidy rows: the learned-post-norm model trained on the whole grid.

Imports the model and the trainer only (no bounds, no constructions), so editing the theory
never reruns the training jobs.
"""

from __future__ import annotations

import logging

import pandas as pd
import torch

from transformer_stability.counting.items import TrainItem
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.training import TrainConfig, train_runs
from transformer_stability.device import resolve_dtype

log = logging.getLogger(__name__)

TRAINED_PLACEMENT = "post_learned"
TRAINING_COLUMNS = [
    "placement",
    "readout",
    "d",
    "L",
    "B",
    "seed",
    "steps",
    "accuracy",
    "balanced_accuracy",
    "first_failing_count",
    "max_vector_norm",
]


def train_config(item: TrainItem, device: torch.device | str) -> TrainConfig:
    """The trainer's settings of an item (a regression item, which has no logits, keeps the
    trainer's default logit scales: they are never applied)."""
    scales = {}
    if item.logit_scale is not None:
        scales = {"logit_scale": item.logit_scale, "final_logit_scale": item.final_logit_scale}
    return TrainConfig(
        steps=item.steps,
        lr=item.lr,
        final_lr_fraction=item.final_lr_fraction,
        dtype=resolve_dtype(item.dtype),
        device=str(device),
        **scales,
    )


def training_table(item: TrainItem, device: torch.device | str) -> pd.DataFrame:
    """training.csv rows of one item: one batched training of all its (B, seed) runs
    (B = inf: unconstrained) of the learned-post-norm model at length L."""
    cfg = train_config(item, device)
    runs = [(b, s) for b in item.bounds for s in item.seeds]
    spec = ModelSpec(TRAINED_PLACEMENT, item.readout, item.width, item.length)
    log.info("training %s: %d runs x %d steps", item.id, len(runs), cfg.steps)
    metrics, _ = train_runs(spec, [b for b, _ in runs], [s for _, s in runs], cfg, progress=True)
    frame = pd.DataFrame(
        {
            "placement": TRAINED_PLACEMENT,
            "readout": item.readout,
            "d": spec.d,
            "L": item.length,
            "B": [b for b, _ in runs],
            "seed": [s for _, s in runs],
            "steps": cfg.steps,
        }
    )
    for key, values in metrics.items():
        frame[key] = values
    best = frame.groupby("B")["accuracy"].max()
    log.info("%s best accuracy per B: %s", item.id, best.round(4).to_dict())
    return frame[TRAINING_COLUMNS]
