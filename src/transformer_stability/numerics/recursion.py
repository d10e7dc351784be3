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

Typical case (2-norm per token, errors of random direction): the same recursion,
e_k² = (1 + a₂_k²)e_{k−1}² + (r·u_s‖h_k‖₂)² + Σ_j (r·ε_j·G_j)², with a₂_k the branch's gain
on its own input (‖αF_k‖₂/‖LN(h_{k−1})‖₂ from the reference, times LN's 2-norm constant
‖γ‖∞/σ): the response to an error of random direction is uncorrelated with it, and the
fresh roundings add in quadrature. Source j rounds its outputs with relative errors up to ε_j
(u, plus √n·u_acc for an accumulation of n terms), of root mean square r·ε_j (r =
`ROUNDING_RMS`, about 0.42); G_j is the size at the branch output of a relative error field
ξ ⊙ x of unit root mean square at that source, carried by the rest of the branch, from the
float64 reference (source_gains.py). It runs token by token
(`typical_step`) and is compared with the measured error token by token, through the largest
relative value over tokens of each. An estimate, not a bound.

Each term belongs to one rounding source (`SOURCES`: each matmul family, the softmax,
LayerNorm, GELU, the residual add); a `SourceRounding` run rounds one source alone, and its
recursion keeps only that source's terms, so each term is checked against what its source
does (the recursion sources table).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
import torch

from transformer_stability.numerics.gpt2 import BlockWeights
from transformer_stability.numerics.rounding import (
    SOURCES,
    Arithmetic,
    SourceRounding,
    unit_roundoff,
)

# unit roundoff of the products' accumulation: float32 for every test format but fp64
_ACCUMULATE_ROUNDOFF = {torch.float32: 2.0**-24, torch.float64: 2.0**-53}
# the storage dtype's unit roundoff: LayerNorm, softmax, GELU and the adds run in it
_STORAGE_BITS = {torch.float64: 52, torch.float32: 23, torch.bfloat16: 7, torch.float16: 10}
# float32 ulps of GELU's evaluation (tanh form), relative to its argument
_GELU_ULPS = 8
# one value per token (a tensor), or one number
Tokens = float | torch.Tensor
Statistics = Mapping[str, Tokens]


@dataclass(frozen=True)
class Roundoffs:
    """u: a product's output rounding; u_s: storage (elementwise ops, adds); u_acc: the
    accumulation inside products."""

    u: float
    storage: float
    accumulate: float
    block: int | None = None  # rounded accumulation: the running sum rounded every `block` terms
    sources: frozenset[str] = frozenset(SOURCES)  # the operations that round at all

    @classmethod
    def of(cls, precision: Arithmetic) -> Roundoffs:
        if isinstance(precision, SourceRounding):  # float64 everywhere, one source at u
            u = precision.unit_roundoff
            only = SOURCES if precision.source == "all" else (precision.source,)
            return cls(u, u, 2.0**-53, sources=frozenset(only))
        accumulate = 2.0**-53 if precision.block else _ACCUMULATE_ROUNDOFF[precision.accumulate]
        return cls(
            precision.unit_roundoff,
            unit_roundoff(_STORAGE_BITS[precision.storage]),
            accumulate,
            precision.block,
        )

    def rounds(self, source: str) -> bool:
        return source in self.sources

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


def layer_norm_error(radius: float, spread: float, eps: Roundoffs, width: int) -> float:
    """First-order bound on LN's evaluation error in ‖·‖∞: its output stored (u_s R) and its
    two-pass float32 arithmetic, 2γ_{d+4}‖γ‖∞(1 + ζ)(ρ + ζ) with ζ = ‖x − μ‖∞/σ and
    ρ = mean|x|/σ (`spread` is the largest ‖γ‖∞(1 + ζ)(ρ + ζ) over tokens)."""
    gamma = Roundoffs(eps.accumulate, eps.accumulate, eps.accumulate).product(width + 4)
    return (eps.storage + gamma) * radius + 2 * gamma * spread


def attention_local(
    c: BlockConstants, radius: float, seq_len: int, eps: Roundoffs
) -> dict[str, float]:
    """Rounding errors inside the attention branch carried to its output, by source: q, k, v
    products (ε_{d+1}), logits (ε_{d_h}, then the scaling in storage), the softmax (stored,
    float32 inside), P·V (ε_T) and the output projection (ε_{d+1}). A logit error passes to the
    output with gain 2‖W_O‖∞‖W_V‖∞R (softmax 1-norm gain 2, values of size ≤ ‖W_V‖∞R)."""
    width = c.width
    qkv, values = eps.product(width + 1), c.w_v * radius + c.b_v
    score = c.score_size(radius)
    logit_gain = 2 * c.w_o * c.w_v * radius * score
    softmax = eps.storage + _gamma(seq_len + 3, eps.accumulate) + 2 * score * eps.accumulate
    return {
        "qkv": logit_gain * 2 * qkv + c.w_o * values * qkv,
        "scores": logit_gain * (eps.product(c.head_dim) + eps.storage),
        "softmax": c.w_o * values * softmax,
        "mix": c.w_o * values * eps.product(seq_len),
        "attn_proj": eps.product(width + 1) * (c.w_o * values + c.b_o),
    }


def mlp_local(
    c: BlockConstants, radius: float, act_lipschitz: float, eps: Roundoffs
) -> dict[str, float]:
    """Rounding errors inside the MLP branch, by source: the up projection (ε_{d+1}) through
    GELU, GELU itself (stored, float32 inside) and the down projection (ε_{4d+1})."""
    hidden = c.w_fc * radius + c.b_fc
    width = c.width
    return {
        "fc": c.w_proj * eps.product(width + 1) * act_lipschitz * hidden,
        "gelu": c.w_proj * (eps.storage + _GELU_ULPS * eps.accumulate) * hidden,
        "mlp_proj": eps.product(4 * width + 1) * (c.w_proj * hidden + c.b_proj),
    }


def _fresh(c: BlockConstants, kind: str, eps: Roundoffs, dims: dict) -> dict[str, float]:
    if kind == "attn":
        return {
            "qkv": eps.typical(dims["width"] + 1),
            "scores": eps.typical(c.head_dim),
            "softmax": eps.storage,
            "mix": eps.typical(dims["seq_len"]),
            "attn_proj": eps.typical(dims["width"] + 1),
            "layernorm": eps.storage,
        }
    return {
        "fc": eps.typical(dims["width"] + 1),
        "gelu": eps.storage,
        "mlp_proj": eps.typical(4 * dims["width"] + 1),
        "layernorm": eps.storage,
    }


ROUNDING_RMS = 1 / math.sqrt(8 * math.log(2))
"""Root mean square of a round-to-nearest relative error, per unit roundoff u: the absolute
error is spread evenly over half an ulp either side, 2^e·u for a value x in [2^e, 2^(e+1)), so
the relative error's mean square is (u²/3)·E[(2^e/x)²] = (u²/3)·3/(8 ln 2) for significands
spread log-uniformly over the binade (as values spread over several binades are): about 0.42u,
not the u/√3 ≈ 0.58u of an error spread evenly over [−u, u]."""


def _active(terms: dict[str, float], eps: Roundoffs) -> list[float]:
    return [value for source, value in terms.items() if eps.rounds(source)]


def typical_step(
    previous: Tokens, c: BlockConstants, kind: str, eps: Roundoffs, dims: dict, token: Statistics
) -> Tokens:
    """The typical-case error after one residual add, token by token (arrays of a token's
    statistics, or floats): the error so far passes the branch with its 2-norm gain `gain_l2`
    and, uncorrelated with it, adds in quadrature; so do the stored sum's rounding (size
    `stream_l2`) and each fresh rounding source j of the branch: its relative error's root
    mean square (roundoff ε_j times `ROUNDING_RMS`) times its gain to the branch output
    `gain_<j>` (source_gains.py). Per token, because a trained model's tokens differ widely in
    stream and branch size: maxima over tokens would pair one token's branch with another
    token's stream."""
    fresh = sum(
        (ROUNDING_RMS * bound * token[f"gain_{source}"]) ** 2
        for source, bound in _fresh(c, kind, eps, dims).items()
        if eps.rounds(source)
    )
    stored = ROUNDING_RMS * eps.storage if eps.rounds("add") else 0.0
    return (
        (1 + token["gain_l2"] ** 2) * previous**2 + (stored * token["stream_l2"]) ** 2 + fresh
    ) ** 0.5


def recursion_table(
    steps: pd.DataFrame, constants: list[BlockConstants], precision: Arithmetic, dims: dict
) -> pd.DataFrame:
    """The worst-case recursion along the adds, from the reference's per-add statistics
    (maxima over tokens) in `steps`, beside the typical estimate (`typical_step`, run token by
    token as the model runs: its largest relative value over tokens in `typical_rel_l2`); one
    row per residual add."""
    eps = Roundoffs.of(precision)
    worst = 0.0
    rows = []
    for row in steps.sort_values("checkpoint").itertuples():
        c = constants[(row.checkpoint - 1) // 2]
        radius = row.normed_linf
        if row.kind == "attn":
            sublayer = c.attention_lipschitz(radius)
            local = attention_local(c, radius, dims["seq_len"], eps)
        else:
            sublayer = c.w_proj * dims["act_lipschitz"] * c.w_fc
            local = mlp_local(c, radius, dims["act_lipschitz"], eps)
        local["layernorm"] = sublayer * layer_norm_error(radius, row.ln_spread, eps, dims["width"])
        local["add"] = eps.storage * row.stream_linf
        amplification = row.ln_lipschitz * sublayer
        worst = (1 + amplification) * worst + sum(_active(local, eps))
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
                "typical_rel_l2": row.typical_rel_l2,
                "amplification": amplification,
                "amplification_l2": row.gain_l2,
            }
        )
    return pd.DataFrame(rows)
