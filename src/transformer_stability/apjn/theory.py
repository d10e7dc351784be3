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
import scipy  # scipy.optimize and .special load on first use: the registry imports this module
from tqdm.auto import tqdm

from transformer_stability.apjn.kernels import (
    NormKernel,
    norm_kernel,
    relu_kappa,
    relu_kappa_prime,
)
from transformer_stability.apjn.names import SATURATING, NormName


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
    """a = sigma_o^2 sigma_v^2 (attention gain), m = sigma_w1^2 sigma_w2^2 (MLP gain), N tokens
    (CLS not counted); `exact` picks the closure of uniform attention (`attention_mixing`)."""

    a: float
    m: float
    n_tokens: int
    exact: bool = False

    @property
    def mixing(self) -> tuple[float, float]:
        return attention_mixing(self.n_tokens, self.exact)

    @classmethod
    def from_shape(cls, shape: ViTShape) -> MeanField:
        """Fan-in convention sigma^2 = fan_in * std^2 * mult^2; CLS is not counted in N."""
        std_attn = shape.init_std * shape.attn_mult
        std_mlp = shape.init_std * shape.mlp_mult
        sigma_v2 = sigma_o2 = shape.width * std_attn**2
        sigma_w1 = shape.width * std_mlp**2
        sigma_w2 = shape.mlp_ratio * shape.width * std_mlp**2
        return cls(a=sigma_o2 * sigma_v2, m=sigma_w1 * sigma_w2, n_tokens=shape.n_tokens_total - 1)


def attention_mixing(n_tokens: int, exact: bool) -> tuple[float, float]:
    """(s, x): uniform attention adds a (chi_q s J + chi_p x K) to the same-token channel J and
    the cross-token channel K alike. Each output is the mean over all N_tot = N + 1 tokens (CLS
    included), so taken exactly s = 1/N_tot and x = N/N_tot (the N_tot - 1 other tokens); the
    authors' recursion has s = 1/N and x = 1. Derivation: docs/apjn.md."""
    if exact:
        return 1.0 / (n_tokens + 1), n_tokens / (n_tokens + 1)
    return 1.0 / n_tokens, 1.0


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
    kernel: NormKernel,
    mf: MeanField,
    q0: float,
    p0: float,
    depth: int,
    progress: bool = False,
    self_term: bool = False,
) -> Trajectory:
    """Iterate the (q, p) recursion for `depth` blocks starting from (q0, p0).

    Uniform attention gives every token the mean of all N_tot = N + 1 value vectors, whose
    second moment is p_tilde + (q_tilde - p_tilde)/N_tot. The authors' recursion (the default,
    which the paper's figures use) keeps p_tilde only; `self_term` adds the 1/N_tot part."""
    if not q0 > 0 or not abs(p0) <= q0:
        raise ValueError(f"need q0 > 0 and |p0| <= q0, got q0={q0}, p0={p0}")
    q, p = np.empty(depth + 1), np.empty(depth + 1)
    chi = np.empty((4, depth))
    kp = np.empty(depth)
    q[0], p[0] = q0, p0
    blocks = tqdm(range(depth), desc="mean-field blocks", disable=not progress, mininterval=2.0)
    for layer in blocks:
        k = kernel(q[layer], p[layer])
        mixed = k.p_tilde + (k.q_tilde - k.p_tilde) / (mf.n_tokens + 1) if self_term else k.p_tilde
        q_h = q[layer] + mf.a * mixed
        p_h = p[layer] + mf.a * mixed
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
    (s, x), m = mf.mixing, mf.m
    out = np.zeros(traj.depth + 1)
    j, k, log_scale = 1.0, 0.0, 0.0
    for layer in range(traj.depth):
        mixed = mf.a * (traj.chi_q[layer] * s * j + traj.chi_p[layer] * x * k)
        j, k = j + mixed, k + mixed
        j *= 1 + 0.5 * m * traj.chi_h_q[layer]
        k *= 1 + m * traj.kappa_prime_h[layer] * traj.chi_h_p[layer]
        log_scale += math.log(j)
        j, k = 1.0, k / j
        out[layer + 1] = log_scale
    return out


def backward_log_apjn(traj: Trajectory, mf: MeanField) -> np.ndarray:
    """ln J^{L,b} for b = 0..L (J^{L,L} = 1, K = 0), iterating from the last block down."""
    (s, x), m = mf.mixing, mf.m
    out = np.zeros(traj.depth + 1)
    j, k, log_scale = 1.0, 0.0, 0.0
    for layer in reversed(range(traj.depth)):
        j *= 1 + 0.5 * m * traj.chi_h_q[layer]
        k *= 1 + m * traj.kappa_prime_h[layer] * traj.chi_h_p[layer]
        mixed = mf.a * (s * j + x * k)
        j, k = j + traj.chi_q[layer] * mixed, k + traj.chi_p[layer] * mixed
        log_scale += math.log(j)
        j, k = 1.0, k / j
        out[layer] = log_scale
    return out


# ---- asymptotics -------------------------------------------------------------------------

DYT_ALPHA_FACTOR = math.sqrt(2.0 * math.pi) / 3.0
"""Large-q ratio of tanh's to erf's chi_q at equal alpha: (4/(3 sqrt(2 pi))) / (2/pi) ~ 0.836."""


@dataclass(frozen=True)
class PreLNModes:
    """The two power laws of pre-LN's (J, K) recursion linearised at rho = 1.

    With q_l = q0 + c l (c = a + m/2) every block multiplies (J, K) by (1 + m/(2 q_h)) times
    I + B/q_l, B = a [[s, x], [s, x]] ((s, x): `attention_mixing`). B has the eigenvalues 0, on
    (x, -s), and lambda = a (s + x), on (1, 1); all block matrices commute, so J ~ w_- L^zeta_-
    + w_+ L^zeta_+ with zeta_- = (m/2)/c = m/(m + 2a) and zeta_+ = (m/2 + lambda)/c: the
    authors' closure has lambda = a (1 + 1/N), zeta_+ = 1 + a/(N c); the exact one lambda = a,
    zeta_+ = 1. Derivation: docs/apjn.md.
    """

    zeta_minus: float
    zeta_plus: float
    growth: float  # c = a + m/2, the per-block growth of q at rho = 1
    attention_eigenvalue: float  # lambda = a (s + x)


def preln_modes(mf: MeanField) -> PreLNModes:
    """zeta_- = m/(m + 2a) and zeta_+ = (m/2 + lambda)/(a + m/2) of mean-field constants `mf`."""
    growth = mf.a + 0.5 * mf.m
    eigenvalue = mf.a * sum(mf.mixing)
    return PreLNModes(
        zeta_minus=0.5 * mf.m / growth,
        zeta_plus=(0.5 * mf.m + eigenvalue) / growth,
        growth=growth,
        attention_eigenvalue=eigenvalue,
    )


def preln_mode_weights(mf: MeanField, j0: float = 1.0, k0: float = 0.0) -> tuple[float, float]:
    """(w_-, w_+): the start (J, K) = w_- (x, -s)/x + w_+ (1, 1); w_+ = (s j0 + x k0)/(s + x),
    so (1, 0) gives w_+ = 1/(N+1) = 1/N_tot in both closures."""
    s, x = mf.mixing
    w_plus = (s * j0 + x * k0) / (s + x)
    return j0 - w_plus, w_plus


def _log_gamma_ratio(x: np.ndarray, shift: float) -> np.ndarray:
    """ln Gamma(x + shift) - ln Gamma(x) without the cancellation of two huge gammaln values:
    its asymptotic series for x >= 1e4 (error < 1e-13)."""
    x = np.asarray(x, dtype=float)
    big = np.maximum(x, 1e4)
    series = (
        shift * np.log(big)
        + shift * (shift - 1) / (2 * big)
        - shift * (shift - 1) * (2 * shift - 1) / (12 * big**2)
    )
    small = np.minimum(x, 1e4)
    gammaln = scipy.special.gammaln
    return np.where(x >= 1e4, series, gammaln(small + shift) - gammaln(small))


def _log_rising_ratio(start: float, shift: float, depth: np.ndarray) -> np.ndarray:
    """ln prod_{l<L} (1 + shift/(l + start)) = ln Gamma(L+start+shift) Gamma(start) /
    (Gamma(L+start) Gamma(start+shift)); grows as shift * ln L."""
    return _log_gamma_ratio(np.asarray(depth, dtype=float) + start, shift) - _log_gamma_ratio(
        np.array(start), shift
    )


def preln_two_mode_log_apjn(
    mf: MeanField, q0: float, depth: np.ndarray, j0: float = 1.0, k0: float = 0.0
) -> np.ndarray:
    """ln J^{L,0} of pre-LN in closed form at rho = 1 (exact when p0 = q0, where rho stays 1),
    for every L in `depth` (real values allowed): the common MLP factor times
    w_- + w_+ prod_l (1 + lambda/q_l)."""
    modes = preln_modes(mf)
    c, depth = modes.growth, np.asarray(depth, dtype=float)
    w_minus, w_plus = preln_mode_weights(mf, j0, k0)
    mlp = _log_rising_ratio((q0 + mf.a) / c, 0.5 * mf.m / c, depth)
    attention = _log_rising_ratio(q0 / c, modes.attention_eigenvalue / c, depth)
    return mlp + np.logaddexp(math.log(w_minus), math.log(w_plus) + attention)


SHARE_BRACKET = (-30.0, 100.0)
"""ln L bracket of the share-depth root: from far below one block to far beyond any depth."""


def preln_share_depth(
    mf: MeanField, q0: float, share: float = 0.5, j0: float = 1.0, k0: float = 0.0
) -> float:
    """The depth at which the zeta_+ mode carries `share` of J (0 < share < 1). share = 1/2 is
    the crossover, where the local exponent passes the midpoint of zeta_- and zeta_+: about
    (q0/c) N^(1/(zeta_+ - zeta_-)), ~ N^3 at ViT-B's constants (zeta_+ - zeta_- ~ a/c ~ 1/3).
    0 when the zeta_+ mode already has that share at the start."""
    if not 0 < share < 1:
        raise ValueError(f"share must lie in (0, 1), got {share}")
    modes = preln_modes(mf)
    w_minus, w_plus = preln_mode_weights(mf, j0, k0)
    target = math.log(w_minus / w_plus * share / (1 - share))
    start, shift = q0 / modes.growth, modes.attention_eigenvalue / modes.growth

    def gap(log_depth: float) -> float:
        return float(_log_rising_ratio(start, shift, np.array(math.exp(log_depth)))) - target

    if gap(SHARE_BRACKET[0]) >= 0:  # at (or within rounding of) that share already
        return 0.0
    return math.exp(scipy.optimize.brentq(gap, *SHARE_BRACKET, xtol=1e-12))


def _arcsine_map(rho: float) -> float:
    return (2.0 / math.pi) * math.asin(rho)


def saturated_fixed_point(mf: MeanField) -> float:
    """rho* solving rho = [a rt + m kappa(rt)] / [a rt + m/2], rt = (2/pi) asin(rho): the
    cross-token correlation once the saturating map acts like sign()."""

    def gap(rho: float) -> float:
        rt = _arcsine_map(rho)
        return (mf.a * rt + mf.m * relu_kappa(rt)) / (mf.a * rt + 0.5 * mf.m) - rho

    return scipy.optimize.brentq(gap, 1e-9, 1.0 - 1e-12, xtol=1e-14)


def saturated_growth_rate(mf: MeanField) -> float:
    """c_q = a (2/pi) asin(rho*) + m/2: the per-block growth of q at large depth."""
    return mf.a * _arcsine_map(saturated_fixed_point(mf)) + 0.5 * mf.m


def sqrt_depth_slope(norm: NormName, alpha: float, mf: MeanField) -> float:
    """Predicted slope of ln J vs sqrt(l) for Derf; DyT behaves like Derf at alpha*0.836."""
    if norm not in SATURATING:
        raise ValueError(f"the sqrt-depth law is for {SATURATING}, not {norm!r}")
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
    L-block net at init, so one forward recursion gives the whole depth curve. The exact
    closure (mf.exact) also keeps the statistics' 1/N_tot self-term."""
    kernel = norm_kernel(norm, alpha)
    traj = propagate_statistics(kernel, mf, q0, p0, max_depth, progress, self_term=mf.exact)
    return forward_log_apjn(traj, mf)


__all__ = [
    "DYT_ALPHA_FACTOR",
    "MeanField",
    "PreLNModes",
    "Trajectory",
    "ViTShape",
    "attention_mixing",
    "backward_log_apjn",
    "end_to_end_log_apjn",
    "forward_log_apjn",
    "preln_mode_weights",
    "preln_modes",
    "preln_share_depth",
    "preln_two_mode_log_apjn",
    "propagate_statistics",
    "saturated_fixed_point",
    "saturated_growth_rate",
    "sqrt_depth_slope",
]
