"""Study N synthetic bound experiments (N5-N7) from their config sections, one table each.

Kept apart from the GPT-2 runs so that these jobs never import `transformers`.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from tqdm import tqdm

from transformer_stability.numerics import attention, norms, softmax
from transformer_stability.numerics.items import model_seed
from transformer_stability.numerics.lowp import Format


def norms_table(cfg: dict, seed: int) -> pd.DataFrame:
    """N5: LayerNorm vs RMSNorm conditions, errors and bounds against the outlier size M."""
    rows = []
    for bits in cfg["mantissa_bits"]:
        for i, outlier in enumerate(tqdm(cfg["outliers"], desc=f"norms m={bits}", mininterval=5)):
            x = norms.outlier_inputs(cfg["dim"], outlier, cfg["samples"], bits, seed + i)
            for norm in norms.NORMS:
                for metric, values in norms.norm_measurements(x, norm, bits).items():
                    rows += [
                        {
                            "norm": norm,
                            "mantissa_bits": bits,
                            "outlier": outlier,
                            "sample": s,
                            "metric": metric,
                            "value": float(v),
                        }
                        for s, v in enumerate(values)
                    ]
    return pd.DataFrame(rows)


def softmax_table(cfg: dict, seed: int) -> pd.DataFrame:
    """N6: softmax sensitivity and evaluation error against the sink mass and the logit offset,
    in the emulated format; the sink rows also through real torch casts (`formats`), where the
    tails reach the subnormals."""
    generator = torch.Generator().manual_seed(seed)
    emulated = Format(cfg["mantissa_bits"], cfg["max_exponent"])
    casts = [Format.parse(name) for name in cfg["formats"]]
    rows, grid = [], [(p, 0.0, "sink") for p in cfg["p_max"]]
    grid += [(cfg["offset_p_max"], c, "offset") for c in cfg["offsets"]]
    for p_max, offset, sweep in grid:
        z = softmax.sink_logits(cfg["n"], p_max, cfg["spread"], offset, cfg["samples"], generator)
        p = torch.softmax(z, dim=-1)
        base = {"sweep": sweep, "p_max": p_max, "offset": offset}
        if sweep == "sink":
            gain = softmax.perturbation_gain(z, cfg["eta"], generator)
            bound = softmax.perturbation_bound(p, cfg["eta"])
            exact = {**base, "format": "fp64", "mantissa_bits": 52}
            rows += _sample_rows(exact, "propagation", "l1_gain", gain, bound)
            rows += _sample_rows(
                exact, "propagation", "jacobian_abs_sum", softmax.jacobian_abs_sum(p), bound
            )
        for fmt in [emulated, *(casts if sweep == "sink" else [])]:
            rows += _evaluation_rows(
                {**base, "format": fmt.name, "mantissa_bits": fmt.bits}, z, p, fmt, fmt is emulated
            )
    return pd.DataFrame(rows)


def _evaluation_rows(
    base: dict, z: torch.Tensor, p: torch.Tensor, fmt: Format, conditions: bool
) -> list[dict]:
    """Shifted and unshifted evaluation in `fmt`: the largest relative error, the 1-norm error
    and the entry closest to (or furthest above) its bound, each against its bound; with
    `conditions` the largest relative condition number too (it does not depend on the format)."""
    rows = []
    for shifted in (False, True):
        mode = "shifted" if shifted else "unshifted"
        error = (softmax.softmax_lowp(z, fmt, shifted) - p).abs()
        error = torch.where(torch.isnan(error), math.inf, error)  # an overflowed row
        limit = softmax.softmax_error_bound(z, fmt, shifted)
        rows += _sample_rows(base, mode, "max_rel", (error / p).amax(-1), (limit / p).amax(-1))
        rows += _sample_rows(base, mode, "l1_abs", error.sum(-1), limit.sum(-1))
        closest = (error / limit).nan_to_num(nan=0.0).argmax(-1, keepdim=True)
        rows += _sample_rows(
            base,
            mode,
            "worst_entry",
            error.gather(-1, closest).squeeze(-1),
            limit.gather(-1, closest).squeeze(-1),
        )
        if conditions:
            kappa = softmax.relative_condition(z, p, shifted).amax(-1)
            rows += _sample_rows(
                base, mode, "kappa_max", kappa, torch.full_like(kappa, float("nan"))
            )
    return rows


def _sample_rows(base: dict, mode: str, metric: str, measured, bound) -> list[dict]:
    return [
        {
            **base,
            "mode": mode,
            "metric": metric,
            "sample": s,
            "measured": float(m),
            "bound": float(b),
        }
        for s, (m, b) in enumerate(zip(measured, bound, strict=True))
    ]


def lipschitz_table(cfg: dict, seed: int) -> pd.DataFrame:
    """N7: per weight draw (the same weights at every n) and length n, the Lipschitz constant
    of self-attention at a random input (∞-norm exact, 2-norm by power iteration), the largest
    ∞-norm constant found by ascent over the R-ball, and the bounds at the input and over the
    ball."""
    radius, search, rows = cfg["radius"], cfg["search"], []
    for draw in range(cfg["draws"]):
        weight_seed = model_seed(seed, f"lipschitz-weights{draw}")
        weights = attention.AttentionWeights.random(
            cfg["dim"], torch.Generator().manual_seed(weight_seed)
        )
        for n in tqdm(cfg["seq_lens"], desc=f"attention Lipschitz, draw {draw}", mininterval=5):
            generator = torch.Generator().manual_seed(model_seed(seed, f"lipschitz{draw}-n{n}"))
            x = _uniform((n, cfg["dim"]), radius, generator)
            worst = max(
                attention.worst_case_search(
                    weights, start, radius, search["steps"], search["rate"]
                )[0]
                for start in [x]
                + [_uniform(x.shape, radius, generator) for _ in range(search["restarts"] - 1)]
            )
            frobenius = attention.estimate_frobenius(weights, x, generator, cfg["iterations"])
            p_max = float(weights.probabilities(x).amax(-1).min())
            base = {"seq_len": n, "draw": draw, "p_max_min": p_max}
            rows.append(
                _lipschitz_row(
                    base,
                    "inf",
                    attention.exact_inf(weights, x),
                    worst,
                    attention.lipschitz_bound_inf(weights, x),
                    attention.ball_bound_inf(weights, radius),
                )
            )
            rows.append(
                _lipschitz_row(
                    base,
                    "frobenius",
                    frobenius,
                    math.nan,
                    attention.lipschitz_bound_frobenius(weights, x),
                    attention.ball_bound_frobenius(weights, n, radius),
                )
            )
    return pd.DataFrame(rows)


def _lipschitz_row(
    base: dict, norm: str, estimate: float, worst: float, bound: float, ball: float
) -> dict:
    return {
        **base,
        "norm": norm,
        "estimate": estimate,
        "worst": worst,
        "bound": bound,
        "ball_bound": ball,
        "worst_over_estimate": worst / estimate,
        "bound_over_worst": ball / worst,
    }


def _uniform(shape, radius: float, generator: torch.Generator) -> torch.Tensor:
    return radius * (2 * torch.rand(shape, generator=generator, dtype=torch.float64) - 1)
