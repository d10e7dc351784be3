"""Emulated low-precision arithmetic for the synthetic bound experiments.

Each operation is carried out in float64 and its result rounded to `bits` mantissa bits, so an
operation's relative error is at most u + 2⁻⁵³ with u = 2^-(bits+1). Sums are pairwise (a tree,
as GPU reductions and NumPy do), whose error is bounded by γ_k Σ|x_j| with k = ⌈log₂ n⌉.
"""

from __future__ import annotations

import math

import torch

from transformer_stability.numerics.rounding import round_mantissa, unit_roundoff


def fl(x: torch.Tensor, bits: int, max_exponent: int | None = None) -> torch.Tensor:
    """Round a float64 tensor to `bits` mantissa bits; with `max_exponent` (15 for fp16) the
    range ends at the largest finite number 2^max_exponent·(2 − 2^-bits), beyond which results
    overflow to ±inf as in IEEE arithmetic (the bottom of float64's range is kept)."""
    rounded = round_mantissa(x.to(torch.float64), bits)
    if max_exponent is None:
        return rounded
    return torch.where(
        rounded.abs() > largest_finite(bits, max_exponent), rounded * math.inf, rounded
    )


def largest_finite(bits: int, max_exponent: int | None) -> float:
    """The largest finite number of the format (float64's when the exponent is not limited)."""
    if max_exponent is None:
        return torch.finfo(torch.float64).max
    return 2.0**max_exponent * (2 - 2.0**-bits)


def operation_roundoff(bits: int) -> float:
    """Bound on one emulated operation's relative error: float64 rounding, then m-bit rounding."""
    return unit_roundoff(bits) + 2.0**-53 * (1 + unit_roundoff(bits))


def pairwise_sum(x: torch.Tensor, bits: int, max_exponent: int | None = None) -> torch.Tensor:
    """Sum over the last axis as a balanced tree, every partial sum rounded."""
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = torch.cat([x, torch.zeros_like(x[..., :1])], dim=-1)
        x = fl(x[..., 0::2] + x[..., 1::2], bits, max_exponent)
    return x[..., 0]


def gamma(n: int, u: float) -> float:
    """γ_n = nu/(1 − nu): the bound on n compounded roundings; inf once nu ≥ 1."""
    return n * u / (1 - n * u) if n * u < 1 else math.inf


def pairwise_depth(n: int) -> int:
    """Rounded additions on any root-to-leaf path of the pairwise tree over n terms."""
    return max(math.ceil(math.log2(n)), 0) if n > 1 else 0
