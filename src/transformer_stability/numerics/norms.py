"""LayerNorm and RMSNorm (ε = 0, no affine map): Jacobians, condition numbers, low-precision
evaluation and a rigorous running error bound for that evaluation.

With one massive coordinate (x = M·e_k + z), LayerNorm's normwise condition stays near 1 but
its mean absorbs M, so the bulk coordinates x_i − μ lose accuracy in proportion to u·M/d; RMSNorm
never subtracts and stays at a few u. The bounds below follow the evaluation step by step
(pairwise sums, every operation rounded) and keep the second-order terms, so they hold exactly.
"""

from __future__ import annotations

import torch

from transformer_stability.numerics.lowp import (
    Format,
    fl,
    gamma,
    operation_roundoff,
    pairwise_depth,
    pairwise_sum,
)


def layer_norm(x: torch.Tensor) -> torch.Tensor:
    centered = x - x.mean(dim=-1, keepdim=True)
    return centered / centered.pow(2).mean(dim=-1, keepdim=True).sqrt()


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x / x.pow(2).mean(dim=-1, keepdim=True).sqrt()


def layer_norm_jacobian(x: torch.Tensor) -> torch.Tensor:
    """(I − 11ᵀ/d − yyᵀ/d)/σ with y = LN(x), for x of shape (..., d)."""
    d = x.shape[-1]
    y = layer_norm(x)
    sigma = (x - x.mean(dim=-1, keepdim=True)).pow(2).mean(dim=-1).sqrt()
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    inner = eye - 1.0 / d - y.unsqueeze(-1) * y.unsqueeze(-2) / d
    return inner / sigma[..., None, None]


def rms_norm_jacobian(x: torch.Tensor) -> torch.Tensor:
    """(I − yyᵀ/d)/r with y = RMS(x), r = ‖x‖₂/√d."""
    d = x.shape[-1]
    y = rms_norm(x)
    r = x.pow(2).mean(dim=-1).sqrt()
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    return (eye - y.unsqueeze(-1) * y.unsqueeze(-2) / d) / r[..., None, None]


def layer_norm_condition(x: torch.Tensor) -> torch.Tensor:
    """Normwise relative condition number ‖J‖₂‖x‖₂/‖LN(x)‖₂ = ‖x‖₂/‖x − mean(x)·1‖₂."""
    return x.norm(dim=-1) / (x - x.mean(dim=-1, keepdim=True)).norm(dim=-1)


def rms_norm_condition(x: torch.Tensor) -> torch.Tensor:
    """RMSNorm's normwise relative condition number is exactly 1 (ε = 0)."""
    return torch.ones(x.shape[:-1], dtype=x.dtype, device=x.device)


def componentwise_condition(
    jacobian: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """κ_i = (|J||x|)_i/|y_i|: the relative sensitivity of y_i to relative changes of every x_j."""
    return _sensitivity(jacobian, x) / y.abs()


def _sensitivity(jacobian: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """(|J||x|)_i: the first-order change of y_i under relative input perturbations ≤ 1."""
    return (jacobian.abs() @ x.abs().unsqueeze(-1)).squeeze(-1)


def layer_norm_lowp(x: torch.Tensor, bits: int) -> torch.Tensor:
    """LayerNorm evaluated with every operation rounded to `bits` (two-pass, pairwise sums)."""
    d = x.shape[-1]
    mean = fl(pairwise_sum(x, Format(bits)) / d, bits)
    centered = fl(x - mean.unsqueeze(-1), bits)
    variance = fl(pairwise_sum(fl(centered * centered, bits), Format(bits)) / d, bits)
    return fl(centered / fl(variance.sqrt(), bits).unsqueeze(-1), bits)


def rms_norm_lowp(x: torch.Tensor, bits: int) -> torch.Tensor:
    d = x.shape[-1]
    mean_square = fl(pairwise_sum(fl(x * x, bits), Format(bits)) / d, bits)
    return fl(x / fl(mean_square.sqrt(), bits).unsqueeze(-1), bits)


def _division_error(
    numerator: torch.Tensor,
    numerator_error: torch.Tensor,
    sigma: torch.Tensor,
    sigma_error: torch.Tensor,
    u: float,
) -> torch.Tensor:
    """Bound on |fl(n̂/σ̂) − n/σ| given |n̂ − n| and |σ̂ − σ| (inf once σ̂ may vanish)."""
    low = (sigma - sigma_error).clamp_min(0)
    exact = numerator_error / low + numerator.abs() * sigma_error / (sigma * low)
    return exact * (1 + u) + u * numerator.abs() / sigma


def _sqrt_error(value: torch.Tensor, value_error: torch.Tensor, u: float) -> torch.Tensor:
    """Bound on |fl(√v̂) − √v| given |v̂ − v|: |√v̂ − √v| ≤ |v̂ − v|/√v, then one rounding."""
    root = value.sqrt()
    return value_error / root * (1 + u) + u * root


def layer_norm_error_bound(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Per-coordinate bound on |layer_norm_lowp(x) − LN(x)| for x exactly representable."""
    d = x.shape[-1]
    u = operation_roundoff(bits)
    g = gamma(pairwise_depth(d), u)
    mean = x.mean(dim=-1)
    sum_error = g * x.abs().sum(dim=-1)
    mean_error = sum_error / d + u * (mean.abs() + sum_error / d)
    centered = x - mean.unsqueeze(-1)
    centered_error = mean_error.unsqueeze(-1) + u * (centered.abs() + mean_error.unsqueeze(-1))
    squares_error = centered_error * (2 * centered.abs() + centered_error)
    computed_squares = (centered.abs() + centered_error).pow(2) * (1 + u)
    variance = centered.pow(2).mean(dim=-1)
    variance_error = (
        squares_error.sum(dim=-1)
        + u * computed_squares.sum(dim=-1)
        + g * computed_squares.sum(dim=-1)
    ) / d
    variance_error = variance_error + u * (variance + variance_error)
    sigma = variance.sqrt()
    return _division_error(
        centered,
        centered_error,
        sigma.unsqueeze(-1),
        _sqrt_error(variance, variance_error, u).unsqueeze(-1),
        u,
    )


def rms_norm_error_bound(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Per-coordinate bound on |rms_norm_lowp(x) − RMS(x)| for x exactly representable."""
    d = x.shape[-1]
    u = operation_roundoff(bits)
    g = gamma(pairwise_depth(d), u)
    mean_square = x.pow(2).mean(dim=-1)
    sum_error = (u + g * (1 + u)) * d * mean_square
    mean_square_error = sum_error / d + u * (mean_square + sum_error / d)
    r = mean_square.sqrt()
    r_error = _sqrt_error(mean_square, mean_square_error, u)
    return _division_error(x, torch.zeros_like(x), r.unsqueeze(-1), r_error.unsqueeze(-1), u)


NORMS = {
    "layernorm": (
        layer_norm,
        layer_norm_lowp,
        layer_norm_error_bound,
        layer_norm_jacobian,
        layer_norm_condition,
    ),
    "rmsnorm": (
        rms_norm,
        rms_norm_lowp,
        rms_norm_error_bound,
        rms_norm_jacobian,
        rms_norm_condition,
    ),
}


def outlier_inputs(dim: int, outlier: float, samples: int, bits: int, seed: int) -> torch.Tensor:
    """x = M·e_0 + z, z ~ N(0, I_d), rounded to the test format so the input itself is exact."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, dim, generator=generator, dtype=torch.float64)
    x[:, 0] += outlier
    return fl(x, bits)


def norm_measurements(x: torch.Tensor, norm: str, bits: int) -> dict[str, torch.Tensor]:
    """Conditions, measured errors and bounds per sample; coordinate 0 is the outlier.

    Componentwise quantities are taken over the bulk (non-outlier) coordinates: their median
    is the typical coordinate and their max the worst. `err_bulk` measures the bulk's largest
    error in units of the bulk's own spread (std over its coordinates): a common offset such as
    LayerNorm's −μ/σ can keep per-coordinate relative errors small while the information that
    distinguishes the coordinates is lost; `kappa_bulk` is the matching condition number,
    max_i (|J||x|)_i over the bulk divided by the same spread.
    """
    exact, lowp, bound, jacobian, condition = NORMS[norm]
    y = exact(x)
    error = (lowp(x, bits) - y).abs()
    limit = bound(x, bits)
    jac = jacobian(x)
    kappa = componentwise_condition(jac, x, y)
    bulk = slice(1, None)
    relative = (error / y.abs())[:, bulk]
    relative_bound = (limit / y.abs())[:, bulk]
    spread = y[:, bulk].std(dim=-1)
    return {
        "kappa_normwise": condition(x),
        "kappa_comp_median": kappa[:, bulk].median(dim=-1).values,
        "kappa_bulk": _sensitivity(jac, x)[:, bulk].amax(dim=-1) / spread,
        "err_normwise": error.norm(dim=-1) / y.norm(dim=-1),
        "bound_normwise": limit.norm(dim=-1) / y.norm(dim=-1),
        "err_comp_median": relative.median(dim=-1).values,
        "bound_comp_median": relative_bound.median(dim=-1).values,
        "err_comp_max": relative.amax(dim=-1),
        "bound_comp_max": relative_bound.amax(dim=-1),
        "err_bulk": error[:, bulk].amax(dim=-1) / spread,
        "bound_bulk": limit[:, bulk].amax(dim=-1) / spread,
    }
