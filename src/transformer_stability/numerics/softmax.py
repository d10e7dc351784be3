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

from transformer_stability.numerics.lowp import Format, pairwise_depth, pairwise_sum
from transformer_stability.numerics.rounding import unit_roundoff

# exp leaves float64's normal range outside (EXP_SUBNORMAL, EXP_OVERFLOW)
EXP_OVERFLOW = math.log(torch.finfo(torch.float64).max)
EXP_SUBNORMAL = math.log(torch.finfo(torch.float64).tiny)


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


def softmax_lowp(z: torch.Tensor, fmt: Format, shifted: bool) -> torch.Tensor:
    """Softmax with the exp argument, each exp, the pairwise sum and the division computed in
    float64 and rounded to `fmt`; beyond the format's range an exp or a sum overflows to inf
    (and the row to nan), as unshifted fp16 does for z > 11.09."""
    e = fmt.round(fmt.round(_argument(z, shifted)).exp())
    return fmt.round(e / pairwise_sum(e, fmt).unsqueeze(-1))


def softmax_error_bound(z: torch.Tensor, fmt: Format, shifted: bool) -> torch.Tensor:
    """Per-entry bound on |softmax_lowp(z)_i − p_i| for float64 logits z (inf on overflow).

    The rounded exponentials are ê_j = E_j(1 + ε_j) + η_j, |ε_j| ≤ b_j (argument and exp
    rounding), |η_j| ≤ η the format's underflow error (0 for the emulated formats); with
    ε'_j = ε_j + η_j/E_j and b'_j = b_j + η/E_j the row is ê_j = E_j(1 + ε'_j), and
    p_j·b'_j = p_j·b_j + η/ΣE stays small where a tail entry underflows. The computed row is
    split as p → q → c → p̂ with q_j = ê_j/Σê (exact normalisation), c_j = ê_j/Ŝ (the rounded
    sum Ŝ) and p̂_j = fl(c_j). Three facts keep the sink's correlation: q_i − p_i =
    p_i(ε'_i − ε̄)/(1 + ε̄), ε̄ = Σp_jε'_j, whose i-th coefficient is (1 − p_i), so the sink's
    own rounding enters only through the tail mass; a rounded addition of two representable
    terms errs by at most the smaller one (`pairwise_sum_error_bound`; additions are exact
    below the normal range); and rounding c_i ≤ 1 errs by at most 1 − c_i, as 1 is
    representable. Rounding c_i may underflow: η more. What is left that does not vanish with
    1 − p_max is the inner arithmetic's resolution (`Format.inner`) and η.
    """
    u, eta = fmt.roundoff, fmt.underflow
    w = _argument(z, shifted)
    p = torch.softmax(z, dim=-1)
    b = torch.exp(w.abs() * u + eta) * ((1 + unit_roundoff(fmt.bits)) * (1 + fmt.inner)) - 1
    relative = b
    if eta > 0:
        b = b + eta / w.exp()
    b_mean = (p * b).sum(dim=-1, keepdim=True)
    weighted = b_mean - p * b
    normalisation = p * ((1 - p) * b + weighted) / (1 - b_mean)
    q_upper = p * (1 + b) / (1 - b_mean)
    total = pairwise_sum_error_bound(p * (1 + b), fmt).unsqueeze(-1) / (1 - b_mean)
    summation = q_upper * total / (1 - total)
    c_upper = q_upper / (1 - total)
    tail = (p * (1 + b)).sum(dim=-1, keepdim=True) - p * (1 + b)
    one_minus_c = tail / (p * (1 - b)).clamp(min=0) + total
    division = torch.minimum(u * c_upper, one_minus_c + fmt.inner * c_upper) + eta
    bound = normalisation + summation + division
    # the normalisation's perturbations (or the sum's) reach the size of the row
    lost = (b_mean >= 1) | (total >= 1)
    overflow = _largest_sum(w, relative, fmt) >= math.log(fmt.largest)
    outside = _outside_exp_range(w, u, fmt.largest)
    return torch.where(outside | overflow | lost, math.inf, bound)


def _largest_sum(w: torch.Tensor, relative: torch.Tensor, fmt: Format) -> torch.Tensor:
    """Log of a bound on the largest computed partial sum: (Σe^w(1 + b_j) + nη)(1 + u)^depth,
    b_j the relative part of the exponentials' perturbations."""
    largest = torch.logsumexp(w + relative.log1p(), dim=-1, keepdim=True)
    if fmt.underflow > 0:
        largest = torch.logaddexp(largest, torch.tensor(math.log(w.shape[-1] * fmt.underflow)))
    return largest + pairwise_depth(w.shape[-1]) * math.log1p(fmt.roundoff)


def _outside_exp_range(w: torch.Tensor, u: float, largest: float) -> torch.Tensor:
    """Rows where a rounded argument may overflow exp (in float64 or in the format) or reach
    float64's subnormals, where the relative error model of the exponentials no longer holds."""
    reach = w * (1 + u)
    top = min(EXP_OVERFLOW, math.log(largest))
    return ((reach >= top) | (reach <= EXP_SUBNORMAL)).any(dim=-1, keepdim=True)


def pairwise_sum_error_bound(upper: torch.Tensor, fmt: Format) -> torch.Tensor:
    """Bound on |pairwise_sum(x) − Σx| for 0 ≤ x_j ≤ upper_j, following the same tree.

    The errors of the additions add up without amplification (Ŝ = Σx + Σ_nodes r_node). A node
    adds computed, representable a, b ≥ 0: first in float64 (and float32 for a cast), then
    rounded to the format, so r ≤ u(a + b) (a sum below the normal range is exact) and also
    r ≤ min(a, b) + inner·(a + b) (the format holds a and b themselves). Partial sums are
    bounded from above by (U_a + U_b)(1 + u).
    """
    u = fmt.roundoff
    total = torch.zeros(upper.shape[:-1], dtype=upper.dtype, device=upper.device)
    while upper.shape[-1] > 1:
        if upper.shape[-1] % 2:
            upper = torch.cat([upper, torch.zeros_like(upper[..., :1])], dim=-1)
        a, b = upper[..., 0::2], upper[..., 1::2]
        node = a + b
        total = total + torch.minimum(u * node, torch.minimum(a, b) + fmt.inner * node).sum(-1)
        upper = node * (1 + u)
    return total


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
