"""The full-Gram closure: it reduces to the (q, p) recursion with the self-term on equal
tokens, its forward and backward APJN agree, and its pair kernels match Monte Carlo."""

import numpy as np
import pytest

from transformer_stability.apjn.gram import (
    gram_backward_log_apjn,
    gram_forward_log_apjn,
    pair_kernels,
    propagate_gram,
    token_moments,
)
from transformer_stability.apjn.kernels import norm_kernel
from transformer_stability.apjn.theory import MeanField, forward_log_apjn, propagate_statistics

MF = MeanField(a=0.0944, m=0.3775, n_tokens=16)


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.0)])
def test_equal_tokens_give_the_recursion_with_the_self_term(norm, alpha):
    n, q0, p0 = 17, 1.0, 0.2
    gram0 = p0 + (q0 - p0) * np.eye(n)
    traj = propagate_gram(norm, alpha, MF, gram0, depth=30)
    ref = propagate_statistics(norm_kernel(norm, alpha), MF, q0, p0, 30, self_term=True)
    q, p = token_moments(traj.gram, skip=0)
    np.testing.assert_allclose(q, ref.q, rtol=1e-12)
    np.testing.assert_allclose(p, ref.p, rtol=1e-12)
    # the APJN: the (J, K) recursion at leading order in 1/N, over all N_tot tokens
    log_j = gram_forward_log_apjn(traj, MF)
    assert log_j[-1] == pytest.approx(forward_log_apjn(ref, MeanField(MF.a, MF.m, n))[-1], rel=3e-3)


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
    alpha, gram = 1.2, np.array([[0.5, 0.6], [0.6, 2.0]])
    phi, chi = pair_kernels("derf", alpha, gram)
    rng = np.random.default_rng(1)
    z = rng.multivariate_normal([0, 0], gram, size=400_000)
    from scipy.special import erf

    f = erf(alpha * z)
    df = 2 * alpha / np.sqrt(np.pi) * np.exp(-((alpha * z) ** 2))
    assert phi[0, 1] == pytest.approx(np.mean(f[:, 0] * f[:, 1]), abs=3e-3)
    assert chi[0, 1] == pytest.approx(np.mean(df[:, 0] * df[:, 1]), abs=3e-3)
    assert chi[1, 1] == pytest.approx(np.mean(df[:, 1] ** 2), abs=3e-3)
