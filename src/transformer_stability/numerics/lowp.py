"""Emulated low-precision arithmetic for the synthetic bound experiments.

Each operation is carried out in float64 and its result rounded to `bits` mantissa bits, so an
operation's relative error is at most u + 2⁻⁵³ with u = 2^-(bits+1). Sums are pairwise (a tree,
as GPU reductions and NumPy do), whose error is bounded by γ_k Σ|x_j| with k = ⌈log₂ n⌉.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from transformer_stability.numerics.items import FORMAT_MANTISSA_BITS
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


# torch's conversion from float64 to a 16-bit dtype goes through float32 (two roundings)
_CASTS = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Format:
    """A format the synthetic experiments round float64 results to. Emulated (`dtype` None,
    name m<bits>): one rounding to `bits` mantissa bits in float64's exponent range, with
    `max_exponent` a largest finite number. A torch dtype (fp16, bf16): a real cast, which
    torch carries out through float32, in the dtype's range: overflow to inf and gradual
    underflow, where a rounding errs by up to half the subnormal spacing, not relatively."""

    bits: int
    max_exponent: int | None = None
    dtype: torch.dtype | None = None

    @classmethod
    def parse(cls, name: str, max_exponent: int | None = None) -> Format:
        """'m<bits>' (emulated, `max_exponent` applies) or 'fp16'/'bf16' (torch casts)."""
        if name in _CASTS:
            info = torch.finfo(_CASTS[name])
            return cls(FORMAT_MANTISSA_BITS[name], int(math.log2(info.max)), _CASTS[name])
        match = re.fullmatch(r"m(\d+)", name)
        if not match:
            raise ValueError(f"unknown format {name!r}: use m<bits> or one of {', '.join(_CASTS)}")
        return cls(int(match.group(1)), max_exponent)

    @property
    def name(self) -> str:
        casts = {dtype: name for name, dtype in _CASTS.items()}
        return casts[self.dtype] if self.dtype else f"m{self.bits}"

    def round(self, x: torch.Tensor) -> torch.Tensor:
        """x (float64) rounded to the format, returned as float64."""
        if self.dtype is None:
            return fl(x, self.bits, self.max_exponent)
        return x.to(torch.float32).to(self.dtype).to(torch.float64)

    @property
    def inner(self) -> float:
        """Relative error of what precedes the format's own rounding: a float64 operation
        (2⁻⁵², one ulp) or, for a cast, that and float32's rounding."""
        return FLOAT64_ULP if self.dtype is None else FLOAT64_ULP + 2.0**-24 + 2.0**-75

    @property
    def roundoff(self) -> float:
        """Bound on one operation's relative error outside the subnormal range."""
        return (1 + self.inner) * (1 + unit_roundoff(self.bits)) - 1

    @property
    def underflow(self) -> float:
        """Bound on one rounding's absolute error below the normal range: half the subnormal
        spacing of the dtype and of float32 (0 for the emulated formats)."""
        if self.dtype is None:
            return 0.0
        spacing = torch.finfo(self.dtype).smallest_normal * 2.0**-self.bits
        return spacing / 2 + 2.0**-150

    @property
    def largest(self) -> float:
        return largest_finite(self.bits, self.max_exponent)


# one float64 operation (exp, +, /) is within one ulp of the exact result: relative error 2⁻⁵²
FLOAT64_ULP = 2.0**-52


def operation_roundoff(bits: int) -> float:
    """Bound on one emulated operation's relative error: float64 rounding, then m-bit rounding."""
    return unit_roundoff(bits) + 2.0**-53 * (1 + unit_roundoff(bits))


def pairwise_sum(x: torch.Tensor, fmt: Format) -> torch.Tensor:
    """Sum over the last axis as a balanced tree, every partial sum rounded to `fmt`."""
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = torch.cat([x, torch.zeros_like(x[..., :1])], dim=-1)
        x = fmt.round(x[..., 0::2] + x[..., 1::2])
    return x[..., 0]


def gamma(n: int, u: float) -> float:
    """γ_n = nu/(1 − nu): the bound on n compounded roundings; inf once nu ≥ 1."""
    return n * u / (1 - n * u) if n * u < 1 else math.inf


def pairwise_depth(n: int) -> int:
    """Rounded additions on any root-to-leaf path of the pairwise tree over n terms."""
    return max(math.ceil(math.log2(n)), 0) if n > 1 else 0
