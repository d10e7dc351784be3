"""Study N error recursion (N8), piece by piece and fast: the roundoffs against the formats, the
product terms against rounded products, the score constants against brute force, every source's
term on a hand-made block, and the recursion assembled add by add."""

import math

import pandas as pd
import pytest
import torch

from transformer_stability.numerics.gpt2 import BlockWeights
from transformer_stability.numerics.items import SOURCES
from transformer_stability.numerics.recursion import (
    ROUNDING_RMS,
    BlockConstants,
    Roundoffs,
    attention_local,
    layer_norm_error,
    mlp_local,
    recursion_table,
    typical_step,
)
from transformer_stability.numerics.rounding import Precision, SourceRounding, round_mantissa
from transformer_stability.numerics.source_gains import BRANCH_SOURCES

F64 = torch.float64
HALF_EPS = {dtype: torch.finfo(dtype).eps / 2 for dtype in (torch.float32, F64)}


def _gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u)


@pytest.mark.parametrize("name", ["fp64", "fp32", "bf16", "fp16", "m10", "m7k4"])
def test_roundoffs_are_the_formats_own(name):
    precision = Precision.parse(name)
    eps = Roundoffs.of(precision)
    storage = precision.storage
    assert eps.u == precision.unit_roundoff
    assert eps.storage == torch.finfo(storage).eps / 2  # elementwise ops run in storage
    # products accumulate in float32 (float64 for fp64); blocked sums are float64 inside
    wide = storage == F64 or precision.block is not None
    assert eps.accumulate == HALF_EPS[F64 if wide else torch.float32]
    assert eps.block == precision.block
    assert all(eps.rounds(source) for source in SOURCES)


def test_one_source_rounds_alone_in_float64():
    eps = Roundoffs.of(SourceRounding("gelu", 10))
    assert (eps.u, eps.storage, eps.accumulate) == (2.0**-11, 2.0**-11, HALF_EPS[F64])
    assert [s for s in SOURCES if eps.rounds(s)] == ["gelu"]
    every = Roundoffs.of(SourceRounding("all", 7))
    assert all(every.rounds(s) for s in SOURCES) and every.u == 2.0**-8


@pytest.mark.parametrize("name", ["m10", "bf16", "fp32", "m7k4", "m7k1", "m4k5"])
def test_product_bound_holds_and_the_typical_term_sizes_the_error(name):
    """Positive inputs, so |W||x| + |b| is the exact value: the worst-case ε_n bounds every
    relative error (and is nearly attained by one final rounding), and the random-walk
    estimate ε/√3 lies within 1-3x of the root mean square error."""
    precision = Precision.parse(name)
    generator = torch.Generator().manual_seed(len(name))
    inner = 48
    x = torch.rand(256, inner, generator=generator).to(precision.storage)
    w = torch.rand(inner, 16, generator=generator).to(precision.storage)
    b = torch.rand(16, generator=generator).to(precision.storage)
    exact = x.double() @ w.double() + b.double()
    relative = (precision.linear(x, w, b).double() - exact).abs() / exact
    eps = Roundoffs.of(precision)
    assert relative.max() <= eps.product(inner)
    if name in ("m10", "bf16"):
        assert relative.max() >= 0.8 * eps.product(inner)
    rms = relative.pow(2).mean().sqrt() / (eps.typical(inner) / math.sqrt(3))
    assert 0.3 <= rms <= 1.0, rms


def test_product_terms_in_closed_form():
    # one rounding of the output after n accumulation roundings: u + γ_n(c)(1 + u)
    u, c = 1e-3, 1e-5
    assert Roundoffs(u, u, c).product(10) == pytest.approx(u + _gamma(10, c) * (1 + u))
    # blocks of 3 over 10 terms: 4 roundings of the running sum, float64 sums inside
    blocked = Roundoffs(u, u, c, block=3)
    assert blocked.product(10) == pytest.approx(_gamma(4, u) * (1 + _gamma(10, c)) + _gamma(10, c))
    assert blocked.typical(10) == pytest.approx(2 * u + math.sqrt(10) * c)
    assert Roundoffs(u, u, c).typical(16) == pytest.approx(u + 4 * c)
    assert Roundoffs(0.25, 0.25, c, block=1).product(4) == math.inf  # nu >= 1: no bound


def _weights(generator: torch.Generator, heads: int, head_dim: int, signed: bool):
    """A random block (width heads·head_dim); nonnegative weights unless `signed`."""
    width = heads * head_dim

    def draw(*shape: int) -> torch.Tensor:
        values = torch.rand(*shape, generator=generator, dtype=F64)
        return 2 * values - 1 if signed else values

    ones = torch.ones(width, dtype=F64)
    return BlockWeights(
        ln_1=(draw(width), draw(width)),
        ln_2=(draw(width), draw(width)),
        qkv=(draw(width, 3 * width), draw(3 * width)),
        attn_proj=(draw(width, width), draw(width)),
        fc=(draw(width, 4 * width), draw(4 * width)),
        mlp_proj=(draw(4 * width, width), ones),
        heads=heads,
        scale=head_dim**-0.5,
        eps=1e-5,
        act=torch.nn.GELU(approximate="tanh"),
    )


def _logits(block: BlockWeights, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """q_h(y)·k_h(z)/√d_h for every head: the scores from the definition (Conv1D layout)."""
    weight, bias = block.qkv
    width = weight.shape[0]
    q = (y @ weight[:, :width] + bias[:width]).view(block.heads, -1)
    k = (z @ weight[:, width : 2 * width] + bias[width : 2 * width]).view(block.heads, -1)
    return (q * k).sum(-1) * block.scale


def test_block_constants_sum_in_float64_whatever_the_stored_dtype():
    block = _weights(torch.Generator().manual_seed(1), heads=2, head_dim=3, signed=True)
    stored = block.cast(Precision.parse("fp32"))
    got, want = BlockConstants.of(stored), BlockConstants.of(stored.cast(Precision.parse("fp64")))
    assert got.kq.dtype == F64 and torch.equal(got.kq, want.kq)
    assert (got.w_v, got.w_o, got.w_fc, got.w_proj) == (want.w_v, want.w_o, want.w_fc, want.w_proj)


def test_block_constants_are_the_weights_norms():
    block = _weights(torch.Generator().manual_seed(0), heads=2, head_dim=3, signed=True)
    c = BlockConstants.of(block)
    weight, bias = block.qkv

    def inf(conv1d: torch.Tensor) -> float:  # ‖·‖∞ of the x ↦ Wx matrix
        return torch.linalg.matrix_norm(conv1d.T, ord=math.inf).item()

    assert c.width == 6 and c.head_dim == 3
    assert c.w_v == pytest.approx(inf(weight[:, 12:]))
    assert c.b_v == bias[12:].abs().max().item()
    assert c.w_o == pytest.approx(inf(block.attn_proj[0]))
    assert c.b_o == block.attn_proj[1].abs().max().item()
    assert c.w_fc == pytest.approx(inf(block.fc[0]))
    assert c.b_fc == block.fc[1].abs().max().item()
    assert c.w_proj == pytest.approx(inf(block.mlp_proj[0]))
    assert c.b_proj == 1.0
    assert c.ln_gain == tuple(ln[0].abs().max().item() for ln in (block.ln_1, block.ln_2))


@pytest.mark.parametrize("seed", range(3))
def test_score_constants_bound_every_logit_and_are_attained_by_nonnegative_weights(seed):
    generator = torch.Generator().manual_seed(seed)
    radius = 1.5
    for signed in (True, False):
        block = _weights(generator, heads=2, head_dim=3, signed=signed)
        c = BlockConstants.of(block)
        y, z = (radius * (2 * torch.rand(2, 64, 6, generator=generator, dtype=F64) - 1)).unbind()
        logits = torch.stack([_logits(block, a, b) for a, b in zip(y, z, strict=True)])
        assert logits.abs().max() <= c.score_size(radius) * (1 + 1e-12)
        # the change of a logit when both tokens move by ‖dy‖∞ = 1e-7 (first order)
        step = 1e-7 * torch.sign(torch.randn(64, 6, generator=generator, dtype=F64))
        moved = torch.stack(
            [_logits(block, a + s, b + s) for a, b, s in zip(y, z, step, strict=True)]
        )
        assert ((moved - logits).abs() / 1e-7).max() <= c.score_lipschitz(radius) * (1 + 1e-6)
        if not signed:  # every term positive: the corner y = z = R·1 attains both
            corner = torch.full((6,), radius, dtype=F64)
            at_corner = _logits(block, corner, corner)
            assert at_corner.max().item() == pytest.approx(c.score_size(radius), rel=1e-12)
            ahead = _logits(block, corner + 1e-7, corner + 1e-7)
            slope = ((ahead - at_corner) / 1e-7).max().item()
            assert slope == pytest.approx(c.score_lipschitz(radius), rel=1e-6)


def _hand_block() -> BlockWeights:
    """Width 2, one head: W_Q = W_K = I, W_V = 2I, W_O = 1.5I, b_Q = ½, b_K = ¼, b_V = (0.1, −0.3),
    b_O = 0.2; W_fc = 1 (2×8), b_fc = −½, W_proj = ¼ (8×2), b_proj = 0.6, so that
    ‖W_fc‖∞ = ‖W_proj‖∞ = 2."""
    eye = torch.eye(2, dtype=F64)
    ones, zero = torch.ones(2, dtype=F64), torch.zeros(2, dtype=F64)
    qkv_bias = torch.tensor([0.5, 0.5, 0.25, 0.25, 0.1, -0.3], dtype=F64)
    return BlockWeights(
        ln_1=(ones, zero),
        ln_2=(3 * ones, zero),
        qkv=(torch.cat([eye, eye, 2 * eye], dim=1), qkv_bias),
        attn_proj=(1.5 * eye, torch.full((2,), 0.2, dtype=F64)),
        fc=(torch.ones(2, 8, dtype=F64), torch.full((8,), -0.5, dtype=F64)),
        mlp_proj=(torch.ones(8, 2, dtype=F64) / 4, torch.full((2,), 0.6, dtype=F64)),
        heads=1,
        scale=1.0,
        eps=1e-5,
        act=torch.nn.GELU(approximate="tanh"),
    )


# u, u_s, u_acc of different sizes, so every term is seen
EPS = Roundoffs(1e-3, 1e-4, 1e-6)


def _eps_n(n: int) -> float:
    return 1e-3 + _gamma(n, 1e-6) * (1 + 1e-3)


def test_hand_block_constants_and_score_path():
    c = BlockConstants.of(_hand_block())
    # rows of |W_Q|, |W_K| sum to 1: ⟨1,1⟩ = 2, bias cross terms ½·2 + ¼·2, ⟨½,¼⟩·2 = ¼
    assert c.kq.tolist() == [[2.0, 1.5, 0.25]]
    assert (c.w_o, c.w_v, c.b_o, c.b_v) == (1.5, 2.0, 0.2, 0.3)
    assert (c.w_fc, c.b_fc, c.w_proj, c.b_proj, c.ln_gain) == (2.0, 0.5, 2.0, 0.6, (1.0, 3.0))
    # d_h = 2: S(R) = (2R² + 1.5R + ¼)/√2, Λ(R) = (4R + 1.5)/√2, J = 1.5·2·(1 + 2RΛ)
    for radius in (1.0, 2.0):
        assert c.score_size(radius) == pytest.approx((2 * radius**2 + 1.5 * radius + 0.25) / 2**0.5)
        score_path = 2 * radius * (4 * radius + 1.5) / 2**0.5
        assert c.score_lipschitz(radius) == pytest.approx((4 * radius + 1.5) / 2**0.5)
        assert c.attention_lipschitz(radius) == pytest.approx(3 * (1 + score_path))


def test_attention_terms_of_the_hand_block():
    c = BlockConstants.of(_hand_block())
    size = (2 * 4 + 1.5 * 2 + 0.25) / 2**0.5  # S(2)
    gain = 2 * 1.5 * 2.0 * 2.0 * size  # a logit error reaches the output with 2‖W_O‖‖W_V‖R·S
    values = 2.0 * 2.0 + 0.3  # ‖v‖∞ ≤ ‖W_V‖∞R + |b_V|
    terms = attention_local(c, 2.0, 4, EPS)
    expected = {
        "qkv": gain * 2 * _eps_n(3) + 1.5 * values * _eps_n(3),  # q and k move logits; v mixes
        "scores": gain * (_eps_n(2) + 1e-4),
        "softmax": 1.5 * values * (1e-4 + _gamma(7, 1e-6) + 2 * size * 1e-6),
        "mix": 1.5 * values * _eps_n(4),
        "attn_proj": _eps_n(3) * (1.5 * values + 0.2),
    }
    assert terms == pytest.approx(expected, rel=1e-12)


def test_mlp_and_layer_norm_terms_of_the_hand_block():
    c = BlockConstants.of(_hand_block())
    hidden = 2.0 * 2.0 + 0.5  # ‖W_fc‖∞R + |b_fc|, R = 2
    terms = mlp_local(c, 2.0, 1.25, EPS)
    expected = {
        "fc": 2.0 * _eps_n(3) * 1.25 * hidden,
        "gelu": 2.0 * (1e-4 + 8 * 1e-6) * hidden,
        "mlp_proj": _eps_n(9) * (2.0 * hidden + 0.6),
    }
    assert terms == pytest.approx(expected, rel=1e-12)
    # the stored output (u_s R) plus two passes of float32 sums over d + 4 terms
    ln = 1e-6 + _gamma(6, 1e-6) * (1 + 1e-6)
    assert layer_norm_error(2.0, 5.0, EPS, 2) == pytest.approx((1e-4 + ln) * 2 + 2 * ln * 5)


def test_gelu_evaluation_stays_within_its_allowance_of_float32_ulps():
    """GELU's term counts _GELU_ULPS float32 roundings per |x|: torch's tanh form in float32
    against float64 must stay inside it."""
    x = torch.linspace(-12, 12, 200_001, dtype=F64)
    act = torch.nn.GELU(approximate="tanh")
    error = (act(x.float()).double() - act(x)).abs()
    terms = mlp_local(BlockConstants.of(_hand_block()), 1.0, 1.0, Roundoffs(0.0, 0.0, 2.0**-24))
    allowance = terms["gelu"] / (2.0 * (2.0 + 0.5))  # per unit of ‖W_proj‖∞·hidden
    assert (error <= allowance * x.abs()).all()
    assert error.max() > allowance / 8 * x.abs()[error.argmax()]  # at least an ulp is used


def _fresh_alone(c, kind, eps, dims, source) -> float:
    """A branch's typical fresh term when only `source` has a gain (1) and nothing else errs."""
    token = {"gain_l2": 0.0, "stream_l2": 0.0}
    token |= {f"gain_{j}": float(j == source) for j in BRANCH_SOURCES[kind]}
    return typical_step(0.0, c, kind, eps, dims, token)


def test_typical_fresh_roundings_by_source():
    """Each source's relative roundoff ε_j, times the rounding's root mean square per unit u,
    is its typical term per unit of its gain to the branch output."""
    c = BlockConstants.of(_hand_block())
    a = 1e-6  # u = 0: only the accumulation's random walk, √n·u_acc, sets the product terms
    eps = Roundoffs(0.0, 1e-4, a)
    dims = {"width": 2, "seq_len": 16}
    expected = {
        "attn": {
            "qkv": math.sqrt(3) * a,
            "scores": math.sqrt(2) * a,
            "softmax": 1e-4,
            "mix": 4 * a,
            "attn_proj": math.sqrt(3) * a,
            "layernorm": 1e-4,
        },
        "mlp": {"fc": math.sqrt(3) * a, "gelu": 1e-4, "mlp_proj": 3 * a, "layernorm": 1e-4},
    }
    for kind, terms in expected.items():
        found = {j: _fresh_alone(c, kind, eps, dims, j) for j in BRANCH_SOURCES[kind]}
        assert found == pytest.approx({j: ROUNDING_RMS * e for j, e in terms.items()}, rel=1e-12)


def test_the_rounding_rms_is_that_of_round_to_nearest():
    """Values spread over many binades, rounded to 10 bits: the relative errors' root mean
    square is ROUNDING_RMS·u (about 0.42u), well below the u/√3 of errors spread evenly."""
    x = torch.randn(400_000, generator=torch.Generator().manual_seed(0), dtype=F64)
    u = 2.0**-11
    relative = (round_mantissa(x, 10) - x) / x
    rms = relative.pow(2).mean().sqrt().item()
    assert rms == pytest.approx(ROUNDING_RMS * u, rel=0.02)
    assert rms < 0.8 * u / math.sqrt(3)


def _steps() -> pd.DataFrame:
    """Per-add reference statistics of two adds (attention, then MLP), picked by hand."""
    return pd.DataFrame(
        {
            "checkpoint": [2, 1],  # out of order: the recursion sorts them
            "kind": ["mlp", "attn"],
            "normed_linf": [2.0, 1.0],
            "ln_spread": [3.0, 3.0],
            "ln_lipschitz": [0.25, 0.5],
            "gain_l2": [0.2, 0.3],
            "stream_linf": [8.0, 4.0],
            "stream_l2": [10.0, 5.0],
            "inv_stream_linf": [0.125, 0.25],
            "inv_stream_l2": [0.1, 0.2],
            "measured": [2e-3, 1e-3],
            "measured_rel": [3e-3, 4e-3],
            "measured_rel_l2": [5e-3, 6e-3],
            "typical_rel_l2": [7e-3, 8e-3],
        }
    )


def _typical(c: BlockConstants, source, tokens: dict[str, list]) -> list:
    """The typical estimate relative to the stream after each add of `_steps()` (attention,
    then MLP), for per-add token statistics `tokens` {name: [first add, second add]}."""
    eps, error, out = Roundoffs.of(source), 0.0, []
    for k, kind in enumerate(("attn", "mlp")):
        token = {name: values[k] for name, values in tokens.items()}
        error = typical_step(error, c, kind, eps, DIMS, token)
        out.append(error / token["stream_l2"])
    return out


def _gains(scale: float) -> dict[str, list[float]]:
    """Each source's gain to its branch output at both adds, all different: (attention add,
    MLP add); LayerNorm's acts at both."""
    sources = dict.fromkeys([*BRANCH_SOURCES["attn"], *BRANCH_SOURCES["mlp"]])
    return {f"gain_{j}": [scale * (k + 1), scale * (k + 2)] for k, j in enumerate(sources)}


HAND = {"gain_l2": [0.3, 0.2], "stream_l2": [5.0, 10.0], **_gains(1.0)}


DIMS = {"width": 2, "seq_len": 4, "act_lipschitz": 1.2}


def test_the_recursion_follows_its_terms_add_by_add():
    """One source at a time: the bound is (1 + a)e + the source's term, the typical estimate
    √((1 + a₂²)e² + (r·ε·G)²) with the source's own gain G, number for number."""
    c = BlockConstants.of(_hand_block())
    u = 2.0**-11
    attention = c.attention_lipschitz(1.0)
    mlp = 2.0 * 1.2 * 2.0  # ‖W_proj‖∞·g·‖W_fc‖∞
    gelu = recursion_table(_steps(), [c], SourceRounding("gelu", 10), DIMS)
    assert gelu.checkpoint.tolist() == [1, 2] and gelu.kind.tolist() == ["attn", "mlp"]
    gelu_term = 2.0 * (u + 8 * 2.0**-53) * (2.0 * 2.0 + 0.5)  # ‖W_proj‖∞ ε (‖W_fc‖∞R + |b_fc|)
    assert gelu.bound.tolist() == pytest.approx([0.0, gelu_term], rel=1e-12)
    gelu_gain = HAND["gain_gelu"][1]
    assert _typical(c, SourceRounding("gelu", 10), HAND) == pytest.approx(
        [0.0, ROUNDING_RMS * u * gelu_gain * 0.1]
    )
    add = recursion_table(_steps(), [c], SourceRounding("add", 10), DIMS)
    first, second = u * 4.0, (1 + 0.25 * mlp) * u * 4.0 + u * 8
    assert add.bound.tolist() == pytest.approx([first, second])
    assert add.bound_rel.tolist() == pytest.approx([first * 0.25, second * 0.125])
    typical = [ROUNDING_RMS * u * 5, ROUNDING_RMS * u * 10]
    both = math.sqrt((1 + 0.2**2) * typical[0] ** 2 + typical[1] ** 2)
    assert _typical(c, SourceRounding("add", 10), HAND) == pytest.approx(
        [typical[0] * 0.2, both * 0.1]
    )
    assert add.typical_rel_l2.tolist() == [8e-3, 7e-3]  # the run's, add by add
    assert add.amplification.tolist() == pytest.approx([0.5 * attention, 0.25 * mlp])
    assert add.amplification_l2.tolist() == [0.3, 0.2]
    assert add.unit_roundoff.tolist() == [u, u]
    measured = ["measured", "measured_rel", "measured_rel_l2"]
    assert add[measured].values.tolist() == [[1e-3, 4e-3, 6e-3], [2e-3, 3e-3, 5e-3]]


def test_all_sources_together_add_their_terms():
    """A test format rounds every source: each add's bound is the amplified previous one plus
    every branch term, LayerNorm's carried through the sublayer, and the stored sum."""
    c = BlockConstants.of(_hand_block())
    m10 = Precision.parse("m10")
    eps = Roundoffs.of(m10)
    table = recursion_table(_steps(), [c], m10, DIMS)
    attention = c.attention_lipschitz(1.0)
    mlp = 2.0 * 1.2 * 2.0
    first = (
        sum(attention_local(c, 1.0, 4, eps).values())
        + attention * layer_norm_error(1.0, 3.0, eps, 2)
        + eps.storage * 4.0
    )
    second = (
        (1 + 0.25 * mlp) * first
        + sum(mlp_local(c, 2.0, 1.2, eps).values())
        + mlp * layer_norm_error(2.0, 3.0, eps, 2)
        + eps.storage * 8.0
    )
    assert table.bound.tolist() == pytest.approx([first, second], rel=1e-12)
    squares = [
        sum(
            (_fresh_alone(c, kind, eps, DIMS, j) * HAND[f"gain_{j}"][k]) ** 2
            for j in BRANCH_SOURCES[kind]
        )
        for k, kind in enumerate(("attn", "mlp"))
    ]
    stored = [ROUNDING_RMS * eps.storage * size for size in (5.0, 10.0)]
    typical = math.sqrt(stored[0] ** 2 + squares[0])
    typical = [typical, math.sqrt((1 + 0.2**2) * typical**2 + stored[1] ** 2 + squares[1])]
    assert _typical(c, m10, HAND) == pytest.approx([typical[0] * 0.2, typical[1] * 0.1], rel=1e-12)


def test_the_typical_estimate_runs_token_by_token():
    """Each token's estimate depends on its own statistics only: two tokens run together equal
    each run alone, and the largest over tokens is below what maxima over tokens give, which
    pair one token's branch with another's stream."""
    c = BlockConstants.of(_hand_block())
    other = {"gain_l2": [0.1, 0.05], "stream_l2": [50.0, 80.0], **_gains(10.0)}
    pairs = {name: [[HAND[name][k], other[name][k]] for k in (0, 1)] for name in HAND}
    both = {name: [torch.tensor(v, dtype=torch.float64) for v in pairs[name]] for name in HAND}
    m10 = Precision.parse("m10")
    together = _typical(c, m10, both)
    for token, alone in enumerate((_typical(c, m10, HAND), _typical(c, m10, other))):
        assert [float(t[token]) for t in together] == pytest.approx(alone, rel=1e-12)
    maxima = {name: [max(HAND[name][k], other[name][k]) for k in (0, 1)] for name in HAND}
    smallest = min(HAND["stream_l2"][1], other["stream_l2"][1])
    mixed = _typical(c, m10, maxima)[1] * maxima["stream_l2"][1] / smallest
    assert float(together[1].max()) < mixed / 2


def test_each_add_takes_the_constants_of_its_own_block():
    """Adds 1-2 belong to block 0, adds 3-4 to block 1: with two different blocks, each add's
    amplification is the one its own block gives."""
    steps = pd.concat([_steps(), _steps().assign(checkpoint=lambda t: t.checkpoint + 2)])
    first = BlockConstants.of(_hand_block())
    second = BlockConstants.of(_weights(torch.Generator().manual_seed(4), 1, 2, signed=True))
    source = SourceRounding("add", 10)

    def amplification(blocks: list[BlockConstants]) -> list[float]:
        return recursion_table(steps, blocks, source, DIMS).amplification.tolist()

    mixed = amplification([first, second])
    assert mixed[:2] == amplification([first, first])[:2]
    assert mixed[2:] == amplification([second, second])[2:]
    assert mixed[2:] != amplification([first, first])[2:]
