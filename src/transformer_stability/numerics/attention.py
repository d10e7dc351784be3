"""Local Lipschitz constant of single-head self-attention: estimates and bounds vs length n.

f(X)_t = W_O W_V Σ_s P_ts x_s with P = softmax(X W_Qᵀ W_K Xᵀ/√d_h) row-wise (x ↦ Wx layout).
In the token-wise ∞-norm (max_t ‖x_t‖∞) the bound ω_OV(1 + 2(1 − p_max²)ω_KQ R²) holds for
inputs with ‖x_t‖∞ ≤ R whatever n is: each output row mixes its inputs convexly, and a
softmax row passes logit errors on with gain ≤ 2(1 − Σp²). In the Euclidean (Frobenius) norm
the first term alone can reach ‖P‖₂ = √n (every row attending to one token), so the classical
bound grows as √n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.func import jvp, vjp

from transformer_stability.forward_mode import quiet_forward_mode


@dataclass(frozen=True)
class AttentionWeights:
    """Square projections (d, d) in the x ↦ Wx layout; one head (d_h = d)."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    output: torch.Tensor

    @classmethod
    def random(cls, dim: int, generator: torch.Generator) -> AttentionWeights:
        """Entries N(0, 1/d), float64."""
        draws = torch.randn(4, dim, dim, generator=generator, dtype=torch.float64)
        return cls(*(draws / math.sqrt(dim)))

    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        scores = (x @ self.query.T) @ (x @ self.key.T).T / math.sqrt(x.shape[-1])
        return torch.softmax(scores, dim=-1)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.probabilities(x) @ x @ (self.output @ self.value).T


def _abs_row_sums(matrix: torch.Tensor) -> torch.Tensor:
    return matrix.abs().sum(dim=1)


def _inf_bound(w: AttentionWeights, p_max: float, radius: float) -> float:
    omega_ov = float(_abs_row_sums(w.output).max() * _abs_row_sums(w.value).max())
    dim = w.query.shape[0]
    omega_kq = (
        2 / math.sqrt(dim) * float(_abs_row_sums(w.key).norm() * _abs_row_sums(w.query).norm())
    )
    return omega_ov * (1 + 2 * (1 - p_max**2) * omega_kq * radius**2)


def lipschitz_bound_inf(w: AttentionWeights, x: torch.Tensor) -> float:
    """ω_OV·(1 + 2(1 − p_max²)·ω_KQ·R²), p_max the smallest row maximum, R = max|x|."""
    p_max = float(w.probabilities(x).amax(dim=-1).min())
    return _inf_bound(w, p_max, float(x.abs().max()))


def ball_bound_inf(w: AttentionWeights, radius: float) -> float:
    """ω_OV(1 + 2ω_KQR²): the ∞-norm bound over the whole ball max|x| ≤ R (p_max ≥ 0); it
    does not depend on n."""
    return _inf_bound(w, 0.0, radius)


def _frobenius_bound(w: AttentionWeights, n: int, p_max: float, radius: float) -> float:
    dim = w.query.shape[0]
    mixing = float(torch.linalg.matrix_norm(w.output @ w.value, ord=2))
    kq = float(torch.linalg.matrix_norm(w.query.T @ w.key, ord=2))
    logit_term = 2 * (1 - p_max**2) * math.sqrt(2 * (n + 1)) * kq * radius**2 / math.sqrt(dim)
    return mixing * (math.sqrt(n) + logit_term)


def lipschitz_bound_frobenius(w: AttentionWeights, x: torch.Tensor) -> float:
    """‖W_OW_V‖₂(√n + 2(1 − p_max²)·√(2(n+1))·‖W_QᵀW_K‖₂R₂²/√d), R₂ = max_t ‖x_t‖₂.

    ‖P‖₂ ≤ √n bounds the mixing term; each logit moves by at most
    ‖W_QᵀW_K‖₂R₂(‖dx_t‖₂ + max_s ‖dx_s‖₂)/√d, which sums over t to √(2(n+1))‖dX‖_F.
    """
    p_max = float(w.probabilities(x).amax(dim=-1).min())
    return _frobenius_bound(w, x.shape[0], p_max, float(x.norm(dim=-1).max()))


def ball_bound_frobenius(w: AttentionWeights, n: int, radius: float) -> float:
    """The √n Euclidean bound over the ball max|x| ≤ R (p_max ≥ 0, R₂ = √d·R)."""
    return _frobenius_bound(w, n, 0.0, math.sqrt(w.query.shape[0]) * radius)


def jacobian_row_sums(w: AttentionWeights, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(len(tokens), d): Σ_{s,j} |∂f_{t,i}/∂x_{s,j}| for every output entry (t, i) of the
    given tokens, exact and differentiable in x, without forming the (nd)² Jacobian.

    ∂f_t/∂x_s = P_ts(M + c_ts g_tᵀ) + δ_ts M H_t with M = W_OW_V, x̄_t = Σ_s P_ts x_s,
    c_ts = M(x_s − x̄_t), g_t = W_Kᵀq_t/√d and H_t = Σ_u P_tu(x_u − x̄_t)(W_Qᵀk_u)ᵀ/√d. Row i
    of the first term sums to P_ts φ_ti(c_tsi) with φ_ti(c) = Σ_j |g_tj|·|c − r_tij|, r_tij =
    −M_ij/g_tj: convex and piecewise linear, so prefix sums over its sorted breakpoints give it
    at all n points in O(n d log d) per token instead of the blocks' O(n d²).
    """
    scale = math.sqrt(x.shape[-1])
    q, k = x @ w.query.T, x @ w.key.T
    mix = w.output @ w.value
    p = torch.softmax(q[tokens] @ k.T / scale, dim=-1)  # (T, n)
    g = q[tokens] @ w.key / scale  # (T, d)
    y = x @ mix.T  # M x_s
    c = (y.unsqueeze(0) - (p @ y).unsqueeze(1)).transpose(1, 2)  # (T, i, s)
    phi = _breakpoint_sums(mix, g, c)  # (T, i, s)
    own = torch.arange(len(tokens))
    p_own = p[own, tokens]
    value_key = k @ w.query / scale  # rows (W_Qᵀk_u)ᵀ
    outer = (x.unsqueeze(-1) * value_key.unsqueeze(-2)).flatten(1)
    h = (p @ outer).unflatten(-1, mix.shape) - (p @ x).unsqueeze(-1) * (p @ value_key).unsqueeze(1)
    c_own = c[own, :, tokens]  # (T, i)
    diagonal = p_own[:, None, None] * (mix + c_own.unsqueeze(-1) * g.unsqueeze(1)) + mix @ h
    spread = (phi * p.unsqueeze(1)).sum(-1) - p_own.unsqueeze(-1) * phi[own, :, tokens]
    return spread + diagonal.abs().sum(-1)


def _breakpoint_sums(mix: torch.Tensor, g: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """φ_ti(c_tis) = Σ_j |M_ij + c_tis g_tj| for (T, i, s) points c: with a_j = |g_tj| and
    breakpoints r_j sorted, φ(c) = c(2A_k − A) − (2B_k − B), A_k and B_k the sums of a_j and
    a_j r_j = −sign(g_tj)M_ij over the k breakpoints below c; an entry with g_tj = 0 adds the
    constant |M_ij|."""
    flat = g == 0
    r = -mix / torch.where(flat, 1.0, g).unsqueeze(1)  # (T, i, j)
    r, order = torch.where(flat.unsqueeze(1), 0.0, r).sort(dim=-1)
    a = g.abs().unsqueeze(1).expand_as(r).gather(-1, order)
    ar = (-torch.sign(g).unsqueeze(1) * mix).gather(-1, order)
    a_cum = torch.nn.functional.pad(a.cumsum(-1), (1, 0))
    ar_cum = torch.nn.functional.pad(ar.cumsum(-1), (1, 0))
    below = torch.searchsorted(r.contiguous(), c.contiguous())
    a_k, ar_k = a_cum.gather(-1, below), ar_cum.gather(-1, below)
    constant = (mix.abs() * flat.unsqueeze(1)).sum(-1, keepdim=True)
    return c * (2 * a_k - a_cum[..., -1:]) - 2 * ar_k + ar_cum[..., -1:] + constant


def exact_inf(w: AttentionWeights, x: torch.Tensor, chunk: int = 128) -> float:
    """‖J_f(x)‖∞, the largest absolute row sum of the Jacobian, exactly (chunks of tokens)."""
    with torch.no_grad():
        return max(
            float(jacobian_row_sums(w, x, tokens).max())
            for tokens in torch.arange(x.shape[0]).split(chunk)
        )


def worst_case_search(
    w: AttentionWeights, x: torch.Tensor, radius: float, steps: int, rate: float
) -> tuple[float, torch.Tensor]:
    """(the largest ‖J_f‖∞ row sum found over the box max|x| ≤ R, the input where it was
    found): projected Adam ascent from `x` on the exact row sums of output token 0, the step
    rate·R decaying linearly. Attention is permutation-equivariant and the box symmetric, so
    token 0's supremum is that of every token, hence of ‖J_f‖∞; the value found is an exact
    row sum at a point of the box, a lower bound of the supremum."""
    x = x.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([x], lr=rate * radius)
    decay = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 1 - step / max(steps, 1))
    first = torch.zeros(1, dtype=torch.long)
    best = (-math.inf, x.detach().clone())
    for step in range(steps + 1):
        value = jacobian_row_sums(w, x, first).max()
        if value.item() > best[0]:
            best = (value.item(), x.detach().clone())
        if step == steps:
            break
        optimiser.zero_grad()
        (-value).backward()
        optimiser.step()
        decay.step()
        with torch.no_grad():
            x.clamp_(-radius, radius)
    return best


@quiet_forward_mode()
def estimate_frobenius(
    f, x: torch.Tensor, generator: torch.Generator, iterations: int = 50
) -> float:
    """Spectral norm of J_f(x) on R^{n×d} by power iteration on JᵀJ from a random vector: a
    lower bound that converges to the norm (the Jacobian is too large to decompose at n = 1024)."""
    v = torch.randn(x.shape, generator=generator, dtype=x.dtype)
    _, pull = vjp(f, x)
    value = 0.0
    for _ in range(iterations):
        v = v / v.norm()
        _, jv = jvp(f, (x,), (v,))
        value = float(jv.norm())
        (v,) = pull(jv)
    return value
