"""Emulated mantissa rounding against torch's own conversions, and the Precision formats."""

import pytest
import torch

from transformer_stability.numerics.items import SOURCES
from transformer_stability.numerics.rounding import (
    Precision,
    SourceRounding,
    round_mantissa,
    unit_roundoff,
)


def _from_bits(patterns: list[int]) -> torch.Tensor:
    return torch.tensor(patterns, dtype=torch.int64).to(torch.int32).view(torch.float32)


def test_bf16_width_is_bit_exact_against_torch_bfloat16_on_normal_numbers():
    generator = torch.Generator().manual_seed(0)
    mantissas = torch.randn(200_000, generator=generator)
    exponents = torch.randint(-120, 120, (200_000,), generator=generator).float()
    x = mantissas * torch.exp2(exponents)
    x = x[x.abs() >= torch.finfo(torch.float32).tiny]
    expected = x.to(torch.bfloat16).to(torch.float32)
    assert torch.equal(round_mantissa(x, 7).view(torch.int32), expected.view(torch.int32))


def test_ties_round_to_even_like_torch_bfloat16():
    # low 16 bits exactly half an ulp: the kept last bit decides (even stays, odd rounds up)
    patterns = []
    for kept_last_bit in (0, 1):
        for sign in (0, 1):
            for exponent in (1, 64, 127, 200, 254):
                pattern = (sign << 31) | (exponent << 23) | (kept_last_bit << 16) | 0x8000
                patterns.append(pattern - (1 << 32) if pattern >= 1 << 31 else pattern)
    x = _from_bits(patterns)
    expected = x.to(torch.bfloat16).to(torch.float32)
    assert torch.equal(round_mantissa(x, 7).view(torch.int32), expected.view(torch.int32))
    # and the tie really went to the even neighbour
    odd = _from_bits([(100 << 23) | (1 << 16) | 0x8000])
    assert round_mantissa(odd, 7).view(torch.int32).item() & (1 << 16) == 0


def test_overflow_goes_to_inf_and_non_finite_values_pass_through():
    largest = torch.finfo(torch.float32).max
    x = torch.tensor([largest, -largest, float("inf"), float("-inf"), float("nan")])
    out = round_mantissa(x, 7)
    assert torch.equal(out[:4], x[:4].to(torch.bfloat16).to(torch.float32))
    assert torch.isinf(out[0]) and out[0] > 0
    assert torch.isnan(out[4])


def test_fp16_width_matches_torch_float16_inside_its_normal_range():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(100_000, generator=generator) * torch.exp2(
        torch.randint(-12, 14, (100_000,), generator=generator).float()
    )
    x = x[(x.abs() >= 2.0**-14) & (x.abs() <= 60_000)]
    expected = x.to(torch.float16).to(torch.float32)
    assert torch.equal(round_mantissa(x, 10), expected)


@pytest.mark.parametrize("bits", [1, 4, 10, 16, 23])
def test_relative_error_at_most_unit_roundoff_and_idempotent(bits):
    generator = torch.Generator().manual_seed(bits)
    x = torch.randn(50_000, generator=generator, dtype=torch.float64) * 1e3
    once = round_mantissa(x, bits)
    assert ((once - x).abs() <= unit_roundoff(bits) * x.abs()).all()
    assert torch.equal(round_mantissa(once, bits), once)
    x32 = x.float()
    assert ((round_mantissa(x32, bits) - x32).abs() <= unit_roundoff(bits) * x32.abs()).all()


def test_full_width_is_the_identity_and_bad_widths_are_refused():
    x = torch.randn(10)
    assert torch.equal(round_mantissa(x, 23), x)
    with pytest.raises(ValueError, match="mantissa bits"):
        round_mantissa(x, 24)


def test_precision_formats():
    assert Precision.parse("bf16").storage == torch.bfloat16
    m10 = Precision.parse("m10")
    assert m10.emulated and m10.storage == torch.float32 and m10.unit_roundoff == 2.0**-11
    with pytest.raises(ValueError, match="m<bits>"):
        Precision.parse("m30")
    with pytest.raises(ValueError, match="unknown precision"):
        Precision.parse("fp8")


def test_matmul_accumulates_in_float32_and_rounds_once():
    generator = torch.Generator().manual_seed(2)
    a, b = torch.randn(8, 64, generator=generator), torch.randn(64, 5, generator=generator)
    bias = torch.randn(5, generator=generator)
    bf16 = Precision.parse("bf16")
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    expected = (a16.float() @ b16.float()).to(torch.bfloat16)
    assert torch.equal(bf16.matmul(a16, b16), expected)
    m7 = Precision.parse("m7")
    out = m7.linear(a, b, bias)
    assert out.dtype == torch.float32
    assert torch.equal(out, round_mantissa(torch.addmm(bias, a, b), 7))


def _scalar_blocked(a, b, bias, bits: int, block: int) -> list[list[float]]:
    """The rounded accumulation one scalar at a time: Python floats are float64."""
    rows, inner, cols = len(a), len(b), len(b[0])
    out = []
    for r in range(rows):
        out.append([])
        for c in range(cols):
            total = 0.0 if bias is None else bias[c]
            for start in range(0, inner, block):
                partial = 0.0
                for i in range(start, min(start + block, inner)):
                    partial += a[r][i] * b[i][c]
                total = round_mantissa(torch.tensor([total + partial], dtype=torch.float64), bits)
                total = total.item()
            out[-1].append(total)
    return out


@pytest.mark.parametrize("block", [1, 3, 8])
@pytest.mark.parametrize("bits", [4, 10])
def test_blocked_accumulation_is_bit_exact_against_a_scalar_loop(bits, block):
    generator = torch.Generator().manual_seed(bits * 10 + block)
    precision = Precision.parse(f"m{bits}k{block}")
    a = round_mantissa(torch.randn(3, 10, generator=generator), bits)
    b = round_mantissa(torch.randn(10, 4, generator=generator) * 7, bits)
    bias = round_mantissa(torch.randn(4, generator=generator), bits)
    got = precision.linear(a, b, bias)
    want = torch.tensor(_scalar_blocked(a.tolist(), b.tolist(), bias.tolist(), bits, block))
    assert torch.equal(got, want.to(torch.float32))
    product = precision.matmul(a, b)
    want = torch.tensor(_scalar_blocked(a.tolist(), b.tolist(), None, bits, block))
    assert torch.equal(product, want.to(torch.float32))
    # rounding inside the accumulation costs accuracy that one final rounding does not
    if block == 1:
        once = Precision.parse(f"m{bits}").matmul(a, b).double()
        exact = a.double() @ b.double()
        assert (product.double() - exact).abs().sum() > (once - exact).abs().sum()


@pytest.mark.parametrize(
    ("name", "storage", "bits", "block"),
    [
        ("fp64", torch.float64, 52, None),
        ("fp32", torch.float32, 23, None),
        ("bf16", torch.bfloat16, 7, None),
        ("fp16", torch.float16, 10, None),
        ("m1", torch.float32, 1, None),
        ("m23", torch.float32, 23, None),
        ("m10k32", torch.float32, 10, 32),
        ("m7k1", torch.float32, 7, 1),
    ],
)
def test_precision_names_give_storage_width_and_block(name, storage, bits, block):
    precision = Precision.parse(name)
    assert (precision.name, precision.storage, precision.mantissa_bits) == (name, storage, bits)
    assert precision.emulated == name.startswith("m") and precision.block == block
    # a format's u is half its spacing at 1: torch's eps/2 for the torch dtypes
    if not precision.emulated:
        assert precision.unit_roundoff == torch.finfo(storage).eps / 2
    assert precision.accumulate == (torch.float64 if storage == torch.float64 else torch.float32)


@pytest.mark.parametrize("name", ["m0", "m24", "m10k0", "m10k", "fp8", "m7k2x"])
def test_malformed_precision_names_are_refused_with_the_accepted_forms(name):
    with pytest.raises(ValueError, match=r"unknown precision.*m<bits>k<block>"):
        Precision.parse(name)


def test_storage_and_elementwise_outputs_follow_the_storage_dtype():
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    fp16 = Precision.parse("fp16")
    assert torch.equal(fp16.store(x), x.to(torch.float16))
    # an elementwise op already ran in the storage dtype: its output is kept as is
    assert fp16.output("gelu", x) is x
    m4 = Precision.parse("m4")
    product = m4.matmul(x.float(), x.float().T)
    assert product.dtype == torch.float32
    assert torch.equal(product, round_mantissa(x.float() @ x.float().T, 4))
    half = x.to(torch.float16)
    assert torch.equal(fp16.matmul(half, half.T), (half.float() @ half.float().T).half())


def test_blocked_products_broadcast_over_batches_like_matmul():
    generator = torch.Generator().manual_seed(6)
    a = round_mantissa(torch.randn(2, 3, 10, generator=generator), 6)
    b = round_mantissa(torch.randn(10, 4, generator=generator), 6)
    precision = Precision.parse("m6k4")
    batched = precision.matmul(a, b)
    assert batched.shape == (2, 3, 4)
    for row, matrix in zip(batched, a, strict=True):
        assert torch.equal(row, precision.matmul(matrix, b))
    bias = torch.randn(4, generator=generator)
    assert precision.linear(a, b, bias).shape == (2, 3, 4)
    keys = round_mantissa(torch.randn(2, 10, 5, generator=generator), 6)  # batched on both sides
    scores = precision.matmul(a, keys)
    assert scores.shape == (2, 3, 5)
    assert torch.equal(scores[1], precision.matmul(a[1], keys[1]))


def test_one_rounding_source_rounds_only_its_own_outputs():
    generator = torch.Generator().manual_seed(7)
    a, b = torch.randn(5, 8, generator=generator), torch.randn(8, 3, generator=generator)
    bias = torch.randn(3, generator=generator)
    exact_product = a.double() @ b.double()
    exact_linear = exact_product + bias.double()
    qkv = SourceRounding("qkv", 7)
    assert (qkv.name, qkv.unit_roundoff, qkv.block) == ("qkv", 2.0**-8, None)
    assert qkv.storage == qkv.accumulate == torch.float64
    assert qkv.store(a).dtype == torch.float64 and torch.equal(qkv.store(a), a.double())
    assert torch.equal(qkv.matmul(a, b, "qkv"), round_mantissa(exact_product, 7))
    assert torch.equal(qkv.linear(a, b, bias, "qkv"), round_mantissa(exact_linear, 7))
    # every other operation runs exactly in float64
    assert torch.equal(qkv.matmul(a, b, "scores"), exact_product)
    assert torch.equal(qkv.linear(a, b, bias, "fc"), exact_linear)
    assert torch.equal(qkv.output("gelu", a), a)
    every = SourceRounding("all", 7)
    for source in SOURCES:
        assert torch.equal(every.output(source, a), round_mantissa(a.double(), 7))
    with pytest.raises(ValueError, match="unknown rounding source 'norm'"):
        SourceRounding("norm", 7)


def test_zero_mantissa_bits_round_to_powers_of_two():
    x = torch.rand(1000, generator=torch.Generator().manual_seed(8), dtype=torch.float64) * 100
    once = round_mantissa(x, 0)
    assert torch.equal(once, torch.exp2(torch.log2(once).round()))  # powers of two only
    assert ((once - x).abs() <= unit_roundoff(0) * x).all()
    with pytest.raises(ValueError, match="mantissa bits"):
        round_mantissa(x, -1)


@pytest.mark.parametrize("name", ["bf16", "m7", "m6k4"])
def test_linear_maps_any_batch_in_the_accumulation_dtype_and_returns_storage(name):
    """x of shape (2, 3, 8): the same rows as a flat (6, 8) batch; torch formats accumulate
    in float32 and round once to their storage dtype."""
    generator = torch.Generator().manual_seed(9)
    precision = Precision.parse(name)
    x = torch.randn(2, 3, 8, generator=generator).to(precision.storage)
    weight = torch.randn(8, 5, generator=generator).to(precision.storage)
    bias = torch.randn(5, generator=generator).to(precision.storage)
    out = precision.linear(x, weight, bias)
    assert out.shape == (2, 3, 5) and out.dtype == precision.storage
    assert torch.equal(out.flatten(0, 1), precision.linear(x.flatten(0, 1), weight, bias))
    if name == "bf16":
        wide = torch.addmm(bias.float(), x.flatten(0, 1).float(), weight.float())
        assert torch.equal(out.flatten(0, 1), wide.to(torch.bfloat16))
    source = SourceRounding("fc", 7)
    rounded = source.linear(x, weight, bias, "fc")
    assert rounded.shape == (2, 3, 5) and rounded.dtype == torch.float64
    assert torch.equal(rounded.flatten(0, 1), source.linear(x.flatten(0, 1), weight, bias, "fc"))
    assert source.output("fc", x.float()).dtype == torch.float64
