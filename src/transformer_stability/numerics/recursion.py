"""The error recursion along GPT-2's residual adds (N8), carried relative to the stream size.

Worst case (∞-norm over all tokens, first order in u). With e_k = max_t ‖ĥ_{k,t} − h_{k,t}‖∞,

    e_k ≤ (1 + a_k)·e_{k−1} + u_s‖h_k‖∞ + ℓ_k,   a_k = Lip(LN_k)·J_k,

where J_k is the sublayer's ∞-norm Lipschitz constant at its input y = LN(h_{k−1}) (‖y‖∞ ≤ R):
attention ‖W_O‖∞‖W_V‖∞(1 + 2RΛ(R)) with the value path (a convex mix) and the score path
(Λ(R) = max_h (2⟨|W_Q^h|1,|W_K^h|1⟩R + ⟨|W_Q^h|1,|b_K^h|⟩ + ⟨|b_Q^h|,|W_K^h|1⟩)/√d_h per unit
of ‖dy‖∞, whose bias-free part is at most ω_KQ·R; a softmax row passes it on with 1-norm gain
≤ 2, and the changed weights multiply values v_s − b_V of size ≤ ‖W_V‖∞R), the MLP
‖W_proj‖∞·g·‖W_fc‖∞ (g: GELU's Lipschitz constant); both output projections carry α, so
J_k = α·ω_k·(1 + score path) with ω_OV or ω_UD·g. Since Lip(LN) ∝ 1/σ(h_{k−1}), the
amplification a_k is α·ω_k·c_k/‖h_{k−1}‖: it stops depending on α once h ∝ α. ℓ_k collects
every rounding inside the branch, each carried to the branch output by the Lipschitz constant
of what follows it (`attention_local`, `mlp_local`). Dividing by the stream size gives the
relative recursion ρ_k = e_k/min_t‖h_{k,t}‖∞.

Typical case (2-norm per token, errors of random direction): the same recursion with the
gains a matrix has on a random direction (‖M‖_F/√columns, `typical_attention_gain`),
e_k² = (1 + a₂_k²)e_{k−1}² + (u_s‖h_k‖₂)² + ‖αF_k‖₂²·Σ_j ε_j²: the branch's response αJδ to
an error δ of random direction is uncorrelated with δ, and the fresh roundings ε_j = u +
√n·u_acc of the branch's operations add in quadrature too. An estimate, not a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from transformer_stability.numerics.gpt2 import BlockWeights
from transformer_stability.numerics.rounding import Precision, unit_roundoff

# unit roundoff of the products' accumulation: float32 for every test format but fp64
_ACCUMULATE_ROUNDOFF = {torch.float32: 2.0**-24, torch.float64: 2.0**-53}
# the storage dtype's unit roundoff: LayerNorm, softmax, GELU and the adds run in it
_STORAGE_BITS = {torch.float64: 52, torch.float32: 23, torch.bfloat16: 7, torch.float16: 10}
# float32 ulps of GELU's evaluation (tanh form), relative to its argument
_GELU_ULPS = 8


@dataclass(frozen=True)
class Roundoffs:
    """u: a product's output rounding; u_s: storage (elementwise ops, adds); u_acc: the
    accumulation inside products."""

    u: float
    storage: float
    accumulate: float
    block: int | None = None  # rounded accumulation: the running sum rounded every `block` terms

    @classmethod
    def of(cls, precision: Precision) -> Roundoffs:
        accumulate = 2.0**-53 if precision.block else _ACCUMULATE_ROUNDOFF[precision.accumulate]
        return cls(
            precision.unit_roundoff,
            unit_roundoff(_STORAGE_BITS[precision.storage]),
            accumulate,
            precision.block,
        )

    def product(self, inner: int) -> float:
        """ε_n: a product of inner length n (plus bias) errs by ≤ ε_n·(|W||x| + |b|): one
        rounding of the output after an accumulation in float32, or ⌈n/k⌉ roundings of the
        running sum (γ of that many) after float64 partial sums of k terms."""
        gamma = _gamma(inner, self.accumulate)
        if self.block:
            return _gamma(-(-inner // self.block), self.u) * (1 + gamma) + gamma
        return self.u + gamma * (1 + self.u)

    def typical(self, inner: int) -> float:
        """ε of a product whose accumulation errors add up like a random walk."""
        if self.block:
            return math.sqrt(-(-inner // self.block)) * self.u + math.sqrt(inner) * self.accumulate
        return self.u + math.sqrt(inner) * self.accumulate


def _gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u) if n * u < 1 else math.inf


@dataclass(frozen=True)
class BlockConstants:
    """Weight magnitudes of one block as stored, α included in both output projections (x ↦ Wx
    layout; ‖·‖∞ the largest absolute row sum)."""

    w_o: float
    w_v: float
    b_o: float
    b_v: float
    kq: torch.Tensor  # (heads, 3): ⟨|W_Q|1,|W_K|1⟩, the two bias cross terms, ⟨|b_Q|,|b_K|⟩
    head_dim: int
    w_fc: float
    b_fc: float
    w_proj: float
    b_proj: float
    ln_gain: tuple[float, float]  # ‖γ‖∞ of ln_1, ln_2
    rms_ov: float  # ‖W_O W_V‖_F/√d: gains on errors of random direction (typical case)
    rms_ud: float  # ‖W_proj‖_F‖W_fc‖_F/(√(4d)·√d)
    frobenius_kq: float  # max_h ‖W_Q^hᵀW_K^h‖_F

    @classmethod
    def of(cls, block: BlockWeights) -> BlockConstants:
        weight, bias = (t.to(torch.float64) for t in block.qkv)
        w_q, w_k, w_v = weight.T.chunk(3, dim=0)
        b_q, b_k, b_v = bias.chunk(3)
        heads = block.heads
        head_dim = w_q.shape[0] // heads
        rows = [t.abs().sum(dim=1).view(heads, head_dim) for t in (w_q, w_k)]
        biases = [t.abs().view(heads, head_dim) for t in (b_q, b_k)]
        kq = torch.stack(
            [
                (rows[0] * rows[1]).sum(-1),
                (rows[0] * biases[1]).sum(-1) + (biases[0] * rows[1]).sum(-1),
                (biases[0] * biases[1]).sum(-1),
            ],
            dim=-1,
        )
        w_o, w_fc, w_proj = (_wx(p) for p in (block.attn_proj, block.fc, block.mlp_proj))
        return cls(
            w_o=_inf(w_o),
            w_v=_inf(w_v),
            b_o=_bias(block.attn_proj),
            b_v=float(b_v.abs().max()),
            kq=kq,
            head_dim=head_dim,
            w_fc=_inf(w_fc),
            b_fc=_bias(block.fc),
            w_proj=_inf(w_proj),
            b_proj=_bias(block.mlp_proj),
            ln_gain=(_gain(block.ln_1), _gain(block.ln_2)),
            rms_ov=_rms_gain(w_o @ w_v),
            rms_ud=_rms_gain(w_proj) * _rms_gain(w_fc),
            frobenius_kq=_frobenius_kq(w_q, w_k, heads),
        )

    @property
    def width(self) -> int:
        return self.kq.shape[0] * self.head_dim

    def score_lipschitz(self, radius: float) -> float:
        """Λ(R): the largest change of a logit per unit of ‖dy‖∞ (both tokens perturbed)."""
        coefficients = self.kq @ torch.tensor([2 * radius, 1.0, 0.0], dtype=self.kq.dtype)
        return float(coefficients.max()) / math.sqrt(self.head_dim)

    def score_size(self, radius: float) -> float:
        """The largest |logit| for ‖y‖∞ ≤ R."""
        powers = torch.tensor([radius**2, radius, 1.0], dtype=self.kq.dtype)
        return float((self.kq @ powers).max()) / math.sqrt(self.head_dim)

    def typical_attention_gain(self, radius_l2: float) -> float:
        """g_OV(1 + 4R₂²‖W_QᵀW_K‖_F/(d√d_h)): a random-direction error δ moves a logit by
        about 2‖W_QᵀW_K‖_F R₂‖δ‖/(d√d_h), which the softmax turns into weights on values
        that differ by up to 2R₂ (in units of the value path's gain g_OV)."""
        score = 4 * radius_l2**2 * self.frobenius_kq / (self.width * math.sqrt(self.head_dim))
        return self.rms_ov * (1 + score)

    def attention_lipschitz(self, radius: float) -> float:
        """‖W_O‖∞‖W_V‖∞(1 + 2RΛ(R)): value path plus score path."""
        return self.w_o * self.w_v * (1 + 2 * radius * self.score_lipschitz(radius))


def _wx(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return pair[0].to(torch.float64).T


def _inf(matrix: torch.Tensor) -> float:
    return float(matrix.abs().sum(dim=1).max())


def _bias(pair: tuple[torch.Tensor, torch.Tensor]) -> float:
    return float(pair[1].abs().max())


def _gain(pair: tuple[torch.Tensor, torch.Tensor]) -> float:
    return float(pair[0].abs().max())


def _rms_gain(matrix: torch.Tensor) -> float:
    """‖M‖_F/√(columns): the gain of M on a vector of random direction (root mean square)."""
    return float(matrix.norm() / math.sqrt(matrix.shape[1]))


def _frobenius_kq(w_q: torch.Tensor, w_k: torch.Tensor, heads: int) -> float:
    """max_h ‖W_Q^hᵀW_K^h‖_F from the d_h × d_h Gram matrices: ‖AᵀB‖_F² = tr(AAᵀ·BBᵀ)."""
    a, b = (t.view(heads, -1, t.shape[1]) for t in (w_q, w_k))
    product = (a @ a.transpose(1, 2)) @ (b @ b.transpose(1, 2))
    return float(product.diagonal(dim1=1, dim2=2).sum(-1).clamp_min(0).sqrt().max())


def layer_norm_error(radius: float, spread: float, eps: Roundoffs, width: int) -> float:
    """First-order bound on LN's evaluation error in ‖·‖∞: its output stored (u_s R) and its
    two-pass float32 arithmetic, 2γ_{d+4}‖γ‖∞(1 + ζ)(ρ + ζ) with ζ = ‖x − μ‖∞/σ and
    ρ = mean|x|/σ (`spread` is the largest ‖γ‖∞(1 + ζ)(ρ + ζ) over tokens)."""
    gamma = Roundoffs(eps.accumulate, eps.accumulate, eps.accumulate).product(width + 4)
    return (eps.storage + gamma) * radius + 2 * gamma * spread


def attention_local(c: BlockConstants, radius: float, seq_len: int, eps: Roundoffs) -> float:
    """Rounding errors inside the attention branch carried to its output: q, k, v
    products (ε_{d+1}), logits (ε_{d_h}, then the scaling in storage), the softmax (stored,
    float32 inside), P·V (ε_T) and the output projection (ε_{d+1})."""
    width = c.width
    qkv, values = eps.product(width + 1), c.w_v * radius + c.b_v
    score = c.score_size(radius)
    logit_error = (2 * qkv + eps.product(c.head_dim) + eps.storage) * score
    softmax = eps.storage + _gamma(seq_len + 3, eps.accumulate) + 2 * score * eps.accumulate
    mixed = 2 * c.w_v * radius * logit_error + values * (softmax + qkv + eps.product(seq_len))
    return c.w_o * mixed + eps.product(width + 1) * (c.w_o * values + c.b_o)


def mlp_local(c: BlockConstants, radius: float, act_lipschitz: float, eps: Roundoffs) -> float:
    """Rounding errors inside the MLP branch: the up projection (ε_{d+1}) through
    GELU, GELU itself (stored, float32 inside) and the down projection (ε_{4d+1})."""
    hidden = c.w_fc * radius + c.b_fc
    width = c.width
    up = eps.product(width + 1) * act_lipschitz * hidden
    gelu = (eps.storage + _GELU_ULPS * eps.accumulate) * hidden
    return c.w_proj * (up + gelu) + eps.product(4 * width + 1) * (c.w_proj * hidden + c.b_proj)


def recursion_table(
    steps: pd.DataFrame, constants: list[BlockConstants], precision: Precision, dims: dict
) -> pd.DataFrame:
    """Both recursions along the adds, from the reference's per-add statistics (maxima over
    tokens) in `steps`; one row per residual add."""
    eps = Roundoffs.of(precision)
    worst = typical = 0.0
    rows = []
    for row in steps.sort_values("checkpoint").itertuples():
        c = constants[(row.checkpoint - 1) // 2]
        attn = row.kind == "attn"
        radius = row.normed_linf
        if attn:
            sublayer = c.attention_lipschitz(radius)
            local = attention_local(c, radius, dims["seq_len"], eps)
            typical_gain = c.typical_attention_gain(row.normed_l2)
            fresh = [eps.typical(dims["width"] + 1)] * 2 + [
                eps.typical(c.head_dim),
                eps.typical(dims["seq_len"]),
                eps.storage,  # softmax
                eps.storage,  # LayerNorm
            ]
        else:
            sublayer = c.w_proj * dims["act_lipschitz"] * c.w_fc
            local = mlp_local(c, radius, dims["act_lipschitz"], eps)
            typical_gain = c.rms_ud * dims["act_lipschitz"]
            fresh = [eps.typical(dims["width"] + 1), eps.typical(4 * dims["width"] + 1)]
            fresh += [eps.storage, eps.storage]  # GELU, LayerNorm
        local += sublayer * layer_norm_error(radius, row.ln_spread, eps, dims["width"])
        amplification = row.ln_lipschitz * sublayer
        amplification_l2 = row.ln_lipschitz_l2 * typical_gain
        worst = (1 + amplification) * worst + eps.storage * row.stream_linf + local
        typical = math.sqrt(
            (1 + amplification_l2**2) * typical**2
            + (eps.storage * row.stream_l2) ** 2
            + row.branch_l2**2 * sum(e**2 for e in fresh)
        )
        rows.append(
            {
                "checkpoint": row.checkpoint,
                "kind": row.kind,
                "unit_roundoff": eps.u,
                "measured": row.measured,
                "bound": worst,
                "measured_rel": row.measured_rel,
                "bound_rel": worst * row.inv_stream_linf,
                "measured_rel_l2": row.measured_rel_l2,
                "typical_rel_l2": typical * row.inv_stream_l2,
                "amplification": amplification,
                "amplification_l2": amplification_l2,
            }
        )
    return pd.DataFrame(rows)
