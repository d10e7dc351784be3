"""Number formats for the test runs: torch dtypes and emulated m-bit mantissas.

Every format follows one rule for matrix products: inputs held in the storage format, products
accumulated in float32 (float64 for the reference) and the result rounded to the storage format,
which is what cuBLAS and oneDNN do for bf16/fp16 GEMMs. Running the product in float32 on every
device also keeps CPUs without bf16 units fast. The emulated formats `m<bits>` keep float32
storage and exponent range and round every linear/matmul output to `bits` mantissa bits with
round-to-nearest-even.

`SourceRounding` isolates one source of rounding error for the recursion's per-source check
(N8): every operation in float64, only the outputs of one operation type (`SOURCES`) rounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from transformer_stability.numerics.items import FORMAT_MANTISSA_BITS, SOURCES

# (integer view, explicit mantissa bits) of the floating types we can round in place
_LAYOUT = {torch.float32: (torch.int32, 23), torch.float64: (torch.int64, 52)}
_DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
_TORCH_FORMATS = {name: (dtype, FORMAT_MANTISSA_BITS[name]) for name, dtype in _DTYPES.items()}
_EMULATED = re.compile(r"m(\d+)(?:k(\d+))?")


def round_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Round float32/float64 `x` to `bits` explicit mantissa bits, nearest-even, same exponents.

    Works on the bit pattern: add half an ulp of the target format (minus one unless the kept
    last bit is odd, which breaks ties to even) and clear the dropped bits. A carry into the
    exponent is the correct result (including overflow to inf); inf and nan pass through.
    """
    int_type, mantissa = _LAYOUT[x.dtype]
    if not 0 <= bits <= mantissa:
        raise ValueError(f"mantissa bits must be in 0..{mantissa} for {x.dtype}, got {bits}")
    drop = mantissa - bits
    if drop == 0:
        return x
    pattern = x.contiguous().view(int_type)
    rounded = (pattern >> drop).bitwise_and_(1)  # the kept last bit; in place from here on
    rounded.add_(pattern).add_((1 << (drop - 1)) - 1).bitwise_and_(~((1 << drop) - 1))
    return torch.where(torch.isfinite(x), rounded.view(x.dtype), x)


def unit_roundoff(bits: int) -> float:
    """u = 2^-(bits+1): the largest relative error of rounding to nearest with `bits` bits."""
    return 2.0 ** -(bits + 1)


@dataclass(frozen=True)
class Precision:
    """A test format: `fp64`, `fp32`, `bf16`, `fp16` (torch dtypes), `m<bits>` (emulated) or
    `m<bits>k<block>` (emulated with rounded accumulation, `block` inner-product terms per
    rounding of the running sum)."""

    name: str
    storage: torch.dtype
    mantissa_bits: int
    emulated: bool
    block: int | None = None

    @classmethod
    def parse(cls, name: str) -> Precision:
        if name in _TORCH_FORMATS:
            storage, bits = _TORCH_FORMATS[name]
            return cls(name, storage, bits, emulated=False)
        match = _EMULATED.fullmatch(name)
        if match and 1 <= int(match.group(1)) <= 23 and match.group(2) != "0":
            block = int(match.group(2)) if match.group(2) else None
            return cls(name, torch.float32, int(match.group(1)), emulated=True, block=block)
        raise ValueError(
            f"unknown precision {name!r}; use one of {', '.join(_TORCH_FORMATS)}, m<bits> with "
            "1 <= bits <= 23 (emulated mantissa width) or m<bits>k<block> (block >= 1: the "
            "running sum of products rounded after every block of inner-product terms)"
        )

    @property
    def unit_roundoff(self) -> float:
        return unit_roundoff(self.mantissa_bits)

    @property
    def accumulate(self) -> torch.dtype:
        return torch.float64 if self.storage == torch.float64 else torch.float32

    def store(self, x: torch.Tensor) -> torch.Tensor:
        """Bring a tensor into the storage format (a matmul/linear output is also rounded)."""
        return x.to(self.storage)

    def output(self, source: str, x: torch.Tensor) -> torch.Tensor:
        """The output of an elementwise operation `source`: computed in the storage dtype, so
        already rounded to it."""
        return x

    def _round_output(self, out: torch.Tensor) -> torch.Tensor:
        if self.emulated:
            out = round_mantissa(out, self.mantissa_bits)
        return out.to(self.storage)

    def matmul(self, a: torch.Tensor, b: torch.Tensor, source: str = "") -> torch.Tensor:
        if self.block:
            return blocked_matmul(a, b, None, self.mantissa_bits, self.block)
        return self._round_output(torch.matmul(a.to(self.accumulate), b.to(self.accumulate)))

    def linear(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, source: str = ""
    ) -> torch.Tensor:
        """x @ weight + bias (GPT-2's Conv1D layout: weight is (in, out)), one rounding (or one
        per block of the inner dimension)."""
        if self.block:
            return blocked_matmul(x, weight, bias, self.mantissa_bits, self.block)
        acc = self.accumulate
        return self._round_output(
            torch.addmm(bias.to(acc), x.flatten(0, -2).to(acc), weight.to(acc)).unflatten(
                0, x.shape[:-1]
            )
        )


class Float64Operations:
    """Every operation in float64, each operation's outputs passed through `output` with the
    operation's source name: the base of the arithmetics that alter one source alone."""

    def store(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float64)

    def output(self, source: str, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def matmul(self, a: torch.Tensor, b: torch.Tensor, source: str) -> torch.Tensor:
        return self.output(source, torch.matmul(a.double(), b.double()))

    def linear(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, source: str
    ) -> torch.Tensor:
        out = torch.addmm(bias.double(), x.flatten(0, -2).double(), weight.double())
        return self.output(source, out.unflatten(0, x.shape[:-1]))


@dataclass(frozen=True)
class SourceRounding(Float64Operations):
    """One source of rounding alone: every operation in float64, the outputs of the operations
    of type `source` (one of `SOURCES`, or "all") rounded to `bits` mantissa bits, nearest-even.
    Against the float64 reference it measures what that source contributes to the error."""

    source: str
    bits: int
    storage: torch.dtype = torch.float64
    accumulate: torch.dtype = torch.float64
    block: None = None

    def __post_init__(self) -> None:
        if self.source not in (*SOURCES, "all"):
            raise ValueError(f"unknown rounding source {self.source!r}; use one of {SOURCES}")

    @property
    def name(self) -> str:
        return self.source

    @property
    def unit_roundoff(self) -> float:
        return unit_roundoff(self.bits)

    def output(self, source: str, x: torch.Tensor) -> torch.Tensor:
        if self.source in (source, "all"):
            return round_mantissa(x.to(torch.float64), self.bits)
        return x


def blocked_matmul(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, bits: int, block: int
) -> torch.Tensor:
    """a @ b (+ bias) with rounded accumulation: s ← fl(s + P_j) over blocks j of `block`
    inner-product terms, s starting at the bias (or 0), each P_j one float64 matmul of the
    block, fl rounding to `bits` mantissa bits; block = 1 rounds after every product. The
    products of float32 numbers are exact in float64 and a block's sum errs by at most about
    block·2^-53 relative, far below the format's 2^-(bits+1): where that sum is exact (inputs
    of few bits, as in tests/test_numerics_rounding.py's scalar loop) the result is bit exact.
    One matmul per block, not one step per term, keeps the default CPU preset affordable.
    Returns float32.
    """
    a, b = a.to(torch.float64), b.to(torch.float64)
    shape = (*torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    total = torch.zeros(shape, dtype=torch.float64, device=a.device)
    if bias is not None:
        total = total + bias.to(torch.float64)
    for start in range(0, a.shape[-1], block):
        stop = start + block
        total = round_mantissa(total + a[..., start:stop] @ b[..., start:stop, :], bits)
    return total.to(torch.float32)


# what the residual-stream forward computes in: a test format or one isolated rounding source
Arithmetic = Precision | SourceRounding
