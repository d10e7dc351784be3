"""Storage and precision of a counting model: how many numbers it stores, and how close its
output comes to the rounding threshold on the whole grid, in float64 and float32.

The threshold is what a float format must resolve: a regression output must stay within 1/2 of
c, a classification argmax must keep the true logit above every other. Relative to the size of
the outputs, that gap is the relative precision the forward pass needs, so -log2 of it is the
number of mantissa bits it implies (float32 carries 24, float64 53).
"""

from __future__ import annotations

import math

import torch

from transformer_stability.counting.constructions import HALF, Construction
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.model import ModelSpec, grid_forward, logit_margins

FORMATS = {"float64": torch.float64, "float32": torch.float32}


def parameter_count(spec: ModelSpec) -> int:
    """Trainable numbers: e_Q, e_a, e_b, gamma and beta for learned norms, and the read-out,
    u and b0 (d + 1) for regression or one row (w_k, b_k) per count (L + 1 rows) for
    classification."""
    d = spec.d
    shared = 3 * d + (2 * d if spec.learned else 0)
    return shared + (d + 1 if spec.readout == "regression" else spec.n_classes * (d + 1))


def grid_margins(construction: Construction, dtype: torch.dtype, chunk: int = 1 << 18) -> dict:
    """Over the whole grid, evaluated in `dtype` (parameters rounded to it): the fraction of
    points counted exactly, the smallest gap to the rounding threshold (1/2 - |y - c|, or the
    true logit minus the best other; negative where wrong), the largest output magnitude, and
    their ratio (the relative margin, nan where not every point is exact)."""
    spec = construction.spec
    params = construction.params.map(lambda t: t.to(dtype))
    c_all, m_all = torch_grid(spec.length)
    points = chunk if spec.readout == "regression" else max(1, chunk // spec.n_classes)
    correct, margin, size = 0, math.inf, 0.0
    with torch.no_grad():
        for start in range(0, len(c_all), points):
            c, m = c_all[start : start + points], m_all[start : start + points]
            out = grid_forward(spec, params, c, m)
            if spec.readout == "regression":
                gap = HALF - (out - c.to(dtype)).abs()
            else:
                gap = logit_margins(out, c)
            correct += int((gap > 0).sum())
            margin = min(margin, float(gap.min()))
            size = max(size, float(out.abs().max()))
    relative = margin / size if margin > 0 and size > 0 else math.nan
    return {
        "accuracy": correct / len(c_all),
        "margin": margin,
        "output_scale": size,
        "relative_margin": relative,
    }
