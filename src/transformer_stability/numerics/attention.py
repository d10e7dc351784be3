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


def lipschitz_bound_inf(w: AttentionWeights, x: torch.Tensor) -> float:
    """ω_OV·(1 + 2(1 − p_max²)·ω_KQ·R²), p_max the smallest row maximum, R = max|x|."""
    omega_ov = float(_abs_row_sums(w.output).max() * _abs_row_sums(w.value).max())
    omega_kq = (
        2
        / math.sqrt(x.shape[-1])
        * float(_abs_row_sums(w.key).norm() * _abs_row_sums(w.query).norm())
    )
    p_max = float(w.probabilities(x).amax(dim=-1).min())
    radius = float(x.abs().max())
    return omega_ov * (1 + 2 * (1 - p_max**2) * omega_kq * radius**2)


def lipschitz_bound_frobenius(w: AttentionWeights, x: torch.Tensor) -> float:
    """‖W_OW_V‖₂(√n + 2(1 − p_max²)·√(2(n+1))·‖W_QᵀW_K‖₂R₂²/√d), R₂ = max_t ‖x_t‖₂.

    ‖P‖₂ ≤ √n bounds the mixing term; each logit moves by at most
    ‖W_QᵀW_K‖₂R₂(‖dx_t‖₂ + max_s ‖dx_s‖₂)/√d, which sums over t to √(2(n+1))‖dX‖_F.
    """
    n, d = x.shape
    mixing = torch.linalg.matrix_norm(w.output @ w.value, ord=2)
    kq = torch.linalg.matrix_norm(w.query.T @ w.key, ord=2)
    p_max = float(w.probabilities(x).amax(dim=-1).min())
    radius = float(x.norm(dim=-1).max())
    logit_term = 2 * (1 - p_max**2) * math.sqrt(2 * (n + 1)) * float(kq) * radius**2 / math.sqrt(d)
    return float(mixing) * (math.sqrt(n) + logit_term)


@quiet_forward_mode()
def estimate_inf(
    f, x: torch.Tensor, generator: torch.Generator, restarts: int = 4, iterations: int = 20
) -> float:
    """‖J_f(x)‖∞ (max absolute row sum) by the ∞-norm power method; a lower bound.

    From a sign vector v, J v points at its largest entry i; the sign pattern of row i of J
    (one vector-Jacobian product) is the next v. ‖Jv‖∞ never decreases and stops at a
    local maximum; random restarts guard against a poor one.
    """
    _, pull = vjp(f, x)
    best = 0.0
    for _ in range(restarts):
        v = torch.randint(0, 2, x.shape, generator=generator, dtype=x.dtype) * 2 - 1
        value = 0.0
        for _ in range(iterations):
            _, jv = jvp(f, (x,), (v,))
            row = torch.zeros_like(jv).flatten()
            row[jv.abs().argmax()] = 1.0
            (row_of_j,) = pull(row.view_as(jv))
            new_v = torch.sign(row_of_j)
            new_value = float(row_of_j.abs().sum())
            if new_value <= value * (1 + 1e-12):
                break
            v, value = new_v, new_value
        best = max(best, value)
    return best


@quiet_forward_mode()
def estimate_frobenius(
    f, x: torch.Tensor, generator: torch.Generator, iterations: int = 50
) -> float:
    """Spectral norm of J_f(x) on R^{n×d} by power iteration on JᵀJ; a lower bound."""
    v = torch.randn(x.shape, generator=generator, dtype=x.dtype)
    _, pull = vjp(f, x)
    value = 0.0
    for _ in range(iterations):
        v = v / v.norm()
        _, jv = jvp(f, (x,), (v,))
        value = float(jv.norm())
        (v,) = pull(jv)
    return value
