"""Infinite-width recursions for token statistics and the APJN of a residual ViT at init.

Each block is attention then a ReLU MLP, both residual, each preceded by a norm map phi.
Uniform attention at init turns the block into a recursion for the same-token variance q and
the cross-token covariance p, and the APJN into a two-channel linear recursion for the
same-token part J and the cross-token part K. Notation, formulas and their derivations:
docs/apjn.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from tqdm.auto import tqdm

from transformer_stability.apjn.kernels import (
    NormKernel,
    NormName,
    norm_kernel,
    relu_kappa,
    relu_kappa_prime,
)


@dataclass(frozen=True)
class ViTShape:
    """What the mean-field constants depend on: width, MLP ratio, token count and init."""

    width: int
    n_tokens_total: int
    mlp_ratio: float = 4.0
    init_std: float = 0.02
    attn_mult: float = 1.0
    mlp_mult: float = 1.0


@dataclass(frozen=True)
class MeanField:
    """a = sigma_o^2 sigma_v^2 (attention gain), m = sigma_w1^2 sigma_w2^2 (MLP gain), N tokens."""

    a: float
    m: float
    n_tokens: int

    @classmethod
    def from_shape(cls, shape: ViTShape) -> MeanField:
        """Fan-in convention sigma^2 = fan_in * std^2 * mult^2; CLS is not counted in N."""
        std_attn = shape.init_std * shape.attn_mult
        std_mlp = shape.init_std * shape.mlp_mult
        sigma_v2 = sigma_o2 = shape.width * std_attn**2
        sigma_w1 = shape.width * std_mlp**2
        sigma_w2 = shape.mlp_ratio * shape.width * std_mlp**2
        return cls(a=sigma_o2 * sigma_v2, m=sigma_w1 * sigma_w2, n_tokens=shape.n_tokens_total - 1)


@dataclass(frozen=True)
class Trajectory:
    """Statistics at every block input (length L+1) and the per-block susceptibilities (length L).

    chi_* are the norm-map kernels at (q_l, p_l) (attention branch); chi_h_* at the mid-block
    point (q_h, p_h) (MLP branch); kappa_prime_h = kappa'(rho_h).
    """

    q: np.ndarray
    p: np.ndarray
    chi_q: np.ndarray
    chi_p: np.ndarray
    chi_h_q: np.ndarray
    chi_h_p: np.ndarray
    kappa_prime_h: np.ndarray

    @property
    def depth(self) -> int:
        return len(self.chi_q)


def propagate_statistics(
    kernel: NormKernel, mf: MeanField, q0: float, p0: float, depth: int, progress: bool = False
) -> Trajectory:
    """Iterate the (q, p) recursion for `depth` blocks starting from (q0, p0)."""
    if not q0 > 0 or not abs(p0) <= q0:
        raise ValueError(f"need q0 > 0 and |p0| <= q0, got q0={q0}, p0={p0}")
    q, p = np.empty(depth + 1), np.empty(depth + 1)
    chi = np.empty((4, depth))
    kp = np.empty(depth)
    q[0], p[0] = q0, p0
    blocks = tqdm(range(depth), desc="mean-field blocks", disable=not progress, mininterval=2.0)
    for layer in blocks:
        k = kernel(q[layer], p[layer])
        q_h = q[layer] + mf.a * k.p_tilde
        p_h = p[layer] + mf.a * k.p_tilde
        kh = kernel(q_h, p_h)
        rho_h = kh.p_tilde / kh.q_tilde
        q[layer + 1] = q_h + 0.5 * mf.m * kh.q_tilde
        p[layer + 1] = p_h + mf.m * kh.q_tilde * relu_kappa(rho_h)
        chi[:, layer] = k.chi_q, k.chi_p, kh.chi_q, kh.chi_p
        kp[layer] = relu_kappa_prime(rho_h)
    return Trajectory(q, p, chi[0], chi[1], chi[2], chi[3], kp)


def forward_log_apjn(traj: Trajectory, mf: MeanField) -> np.ndarray:
    """ln J^{b,0} for b = 0..L, source at the trajectory's first block (J=1, K=0).

    The pair (J, K) is renormalized every block and the scale kept in log form, so very deep or
    strongly subcritical networks never overflow.
    """
    a, m, n = mf.a, mf.m, mf.n_tokens
    out = np.zeros(traj.depth + 1)
    j, k, log_scale = 1.0, 0.0, 0.0
    for layer in range(traj.depth):
        cq, cp = traj.chi_q[layer], traj.chi_p[layer]
        j, k = (1 + a * cq / n) * j + a * cp * k, (1 + a * cp) * k + (a * cq / n) * j
        j *= 1 + 0.5 * m * traj.chi_h_q[layer]
        k *= 1 + m * traj.kappa_prime_h[layer] * traj.chi_h_p[layer]
        log_scale += math.log(j)
        j, k = 1.0, k / j
        out[layer + 1] = log_scale
    return out


def backward_log_apjn(traj: Trajectory, mf: MeanField) -> np.ndarray:
    """ln J^{L,b} for b = 0..L (J^{L,L} = 1, K = 0), iterating from the last block down."""
    a, m, n = mf.a, mf.m, mf.n_tokens
    out = np.zeros(traj.depth + 1)
    j, k, log_scale = 1.0, 0.0, 0.0
    for layer in reversed(range(traj.depth)):
        j *= 1 + 0.5 * m * traj.chi_h_q[layer]
        k *= 1 + m * traj.kappa_prime_h[layer] * traj.chi_h_p[layer]
        cq, cp = traj.chi_q[layer], traj.chi_p[layer]
        j, k = (1 + a * cq / n) * j + a * cq * k, (1 + a * cp) * k + (a * cp / n) * j
        log_scale += math.log(j)
        j, k = 1.0, k / j
        out[layer] = log_scale
    return out


# ---- asymptotics -------------------------------------------------------------------------

DYT_ALPHA_FACTOR = math.sqrt(2.0 * math.pi) / 3.0
"""Large-q ratio of tanh's to erf's chi_q at equal alpha: (4/(3 sqrt(2 pi))) / (2/pi) ~ 0.836."""


def preln_exponent(mf: MeanField) -> float:
    """zeta in J ~ l^zeta for pre-LN: (m/2 + a/N) / (a + m/2)."""
    return (0.5 * mf.m + mf.a / mf.n_tokens) / (mf.a + 0.5 * mf.m)


def _arcsine_map(rho: float) -> float:
    return (2.0 / math.pi) * math.asin(rho)


def saturated_fixed_point(mf: MeanField) -> float:
    """rho* solving rho = [a rt + m kappa(rt)] / [a rt + m/2], rt = (2/pi) asin(rho): the
    cross-token correlation once the saturating map acts like sign()."""

    def gap(rho: float) -> float:
        rt = _arcsine_map(rho)
        return (mf.a * rt + mf.m * relu_kappa(rt)) / (mf.a * rt + 0.5 * mf.m) - rho

    return brentq(gap, 1e-9, 1.0 - 1e-12, xtol=1e-14)


def saturated_growth_rate(mf: MeanField) -> float:
    """c_q = a (2/pi) asin(rho*) + m/2: the per-block growth of q at large depth."""
    return mf.a * _arcsine_map(saturated_fixed_point(mf)) + 0.5 * mf.m


def sqrt_depth_slope(norm: NormName, alpha: float, mf: MeanField) -> float:
    """Predicted slope of ln J vs sqrt(l) for Derf; DyT behaves like Derf at alpha*0.836."""
    if norm not in ("derf", "dyt"):
        raise ValueError(f"the sqrt-depth law is for derf/dyt, not {norm!r}")
    effective = alpha * (DYT_ALPHA_FACTOR if norm == "dyt" else 1.0)
    gain = 0.5 * mf.m + mf.a / mf.n_tokens
    return (4.0 * effective / math.pi) * gain / math.sqrt(saturated_growth_rate(mf))


def end_to_end_log_apjn(
    norm: NormName,
    alpha: float | None,
    mf: MeanField,
    q0: float,
    p0: float,
    max_depth: int,
    progress: bool = False,
) -> np.ndarray:
    """ln J^{L,0} for every depth L = 0..max_depth: the first L blocks of a deeper net are the
    L-block net at init, so one forward recursion gives the whole depth curve."""
    traj = propagate_statistics(norm_kernel(norm, alpha), mf, q0, p0, max_depth, progress)
    return forward_log_apjn(traj, mf)


__all__ = [
    "DYT_ALPHA_FACTOR",
    "MeanField",
    "Trajectory",
    "ViTShape",
    "backward_log_apjn",
    "end_to_end_log_apjn",
    "forward_log_apjn",
    "preln_exponent",
    "propagate_statistics",
    "saturated_fixed_point",
    "saturated_growth_rate",
    "sqrt_depth_slope",
]
