"""The full-Gram closure: it reduces to the (q, p) recursion with the self-term on equal
tokens, its forward and backward APJN agree, and its pair kernels match Monte Carlo."""

import numpy as np
import pytest
from scipy.special import erf

from transformer_stability.apjn.gram import (
    _relu_kappa,
    _relu_kappa_prime,
    gram_backward_log_apjn,
    gram_forward_log_apjn,
    pair_kernels,
    propagate_gram,
    token_moments,
)
from transformer_stability.apjn.kernels import (
    ErfKernel,
    LayerNormKernel,
    norm_kernel,
    relu_kappa,
    relu_kappa_prime,
)
from transformer_stability.apjn.theory import (
    MeanField,
    backward_log_apjn,
    forward_log_apjn,
    propagate_statistics,
)

MF = MeanField(a=0.0944, m=0.3775, n_tokens=16)


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.0)])
def test_equal_tokens_give_the_exact_closure_at_every_block(norm, alpha):
    """On an equiangular Gram every token pair has the same statistics, so the full-Gram
    closure is the (q, p) recursion with the self-term and, for the APJN, the exact closure
    over N_tot = n tokens, block by block in both directions."""
    n, q0, p0 = 17, 1.0, 0.2
    gram0 = p0 + (q0 - p0) * np.eye(n)
    traj = propagate_gram(norm, alpha, MF, gram0, depth=30)
    ref = propagate_statistics(norm_kernel(norm, alpha), MF, q0, p0, 30, self_term=True)
    q, p = token_moments(traj.gram, skip=0)
    np.testing.assert_allclose(q, ref.q, rtol=1e-12)
    np.testing.assert_allclose(p, ref.p, rtol=1e-12)
    exact = MeanField(MF.a, MF.m, n - 1, exact=True)
    forward, backward = gram_forward_log_apjn(traj, MF), gram_backward_log_apjn(traj, MF)
    np.testing.assert_allclose(forward, forward_log_apjn(ref, exact), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(backward, backward_log_apjn(ref, exact), rtol=1e-12, atol=1e-13)
    assert forward[-1] > 1.0  # the constants make the comparison non-trivial


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.5)])
def test_forward_and_backward_agree_on_an_uneven_gram(norm, alpha):
    """A CLS-like token of tiny variance and uneven pair correlations; J^{L,0} both ways."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 40)) * np.r_[0.02, rng.uniform(0.5, 2.0, 8)][:, None]
    x[1:] += rng.normal(size=40)
    traj = propagate_gram(norm, alpha, MF, x @ x.T / 40, depth=20)
    fwd, bwd = gram_forward_log_apjn(traj, MF), gram_backward_log_apjn(traj, MF)
    assert fwd[-1] == pytest.approx(bwd[0], rel=1e-12)
    assert np.all(np.diff(fwd) > 0)


def test_erf_pair_kernels_match_monte_carlo_at_unequal_variances():
    """Every entry of (Phi, X), the two per-token variances and the pair, within Monte Carlo
    error of E phi(z_i) phi(z_j) and E phi'(z_i) phi'(z_j)."""
    alpha, gram = 1.2, np.array([[0.5, 0.6], [0.6, 2.0]])
    phi, chi = pair_kernels("derf", alpha, gram)
    z = np.random.default_rng(1).multivariate_normal([0, 0], gram, size=400_000)
    f = erf(alpha * z)
    df = 2 * alpha / np.sqrt(np.pi) * np.exp(-((alpha * z) ** 2))
    np.testing.assert_allclose(phi, f.T @ f / len(z), atol=3e-3)
    np.testing.assert_allclose(chi, df.T @ df / len(z), atol=3e-3)


@pytest.mark.parametrize(("q", "p"), [(1.0, 0.2), (3.0, -0.5), (0.4, 0.4)])
def test_pair_kernels_at_equal_variances_are_the_norm_kernels(q, p):
    """Diagonal entries are (q~, chi_q) and off-diagonal ones (p~, chi_p) of the (q, p)
    kernels, for LayerNorm and for erf at two alphas."""
    gram = p + (q - p) * np.eye(3)
    off = ~np.eye(3, dtype=bool)
    for norm, alpha, kernel in (
        ("ln", None, LayerNormKernel()),
        ("derf", 0.6, ErfKernel(0.6)),
        ("derf", 2.0, ErfKernel(2.0)),
    ):
        phi, chi = pair_kernels(norm, alpha, gram)
        k = kernel(q, p)
        np.testing.assert_allclose(np.diag(phi), k.q_tilde, rtol=1e-12)
        np.testing.assert_allclose(phi[off], k.p_tilde, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.diag(chi), k.chi_q, rtol=1e-12)
        np.testing.assert_allclose(chi[off], k.chi_p, rtol=1e-12)


def test_layernorm_pair_kernels_are_scale_free():
    """LayerNorm removes each token's scale: rescaling token i by c_i leaves Phi (the
    correlation matrix) unchanged and divides X_ij by c_i c_j."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 50))
    gram, scale = x @ x.T / 50, np.array([0.1, 1.0, 3.0, 7.0])
    phi, chi = pair_kernels("ln", None, gram)
    phi_s, chi_s = pair_kernels("ln", None, gram * np.outer(scale, scale))
    np.testing.assert_allclose(np.diag(phi), 1.0, rtol=1e-12)
    np.testing.assert_allclose(phi_s, phi, rtol=1e-12)
    np.testing.assert_allclose(chi_s * np.outer(scale, scale), chi, rtol=1e-12)
    np.testing.assert_allclose(np.diag(chi), 1 / np.diag(gram), rtol=1e-12)


def test_pair_kernels_reject_other_norms():
    with pytest.raises(ValueError, match="full-Gram closure"):
        pair_kernels("dyt", 1.0, np.eye(2))


def test_relu_pair_kernels_are_the_scalar_kernels_clipped():
    rho = np.array([-1.5, -1.0, -0.4, 0.0, 0.3, 0.9, 1.0, 1.0 + 1e-9])
    np.testing.assert_allclose(
        _relu_kappa(rho), [relu_kappa(r) for r in rho], rtol=1e-14, atol=1e-15
    )
    np.testing.assert_allclose(
        _relu_kappa_prime(rho), [relu_kappa_prime(r) for r in rho], rtol=1e-14, atol=1e-15
    )


def _uneven_gram() -> np.ndarray:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 30)) * np.array([0.3, 1.0, 1.7])[:, None]
    return x @ x.T / 30


def test_one_block_is_the_pair_by_pair_update():
    """One Derf block written entry by entry from the scalar ReLU kernels: attention adds
    a mean(Phi) to every entry, the MLP adds m sqrt(u_i u_j) kappa(U_ij / sqrt(u_i u_j)); the
    MLP gain is kappa'(rho_ij) X^h_ij off the diagonal and X^h_ii / 2 on it."""
    alpha, gram = 1.3, _uneven_gram()
    traj = propagate_gram("derf", alpha, MF, gram, depth=1)
    phi, chi = pair_kernels("derf", alpha, gram)
    k_h = gram + MF.a * phi.mean()
    u, chi_h = pair_kernels("derf", alpha, k_h)
    for i in range(3):
        for j in range(3):
            root = np.sqrt(u[i, i] * u[j, j])
            rho = u[i, j] / root
            expected = k_h[i, j] + MF.m * root * relu_kappa(rho)
            gain = (0.5 if i == j else relu_kappa_prime(rho)) * chi_h[i, j]
            assert traj.gram[1, i, j] == pytest.approx(expected, rel=1e-12)
            assert traj.mlp_gain[0, i, j] == pytest.approx(gain, rel=1e-12)
    np.testing.assert_allclose(traj.gram[0], gram, rtol=0)
    np.testing.assert_allclose(traj.chi[0], chi, rtol=0)
    assert traj.depth == 1


def test_without_attention_each_token_keeps_its_variance_ratio():
    """a = 0, LayerNorm, unequal variances: no token mixes, q_i grows by m/2 per block and the
    tangent on token i by q_i^L / q_i^0, so J^{L,0} = mean_i (q_i^0 + L m/2) / q_i^0, and
    backward J^{L,b} the same from the variances at block b."""
    mf, gram, depth = MeanField(a=0.0, m=0.8, n_tokens=2), _uneven_gram(), 12
    traj = propagate_gram("ln", None, mf, gram, depth)
    q0, blocks = np.diag(gram), np.arange(depth + 1)
    np.testing.assert_allclose(
        np.diagonal(traj.gram, axis1=1, axis2=2), q0 + 0.4 * blocks[:, None], rtol=1e-12
    )
    forward = np.log(np.mean((q0 + 0.4 * blocks[:, None]) / q0, axis=1))
    np.testing.assert_allclose(gram_forward_log_apjn(traj, mf), forward, rtol=1e-12)
    q_b = q0 + 0.4 * blocks[:, None]
    backward = np.log(np.mean((q0 + 0.4 * depth) / q_b, axis=1))
    np.testing.assert_allclose(gram_backward_log_apjn(traj, mf), backward, rtol=1e-12, atol=1e-14)


def test_permuting_tokens_permutes_the_trajectory():
    gram, order = _uneven_gram(), np.array([2, 0, 1])
    traj = propagate_gram("derf", 0.9, MF, gram, depth=4)
    permuted = propagate_gram("derf", 0.9, MF, gram[np.ix_(order, order)], depth=4)
    for name in ("gram", "chi", "mlp_gain"):
        np.testing.assert_allclose(
            getattr(permuted, name), getattr(traj, name)[:, order][:, :, order], rtol=1e-12
        )


def test_token_moments_skip_the_cls_token():
    """q is the mean self-overlap and p the mean overlap of distinct tokens after `skip`, for
    every Gram of a (2, 3) stack."""
    x = np.random.default_rng(6).normal(size=(2, 3, 5, 20))
    q, p = token_moments(x @ x.swapaxes(-1, -2) / 20)
    assert q.shape == p.shape == (2, 3)
    for index in np.ndindex(2, 3):
        tokens = x[index][1:]
        pairs = [tokens[i] @ tokens[j] / 20 for i in range(4) for j in range(4) if i != j]
        assert q[index] == pytest.approx(np.mean([t @ t / 20 for t in tokens]), rel=1e-12)
        assert p[index] == pytest.approx(np.mean(pairs), rel=1e-12)
