"""Refit of trained classifiers' heads: after Adam, each constrained classification run's head is
replaced by the head of largest margin on the run's own trained representation, found by LP
(margins.separating_head) on the whole grid.

Why: a head is affine in the representation, so with the representation fixed, whether some head
counts every grid point exactly is a linear feasibility question, which an LP settles; Adam on a
cross-entropy with a ramped logit scale approaches the same head slowly at long L, where
neighbouring counts' representations lie 1e-4 apart (at L = 128 its heads missed by logit
margins of -3e-6 to -8e-3 on representations that admit a positive margin). The head's rows
are scaled so that the longest, with its bias, has norm B: the argmax ignores the scale, and B
is the largest the ball allows. A run keeps its trained head where no head counts every point
exactly, or where its trained head has the larger relative margin (the smallest logit margin
over the largest |logit|) on the whole grid, so the refit never makes a run worse and never
leaves the ball.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.margins import separating_head
from transformer_stability.counting.model import (
    ModelSpec,
    Params,
    grid_representation,
    logit_margins,
)


def fit_heads(spec: ModelSpec, params: Params, bounds: torch.Tensor) -> Params:
    """`params` with the head of every classification run of finite bound refitted (see the
    module docstring); runs of infinite bound, and every other parameter, as they are."""
    if spec.readout != "classification":
        raise ValueError(f"a head refit takes a classification's runs, not {spec.readout}'s")
    c, m = torch_grid(spec.length)
    exact = params.map(lambda t: t.detach().cpu().double())
    with torch.no_grad():
        rep = grid_representation(spec, exact, c, m)
    weights, biases = exact.head_w.clone(), exact.head_b.clone()
    for run, bound in enumerate(bounds.tolist()):
        if math.isfinite(bound):
            w, b, delta = separating_head(rep[run].numpy(), c.numpy(), spec.n_classes)
            if delta <= 0:
                continue  # no head counts every point: the trained one stays
            scale = bound / np.sqrt((w**2).sum(1) + b**2).max()
            fitted = (torch.from_numpy(w * scale), torch.from_numpy(b * scale))
            kept = (weights[run], biases[run])
            if relative_margin(rep[run], *fitted, c) > relative_margin(rep[run], *kept, c):
                weights[run], biases[run] = fitted
    dtype, device = params.head_w.dtype, params.head_w.device
    return Params(
        **params.tensors()
        | {"head_w": weights.to(device, dtype), "head_b": biases.to(device, dtype)}
    )


def relative_margin(
    rep: torch.Tensor, weights: torch.Tensor, biases: torch.Tensor, c: torch.Tensor
) -> float:
    """The smallest logit margin over the grid relative to the largest |logit| of one run's head
    (weights (K, d), biases (K,)) on its representation rep (G, d): scale-free, positive iff
    the head counts every point exactly, -inf for a zero head."""
    logits = (rep @ weights.T + biases)[None]
    largest = float(logits.abs().max())
    return float(logit_margins(logits, c).min()) / largest if largest > 0 else -math.inf
