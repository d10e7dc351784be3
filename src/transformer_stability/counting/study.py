"""Study C tables: theory bounds and constructions, training sweeps, empirical B_min and rates."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from transformer_stability.checkpoint import Checkpoint, NoCheckpoint
from transformer_stability.counting.constructions import construct, grid_errors
from transformer_stability.counting.model import PLACEMENTS, ModelSpec, grid_representation
from transformer_stability.counting.theory import (
    fitted_exponent,
    lower_bound,
    predicted_exponent,
    prenorm_max_length,
)
from transformer_stability.counting.training import TrainConfig, train_runs
from transformer_stability.device import resolve_device

log = logging.getLogger(__name__)

THEORY_COLUMNS = ["placement", "attention", "readout", "d", "L", "bound", "bmin"]
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
EMPIRICAL_COLUMNS = ["placement", "readout", "d", "L", "bmin", "reached", "bounds_tried"]
RATE_COLUMNS = ["placement", "readout", "source", "fitted_exponent", "predicted_exponent"]
GEOMETRY_COLUMNS = ["placement", "readout", "d", "L", "c", "x", "y", "radius"]
REGRESSION_RATE_PLACEMENTS = ("none", "pre_learned", "post_bare", "post_learned")
TRAINED_PLACEMENT = "post_learned"


@dataclass(frozen=True)
class Sweep:
    """One read-out's training sweep: unconstrained lengths (C3) and the (L, B) grid (C4)."""

    steps: int
    lr: float
    unconstrained_lengths: tuple[int, ...]
    lengths: tuple[int, ...]
    bounds: tuple[float, ...]


@dataclass(frozen=True)
class CountingStudy:
    """The `counting` section of the config, typed."""

    widths: tuple[int, ...]
    lengths: tuple[int, ...]
    classification_max_length: int
    fit_points: int
    margin: float
    geometry_length: int
    train_width: int
    seeds: tuple[int, ...]
    train: TrainConfig
    sweeps: dict[str, Sweep]

    @classmethod
    def from_config(
        cls, cfg: dict[str, Any], base_seed: int = 0, device: str = "auto"
    ) -> CountingStudy:
        theory, training = cfg["theory"], cfg["training"]
        sweeps = {
            readout: Sweep(
                training[readout]["steps"],
                training[readout]["lr"],
                tuple(training[readout]["unconstrained_lengths"]),
                tuple(training[readout]["lengths"]),
                tuple(float(b) for b in training[readout]["bounds"]),
            )
            for readout in ("regression", "classification")
        }
        return cls(
            widths=tuple(theory["widths"]),
            lengths=tuple(theory["lengths"]),
            classification_max_length=theory["classification_max_length"],
            fit_points=theory["fit_points"],
            margin=theory["margin"],
            geometry_length=cfg["geometry_length"],
            train_width=training["width"],
            seeds=tuple(base_seed + i for i in range(training["seeds"])),
            train=TrainConfig(
                final_lr_fraction=training["final_lr_fraction"],
                logit_scale=training["logit_scale"],
                final_logit_scale=training["final_logit_scale"],
                dtype=getattr(torch, training["dtype"]),
                device=str(resolve_device(device)),
            ),
            sweeps=sweeps,
        )


def _theory_rows(placement: str, d: int, length: int, margin: float) -> list[dict[str, Any]]:
    """Lower bound and construction of the softmax regression model at one (placement, d, L)."""
    base = {
        "placement": placement,
        "attention": "softmax",
        "readout": "regression",
        "d": d,
        "L": length,
    }
    wall = prenorm_max_length(2 * d / math.sqrt(d)) if placement == "pre_bare" else math.inf
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


def theory_table(study: CountingStudy) -> pd.DataFrame:
    """bmin_theory.csv: per (placement, attention, read-out, d, L) the reduced-problem lower
    bound and the verified construction (inf where no B suffices: pre-norm past its wall)."""
    rows: list[dict[str, Any]] = []
    jobs = [(p, d, length) for d in study.widths for p in PLACEMENTS for length in study.lengths]
    for placement, d, length in tqdm(jobs, desc="theory", mininterval=5):
        rows += _theory_rows(placement, d, length, study.margin)
        spec = ModelSpec(placement, "classification", d, length)
        if length <= study.classification_max_length:
            rows.append(
                {
                    "placement": placement,
                    "attention": "softmax",
                    "readout": "classification",
                    "d": d,
                    "L": length,
                    "bound": "construction",
                    "bmin": _verified(spec, study.margin),
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
                    "bmin": _verified(linear, study.margin),
                }
            )
        log.info("%s d=%d L=%d: %s", placement, d, length, rows[-1]["bmin"])
    return pd.DataFrame(rows, columns=THEORY_COLUMNS)


def geometry_table(study: CountingStudy) -> pd.DataFrame:
    """C1 data: psi(z(c, 0)), c = 0..L, of every construction, in the best 2-plane through the
    origin (top two right-singular vectors), with the radius |psi| for reference."""
    d, length = study.widths[0], study.geometry_length
    frames = []
    for placement in PLACEMENTS:
        for readout in ("regression", "classification"):
            spec = ModelSpec(placement, readout, d, length)
            found = construct(spec, study.margin)
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


def _train_length(study: CountingStudy, readout: str, length: int) -> pd.DataFrame:
    """One batched training of every (B, seed) run of a read-out at length L."""
    sweep = study.sweeps[readout]
    cfg = replace(study.train, steps=sweep.steps, lr=sweep.lr)
    bounds = list(sweep.bounds) if length in sweep.lengths else []
    bounds += [math.inf] if length in sweep.unconstrained_lengths else []
    runs = [(b, s) for b in bounds for s in study.seeds]
    spec = ModelSpec(TRAINED_PLACEMENT, readout, study.train_width, length)
    log.info("training %s L=%d: %d runs x %d steps", readout, length, len(runs), cfg.steps)
    metrics, _ = train_runs(spec, [b for b, _ in runs], [s for _, s in runs], cfg, progress=True)
    frame = pd.DataFrame(
        {
            "placement": TRAINED_PLACEMENT,
            "readout": readout,
            "d": spec.d,
            "L": length,
            "B": [b for b, _ in runs],
            "seed": [s for _, s in runs],
            "steps": cfg.steps,
        }
    )
    for key, values in metrics.items():
        frame[key] = values
    best = frame.groupby("B")["accuracy"].max()
    log.info("L=%d best accuracy per B: %s", length, best.round(4).to_dict())
    return frame


def training_table(
    study: CountingStudy, readout: str, checkpoint: Checkpoint | None = None
) -> pd.DataFrame:
    """training.csv rows of one read-out: for every L one batched training of all its
    (B, seed) runs (B = inf: unconstrained) on the learned-post-norm model. Each L is one
    checkpoint item, so a killed sweep resumes at the first unfinished length."""
    checkpoint = checkpoint or NoCheckpoint()
    sweep = study.sweeps[readout]
    lengths = sorted(set(sweep.lengths) | set(sweep.unconstrained_lengths))
    frames = [
        checkpoint.cached(f"L={length}", partial(_train_length, study, readout, length))
        for length in lengths
    ]
    return pd.concat(frames, ignore_index=True)[TRAINING_COLUMNS]


def empirical_bmin(training: pd.DataFrame) -> pd.DataFrame:
    """Smallest B of the grid at which some seed counts the whole grid exactly; lengths where
    no B succeeds are kept with bmin = inf and reached = False."""
    constrained = training[np.isfinite(training["B"])]
    rows = []
    for (placement, readout, d, length), part in constrained.groupby(
        ["placement", "readout", "d", "L"]
    ):
        ok = part.loc[part["accuracy"] >= 1.0, "B"]
        rows.append(
            {
                "placement": placement,
                "readout": readout,
                "d": d,
                "L": length,
                "bmin": float(ok.min()) if len(ok) else math.inf,
                "reached": bool(len(ok)),
                "bounds_tried": " ".join(f"{b:g}" for b in sorted(part["B"].unique())),
            }
        )
    return pd.DataFrame(rows, columns=EMPIRICAL_COLUMNS)


def rates_table(theory: pd.DataFrame, empirical: pd.DataFrame, fit_points: int) -> pd.DataFrame:
    """Fitted exponents of B_min(L) over the last `fit_points` finite points of each curve,
    next to the theory's prediction (softmax attention, smallest width)."""
    rows = []
    softmax = theory[(theory["attention"] == "softmax") & (theory["d"] == theory["d"].min())]
    for (placement, readout, source), part in softmax.groupby(["placement", "readout", "bound"]):
        if readout == "regression" and placement not in REGRESSION_RATE_PLACEMENTS:
            continue  # bare pre-norm has a wall, not a rate
        part = part.sort_values("L")
        rows.append(
            {
                "placement": placement,
                "readout": readout,
                "source": source,
                "fitted_exponent": fitted_exponent(
                    part["L"].to_numpy(), part["bmin"].to_numpy(), fit_points
                ),
                "predicted_exponent": predicted_exponent(placement, readout),
            }
        )
    for (placement, readout), part in empirical.groupby(["placement", "readout"]):
        part = part.sort_values("L")
        rows.append(
            {
                "placement": placement,
                "readout": readout,
                "source": "training",
                "fitted_exponent": fitted_exponent(
                    part["L"].to_numpy(), part["bmin"].to_numpy(), fit_points
                ),
                "predicted_exponent": predicted_exponent(placement, readout),
            }
        )
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


__all__ = [
    "EMPIRICAL_COLUMNS",
    "GEOMETRY_COLUMNS",
    "RATE_COLUMNS",
    "THEORY_COLUMNS",
    "TRAINING_COLUMNS",
    "CountingStudy",
    "empirical_bmin",
    "geometry_table",
    "rates_table",
    "theory_table",
    "training_table",
]
