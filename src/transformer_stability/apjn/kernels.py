"""Gaussian kernels of the norm maps and of the ReLU MLP (infinite-width theory).

For a token pair (z1, z2) ~ N(0, [[q, p], [p, q]]) and an elementwise map phi, the theory needs
    q_tilde = E phi(z1)^2,      p_tilde = E phi(z1) phi(z2),
    chi_q   = E phi'(z1)^2,     chi_p   = E phi'(z1) phi'(z2).
LayerNorm and erf have closed forms; tanh (DyT) is integrated numerically.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from transformer_stability.apjn.names import NORMS, NormName

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class KernelValues:
    """The four Gaussian expectations of a norm map at one (q, p)."""

    q_tilde: float
    p_tilde: float
    chi_q: float
    chi_p: float


class NormKernel(Protocol):
    def __call__(self, q: float, p: float) -> KernelValues: ...


@dataclass(frozen=True)
class LayerNormKernel:
    """LayerNorm at infinite width acts as x -> x / sqrt(q) on a token of variance q."""

    def __call__(self, q: float, p: float) -> KernelValues:
        return KernelValues(q_tilde=1.0, p_tilde=p / q, chi_q=1.0 / q, chi_p=1.0 / q)


@dataclass(frozen=True)
class ErfKernel:
    """phi(x) = erf(alpha x): every expectation in closed form."""

    alpha: float

    def __call__(self, q: float, p: float) -> KernelValues:
        a2 = self.alpha**2
        denom = 1.0 + 2.0 * a2 * q
        return KernelValues(
            q_tilde=(2.0 / math.pi) * math.asin(2.0 * a2 * q / denom),
            p_tilde=(2.0 / math.pi) * math.asin(2.0 * a2 * p / denom),
            chi_q=(4.0 * a2 / math.pi) / math.sqrt(1.0 + 4.0 * a2 * q),
            chi_p=(4.0 * a2 / math.pi) / math.sqrt(denom**2 - 4.0 * a2**2 * p**2),
        )


def _sinh_nodes(width: float, step: float, reach: float = 9.0) -> tuple[np.ndarray, np.ndarray]:
    """Trapezoid nodes on x = width*sinh(t): dense (spacing ~ width*step) near 0, sparse out to
    +-reach standard deviations. Exponentially accurate for analytic integrands, including
    tanh(s x) with s >> 1, where Gauss-Hermite nodes (spacing ~ 1/sqrt(n)) miss the step."""
    t_max = math.asinh(reach / width)
    n = 2 * math.ceil(t_max / step) + 1
    t = np.linspace(-t_max, t_max, n)
    h = t[1] - t[0]
    return width * np.sinh(t), h * width * np.cosh(t)


@dataclass(frozen=True)
class QuadratureKernel:
    """Kernels of an arbitrary smooth elementwise map phi(alpha x) by numerical quadrature.

    1-D expectations use the sinh-mapped trapezoid rule; 2-D ones use the same nodes on both
    axes with the correlated Gaussian density as weight, so the features of phi(alpha z1) and
    phi(alpha z2) (both axis-aligned) are resolved whatever alpha*sqrt(q) is.
    """

    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]
    alpha: float
    step: float = 0.15

    def _nodes(self, q: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
        feature = 1.0 / (self.alpha * math.sqrt(q))
        width = 0.5 * min(1.0, feature)
        # the correlated density has minor-axis width sqrt(1 - rho): keep several nodes across it
        step = min(self.step, 0.3 * math.sqrt(max(1.0 - abs(rho), 1e-6)))
        return _sinh_nodes(width, step)

    def __call__(self, q: float, p: float) -> KernelValues:
        rho = p / q
        x, w = self._nodes(q, rho)
        z = self.alpha * math.sqrt(q) * x
        f, df = self.phi(z), self.alpha * self.dphi(z)
        w1 = w * _INV_SQRT_2PI * np.exp(-0.5 * x**2)
        q_tilde, chi_q = float(w1 @ f**2), float(w1 @ df**2)
        if abs(rho) >= 1.0 - 1e-12:  # z2 = +-z1: the 1-D expectation of phi(z) phi(+-z)
            mirror = z if rho > 0 else -z
            f2, df2 = self.phi(mirror), self.alpha * self.dphi(mirror)
            return KernelValues(q_tilde, float(w1 @ (f * f2)), chi_q, float(w1 @ (df * df2)))
        c = 1.0 - rho**2
        quad = (x[:, None] ** 2 - 2.0 * rho * np.outer(x, x) + x[None, :] ** 2) / (2.0 * c)
        w2 = np.outer(w, w) * np.exp(-quad) / (2.0 * math.pi * math.sqrt(c))
        return KernelValues(q_tilde, float(f @ w2 @ f), chi_q, float(df @ w2 @ df))


def _sech2(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.cosh(np.clip(x, -350.0, 350.0)) ** 2


def tanh_kernel(alpha: float) -> QuadratureKernel:
    """DyT's map gamma*tanh(alpha x)+beta at init (gamma=1, beta=0)."""
    return QuadratureKernel(phi=np.tanh, dphi=_sech2, alpha=alpha)


def norm_kernel(norm: NormName, alpha: float | None = None) -> NormKernel:
    """The kernel of a norm variant; alpha is required for the saturating maps."""
    if norm == "ln":
        return LayerNormKernel()
    if alpha is None or alpha <= 0:
        raise ValueError(f"norm {norm!r} needs a positive alpha, got {alpha!r}")
    if norm == "derf":
        return ErfKernel(alpha)
    if norm == "dyt":
        return tanh_kernel(alpha)
    raise ValueError(f"unknown norm {norm!r}; expected one of {NORMS}")


def relu_kappa(rho: float) -> float:
    """E relu(z1) relu(z2) for unit-variance z with correlation rho (kappa(1) = 1/2)."""
    rho = min(max(rho, -1.0), 1.0)
    return (math.sqrt(1.0 - rho**2) + rho * (math.pi - math.acos(rho))) / (2.0 * math.pi)


def relu_kappa_prime(rho: float) -> float:
    """E step(z1) step(z2) = d kappa / d rho, the ReLU derivative-product kernel."""
    rho = min(max(rho, -1.0), 1.0)
    return 0.25 + math.asin(rho) / (2.0 * math.pi)
