"""Softmax: Jacobian norms, relative conditions, shifted/unshifted low-precision evaluation.

J = diag(p) − ppᵀ. Its rows sum in absolute value to 2p_i(1 − p_i), so ‖J‖∞ = ‖J‖₁ =
max_i 2p_i(1 − p_i) ≤ 2(1 − p_max), and the ∞→1 norm that carries logit errors into the
attention output is at most Σ_ij |J_ij| = 2(1 − Σp²) ≤ 2(1 − p_max²): a sink (p_max → 1)
silences the logit errors. Evaluation rounds the argument of exp once: z itself (unshifted) or
z − max z (shifted), so the relative sensitivity is |z_i| + Σp_j|z_j| or the same in z − max z.
"""

from __future__ import annotations

import math

import torch

from transformer_stability.numerics.lowp import (
    fl,
    gamma,
    operation_roundoff,
    pairwise_depth,
    pairwise_sum,
)


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)


def jacobian_inf_norm(p: torch.Tensor) -> torch.Tensor:
    """‖J‖∞ = ‖J‖₁ = max_i 2p_i(1 − p_i) (J is symmetric)."""
    return (2 * p * (1 - p)).amax(dim=-1)


def jacobian_abs_sum(p: torch.Tensor) -> torch.Tensor:
    """Σ_ij |J_ij| = 2(1 − Σp²), the bound on ‖J‖_{∞→1} used for attention."""
    return 2 * (1 - p.pow(2).sum(dim=-1))


def relative_condition(z: torch.Tensor, p: torch.Tensor, shifted: bool) -> torch.Tensor:
    """κ_i = |w_i| + Σ_j p_j|w_j| with w = z − max z (shifted) or w = z (unshifted)."""
    w = _argument(z, shifted)
    return w.abs() + (p * w.abs()).sum(dim=-1, keepdim=True)


def _argument(z: torch.Tensor, shifted: bool) -> torch.Tensor:
    return z - z.amax(dim=-1, keepdim=True) if shifted else z


def softmax_lowp(z: torch.Tensor, bits: int, shifted: bool) -> torch.Tensor:
    """Softmax with the exp argument, each exp, the pairwise sum and the division rounded."""
    e = fl(fl(_argument(z, shifted), bits).exp(), bits)
    return fl(e / pairwise_sum(e, bits).unsqueeze(-1), bits)


def softmax_error_bound(z: torch.Tensor, bits: int, shifted: bool) -> torch.Tensor:
    """Bound on |softmax_lowp(z)_i − p_i|/p_i for float64 logits z.

    log(p̂_i/p_i) = w_iδ_i + log(1+η_i) + log(1+ζ_i) − log Σ_j p_j e^{x_j} with |x_j| ≤ b_j =
    |w_j|u + λ + λ_k (argument, exp and summation errors); by Jensen the last term is at most
    B = log Σ_j p_j e^{b_j} in magnitude. First order this is κ_i·u + (k + 2)·u.
    """
    u = operation_roundoff(bits)
    w = _argument(z, shifted)
    p = torch.softmax(z, dim=-1)
    exp_error = -math.log1p(-u)
    sum_error = -math.log1p(-gamma(pairwise_depth(z.shape[-1]), u))
    b = w.abs() * u + exp_error + sum_error
    log_bound = w.abs() * u + 2 * exp_error + torch.logsumexp(p.log() + b, dim=-1, keepdim=True)
    return torch.expm1(log_bound)


def sink_logits(
    n: int, p_max: float, spread: float, offset: float, samples: int, generator: torch.Generator
) -> torch.Tensor:
    """Logit rows whose first entry (the sink) carries probability exactly p_max.

    The others are spread·N(0, 1); the sink logit is log(p_max/(1 − p_max)·Σ_j e^{z_j}). A
    common offset leaves the probabilities unchanged but moves the unshifted exp arguments.
    """
    z = spread * torch.randn(samples, n, generator=generator, dtype=torch.float64)
    z[:, 0] = math.log(p_max / (1 - p_max)) + torch.logsumexp(z[:, 1:], dim=-1)
    return z + offset


def perturbation_gain(z: torch.Tensor, eta: float, generator: torch.Generator) -> torch.Tensor:
    """‖softmax(z + δ) − softmax(z)‖₁/η for random δ with |δ_j| = η (float64)."""
    signs = torch.randint(0, 2, z.shape, generator=generator, dtype=torch.float64) * 2 - 1
    delta = torch.softmax(z + eta * signs, dim=-1) - torch.softmax(z, dim=-1)
    return delta.abs().sum(dim=-1) / eta


def perturbation_bound(p: torch.Tensor, eta: float) -> torch.Tensor:
    """sup of 2(1 − p_max²) along the segment z + tδ, |δ| ≤ η: p_max shrinks by at most e^{−2η}."""
    p_max = p.amax(dim=-1) * math.exp(-2 * eta)
    return 2 * (1 - p_max.pow(2))
