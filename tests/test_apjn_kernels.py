"""Norm-map and ReLU kernels against Monte Carlo Gaussian expectations and closed forms."""

import math
import warnings

import numpy as np
import pytest
from scipy.special import erf

from transformer_stability.apjn.kernels import (
    ErfKernel,
    LayerNormKernel,
    QuadratureKernel,
    norm_kernel,
    relu_kappa,
    relu_kappa_prime,
    tanh_kernel,
)

N_MC = 400_000


def _pairs(q: float, p: float, rng: np.random.Generator, n: int = N_MC) -> np.ndarray:
    return rng.multivariate_normal([0.0, 0.0], [[q, p], [p, q]], size=n)


def _assert_mc(samples: np.ndarray, value: float, sigmas: float = 5.0) -> None:
    """`value` lies within `sigmas` Monte Carlo standard errors of the sample mean."""
    err = samples.std() / math.sqrt(len(samples))
    assert abs(samples.mean() - value) <= sigmas * err + 1e-12, (samples.mean(), value, err)


def _maps(norm: str, alpha: float):
    """The map and its derivative, written independently of the package."""
    if norm == "derf":

        def phi(z):
            return erf(alpha * z)

        def dphi(z):
            return 2 * alpha / math.sqrt(math.pi) * np.exp(-((alpha * z) ** 2))

        return phi, dphi

    def tanh(z):
        return np.tanh(alpha * z)

    def dtanh(z):
        return alpha / np.cosh(alpha * z) ** 2

    return tanh, dtanh


@pytest.mark.parametrize("norm", ["derf", "dyt"])
@pytest.mark.parametrize(("q", "p", "alpha"), [(1.0, 0.2, 0.5), (3.0, 2.0, 1.0), (0.4, -0.1, 1.5)])
def test_saturating_kernels_match_monte_carlo(norm, q, p, alpha):
    z = _pairs(q, p, np.random.default_rng(7))
    phi, dphi = _maps(norm, alpha)
    k = norm_kernel(norm, alpha)(q, p)
    _assert_mc(phi(z[:, 0]) ** 2, k.q_tilde)
    _assert_mc(phi(z[:, 0]) * phi(z[:, 1]), k.p_tilde)
    _assert_mc(dphi(z[:, 0]) ** 2, k.chi_q)
    _assert_mc(dphi(z[:, 0]) * dphi(z[:, 1]), k.chi_p)


@pytest.mark.parametrize("alpha", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("q", [0.5, 10.0, 1e3, 3e4])
@pytest.mark.parametrize("rho", [-1.0, -0.7, 0.0, 0.3, 0.66, 0.95, 0.999, 1.0])
def test_quadrature_reproduces_erf_closed_forms(alpha, q, rho):
    """The quadrature used for tanh is exact to ~1e-10 on erf, including alpha*sqrt(q) >> 1
    where the map is a near-step, anticorrelated pairs, and the degenerate pairs rho = +-1."""
    quad = QuadratureKernel(
        phi=erf, dphi=lambda x: 2 / math.sqrt(math.pi) * np.exp(-(x**2)), alpha=alpha
    )(q, rho * q)
    exact = ErfKernel(alpha)(q, rho * q)
    for name in ("q_tilde", "p_tilde", "chi_q", "chi_p"):
        assert getattr(quad, name) == pytest.approx(getattr(exact, name), rel=1e-9, abs=1e-14)


def test_tanh_kernel_saturates_like_sign():
    """At alpha*sqrt(q) >> 1, tanh -> sign: p_tilde -> (2/pi) asin(rho), q_tilde -> 1, and
    chi_q -> 4 alpha / (3 sqrt(2 pi q)) (the integral of sech^4)."""
    alpha, q, rho = 1.0, 1e6, 0.5
    k = tanh_kernel(alpha)(q, rho * q)
    assert k.q_tilde == pytest.approx(1.0, abs=2e-3)
    assert k.p_tilde == pytest.approx(2 / math.pi * math.asin(rho), abs=2e-3)
    assert k.chi_q == pytest.approx(4 * alpha / (3 * math.sqrt(2 * math.pi * q)), rel=1e-3)


def _layer_norm(v: np.ndarray) -> np.ndarray:
    c = v - v.mean(axis=-1, keepdims=True)
    return c / c.std(axis=-1, keepdims=True)


def _fd_jacobian(v: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central finite-difference Jacobian of LayerNorm at v (rows: outputs)."""
    steps = h * np.eye(len(v))
    return ((_layer_norm(v + steps) - _layer_norm(v - steps)) / (2 * h)).T


def test_layernorm_kernel_matches_wide_layernorm():
    """On two wide correlated tokens, LayerNorm's output overlap is p/q and its Jacobians give
    ||J||_F^2/d = tr(J1 J2^T)/d = 1/q, as the kernel says (up to O(1/sqrt(d)) fluctuations)."""
    d, q, p = 2_000, 2.5, 1.0
    x = _pairs(q, p, np.random.default_rng(3), n=d).T
    k = LayerNormKernel()(q, p)
    y1, y2 = _layer_norm(x[0]), _layer_norm(x[1])
    j1, j2 = _fd_jacobian(x[0]), _fd_jacobian(x[1])
    assert y1 @ y1 / d == pytest.approx(k.q_tilde, rel=1e-9)
    assert y1 @ y2 / d == pytest.approx(k.p_tilde, rel=0.1)
    assert np.sum(j1**2) / d == pytest.approx(k.chi_q, rel=0.1)
    assert np.sum(j1 * j2) / d == pytest.approx(k.chi_p, rel=0.1)


@pytest.mark.parametrize("rho", [-0.8, 0.0, 0.2, 0.66, 0.97])
def test_relu_kernels_match_monte_carlo(rho):
    z = _pairs(1.0, rho, np.random.default_rng(11))
    relu = np.maximum(z, 0.0)
    _assert_mc(relu[:, 0] * relu[:, 1], relu_kappa(rho))
    _assert_mc((z[:, 0] > 0) * (z[:, 1] > 0).astype(float), relu_kappa_prime(rho))


def test_relu_kernel_limits_and_derivative():
    """kappa(1) = E relu(z)^2 = 1/2, kappa(-1) = 0, kappa'(+-1) = 1/2, 0; correlations past +-1
    (rounding) are clipped to those limits."""
    assert relu_kappa(1.0) == pytest.approx(0.5)
    assert relu_kappa(0.0) == pytest.approx(1 / (2 * math.pi))
    for rho, kappa, kappa_prime in ((1.0 + 1e-9, 0.5, 0.5), (-1.0 - 1e-9, 0.0, 0.0)):
        assert relu_kappa(rho) == pytest.approx(kappa, abs=1e-15)
        assert relu_kappa_prime(rho) == pytest.approx(kappa_prime, abs=1e-15)
    h = 1e-6
    for rho in (-0.5, 0.1, 0.7):
        numeric = (relu_kappa(rho + h) - relu_kappa(rho - h)) / (2 * h)
        assert numeric == pytest.approx(relu_kappa_prime(rho), rel=1e-6)


def test_norm_kernel_picks_each_variants_kernel():
    """LayerNorm needs no alpha (and ignores one); erf is closed-form, tanh by quadrature."""
    assert norm_kernel("ln") == norm_kernel("ln", 2.0) == LayerNormKernel()
    assert norm_kernel("derf", 0.7) == ErfKernel(0.7)
    dyt = norm_kernel("dyt", 0.7)
    assert isinstance(dyt, QuadratureKernel) and dyt.alpha == 0.7 and dyt.phi is np.tanh


@pytest.mark.parametrize(("norm", "alpha"), [("derf", None), ("dyt", 0.0), ("bn", 1.0)])
def test_norm_kernel_rejects_bad_arguments(norm, alpha):
    with pytest.raises(ValueError, match="alpha|unknown norm"):
        norm_kernel(norm, alpha)


def test_tanh_kernel_at_a_near_step_raises_no_overflow():
    """alpha sqrt(q) ~ 1e4 puts tanh's argument far beyond cosh's float64 range; sech^2 there is
    0 to double precision and must not overflow on the way (the chi_q limit of the sign map)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = tanh_kernel(10.0)(1e6, 0.0)
    assert k.chi_q == pytest.approx(4 * 10.0 / (3 * math.sqrt(2 * math.pi * 1e6)), rel=1e-3)
    assert k.p_tilde == pytest.approx(0.0, abs=1e-12)
