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
from torch.func import grad, jvp, vjp

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


@quiet_forward_mode()
def estimate_inf(
    f, x: torch.Tensor, generator: torch.Generator, restarts: int = 4, iterations: int = 20
) -> float:
    """‖J_f(x)‖∞ (max absolute row sum) by the ∞-norm power method; a lower bound."""
    return _inf_power(f, x, generator, restarts, iterations)[0]


def _inf_power(
    f,
    x: torch.Tensor,
    generator: torch.Generator,
    restarts: int,
    iterations: int,
    start: torch.Tensor | None = None,
) -> tuple[float, int, torch.Tensor]:
    """(‖J_f(x)‖∞ estimate, the row i attaining it, the sign vector s with (Js)_i = value).

    From a sign vector v, J v points at its largest entry i; the sign pattern of row i of J
    (one vector-Jacobian product) is the next v. ‖Jv‖∞ never decreases and stops at a
    local maximum; random restarts (and `start`, a previous maximiser) guard against a poor
    one.
    """
    _, pull = vjp(f, x)
    best = (0.0, 0, torch.zeros_like(x))
    starts = [] if start is None else [start]
    starts += [
        torch.randint(0, 2, x.shape, generator=generator, dtype=x.dtype) * 2 - 1
        for _ in range(restarts - len(starts))
    ]
    for v in starts:
        value, row_index = 0.0, 0
        for _ in range(iterations):
            _, jv = jvp(f, (x,), (v,))
            index = int(jv.abs().argmax())
            row = torch.zeros_like(jv).flatten()
            row[index] = 1.0
            (row_of_j,) = pull(row.view_as(jv))
            new_value = float(row_of_j.abs().sum())
            if new_value <= value * (1 + 1e-12):
                break
            v, value, row_index = torch.sign(row_of_j), new_value, index
        if value > best[0]:
            best = (value, row_index, v)
    return best


@quiet_forward_mode()
def estimate_frobenius(
    f, x: torch.Tensor, generator: torch.Generator, iterations: int = 50
) -> float:
    """Spectral norm of J_f(x) on R^{n×d} by power iteration on JᵀJ; a lower bound."""
    return _spectral_power(f, x, generator, iterations)[0]


def _spectral_power(
    f,
    x: torch.Tensor,
    generator: torch.Generator,
    iterations: int,
    start: torch.Tensor | None = None,
) -> tuple[float, torch.Tensor]:
    """(‖J_f(x)‖₂ estimate, its right singular vector), from `start` or a random vector."""
    v = torch.randn(x.shape, generator=generator, dtype=x.dtype) if start is None else start
    _, pull = vjp(f, x)
    value = 0.0
    for _ in range(iterations):
        v = v / v.norm()
        _, jv = jvp(f, (x,), (v,))
        value = float(jv.norm())
        (v,) = pull(jv)
    return value, v / v.norm()


@quiet_forward_mode()
def worst_case_search(
    f, x: torch.Tensor, radius: float, norm: str, generator: torch.Generator, search: dict
) -> tuple[float, torch.Tensor]:
    """(the largest local Lipschitz constant found over inputs with max|x| ≤ R, the input
    where it was found): a lower bound of the supremum, by projected sign-gradient ascent from
    `x` on the power method's objective.

    Each step fixes the maximiser of the current estimate (row i and signs s for the ∞-norm,
    the right singular vector v for the 2-norm), ascends (J(x)s)_i or ‖J(x)v‖₂ in x (their
    gradient is that of the norm wherever the maximiser is unique), and projects back onto
    the box [−R, R]; the best estimate along the path is returned.
    """
    best, start = (0.0, x), None
    for step in range(search["steps"] + 1):
        value, start, objective = _maximiser(f, x, norm, generator, search["iterations"], start)
        best = max(best, (value, x), key=lambda pair: pair[0])
        if step == search["steps"]:
            break
        rate = search["rate"] * radius * (1 - step / search["steps"])
        x = (x + rate * torch.sign(grad(objective)(x))).clamp(-radius, radius)
    return best


def _maximiser(f, x: torch.Tensor, norm: str, generator, iterations: int, start):
    """(norm estimate at x, its maximiser, the objective that fixes the maximiser): (J(z)s)_i
    for the ∞-norm, ‖J(z)v‖₂ for the 2-norm."""
    if norm == "inf":
        value, index, signs = _inf_power(f, x, generator, 1, iterations, start)
        return value, signs, lambda z: jvp(f, (z,), (signs,))[1].flatten()[index]
    value, v = _spectral_power(f, x, generator, iterations, start)
    return value, v, lambda z: jvp(f, (z,), (v,))[1].norm()
