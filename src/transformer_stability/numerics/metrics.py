"""Error metrics of a test run against its float64 reference, and GPT-2 weight magnitudes.

Errors are heavy-tailed across tokens, so tables carry quantiles (never means). A non-finite
test value (fp16 overflow) counts as an infinite error, and quantiles are order statistics
(`inverted_cdf`), so an inf never turns into a nan by interpolation.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from transformer_stability.numerics.gpt2 import BlockWeights

QUANTILES = {"p01": 0.01, "p25": 0.25, "p50": 0.50, "p75": 0.75, "p99": 0.99}
ERROR_METRICS = ("rel_linf", "rel_comp", "abs_linf")
STREAM_METRICS = ("stream_min_l2", "stream_median_l2")


def token_errors(test: torch.Tensor, reference: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-token errors of `test` against float64 `reference` (both (..., d)), in float64.

    rel_linf = ‖Δ_t‖∞/‖h_t‖∞, rel_comp = max_i |Δ_ti|/|h_ti|, abs_linf = ‖Δ_t‖∞.
    """
    delta = (test.to(torch.float64) - reference).abs()
    delta = torch.where(torch.isfinite(delta), delta, math.inf)
    abs_linf = delta.amax(dim=-1)
    return {
        "rel_linf": abs_linf / reference.abs().amax(dim=-1),
        "rel_comp": (delta / reference.abs()).amax(dim=-1),
        "abs_linf": abs_linf,
    }


def stream_sizes(reference: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-sequence min_t ‖h_t‖₂ and median_t ‖h_t‖₂ of a (batch, T, d) stream."""
    norms = reference.norm(dim=-1)
    return {"stream_min_l2": norms.amin(dim=-1), "stream_median_l2": norms.median(dim=-1).values}


def quantiles(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=float).ravel()
    found = np.quantile(values, list(QUANTILES.values()), method="inverted_cdf")
    return dict(zip(QUANTILES, map(float, found), strict=True))


def inf_norm(matrix: torch.Tensor) -> float:
    """Max absolute row sum of a matrix in the x ↦ Wx layout."""
    return float(matrix.abs().sum(dim=1).max())


def weight_magnitudes(block: BlockWeights) -> dict[str, float]:
    """ω_OV = ‖W_O‖∞‖W_V‖∞, ω_UD = ‖W_fc‖∞‖W_proj‖∞, ω_KQ = (2/√d_h) max_h ‖|W_K^h|1‖₂‖|W_Q^h|1‖₂.

    GPT-2 stores weights as (in, out) for x ↦ xW; the x ↦ Wx matrices are their transposes.
    Computed on α = 1 weights.
    """
    w_q, w_k, w_v = _as_wx(block.qkv).chunk(3, dim=0)
    head_dim = w_q.shape[0] // block.heads
    kq = (_head_row_sums(w_k, block.heads) * _head_row_sums(w_q, block.heads)).max()
    return {
        "omega_ov": inf_norm(_as_wx(block.attn_proj)) * inf_norm(w_v),
        "omega_ud": inf_norm(_as_wx(block.fc)) * inf_norm(_as_wx(block.mlp_proj)),
        "omega_kq": float(2 / math.sqrt(head_dim) * kq),
    }


def _as_wx(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """The weight of a Conv1D (in, out) pair as the (out, in) matrix of x ↦ Wx, in float64."""
    return pair[0].to(torch.float64).T


def _head_row_sums(matrix: torch.Tensor, heads: int) -> torch.Tensor:
    """‖|W^h|1‖₂ per head of an (heads·d_h, d) projection."""
    return matrix.abs().sum(dim=1).view(heads, -1).norm(dim=1)


def layer_norm_statistics(
    stream: torch.Tensor, gain: torch.Tensor, eps: float
) -> dict[str, torch.Tensor]:
    """Per-token constants of x ↦ γ⊙LN(x) at x = h_t for the error recursions.

    LN's Jacobian is (I − 11ᵀ/d − yyᵀ/d)/σ with y = (x − μ)/σ. Its rows sum in absolute value
    to at most 2 + |y_i|‖y‖₁/d (∞-norm bound ‖γ‖∞(2 + ‖y‖∞‖y‖₁/d)/σ, `ln_lipschitz`); its
    largest singular value is 1 (2-norm constant ‖γ‖∞/σ, `ln_lipschitz_l2`). `ln_spread` is
    ‖γ‖∞(1 + ζ)(ρ + ζ), ζ = ‖y‖∞, ρ = mean|x|/σ, which sizes LN's own rounding error.
    """
    centered = stream - stream.mean(dim=-1, keepdim=True)
    sigma = (centered.pow(2).mean(dim=-1) + eps).sqrt()
    y = centered / sigma.unsqueeze(-1)
    largest = y.abs().amax(dim=-1)
    gain_max = gain.abs().max()
    return {
        "ln_lipschitz": gain_max * (2 + largest * y.abs().mean(dim=-1)) / sigma,
        "ln_lipschitz_l2": gain_max / sigma,
        "ln_spread": gain_max * (1 + largest) * (stream.abs().mean(dim=-1) / sigma + largest),
    }


def activation_lipschitz(act: torch.nn.Module, span: float = 8.0, points: int = 400_001) -> float:
    """max |act'(x)| over a fine grid: the Lipschitz constant of GELU-type activations."""
    x = torch.linspace(-span, span, points, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(act(x).sum(), x)
    return float(grad.abs().max())


def sink_statistics(probs: torch.Tensor, first_row: int) -> dict[str, torch.Tensor]:
    """Per head, the attention rows of queries t >= `first_row` of causal probabilities
    (batch, heads, T, T): each row's largest weight p_max and the first token's weight, as
    (heads, rows) float64. Early rows are left out: a causal row t has t + 1 entries, so its
    p_max is at least 1/(t + 1) whatever the weights; from t >= T/2 a spread row stays below 2/T
    and a p_max near 1 is a sink, not a short row."""
    late = probs[..., first_row:, :].to(torch.float64).transpose(0, 1)
    heads = late.shape[0]
    return {
        "p_max": late.amax(dim=-1).reshape(heads, -1),
        "first_token": late[..., 0].reshape(heads, -1),
    }
