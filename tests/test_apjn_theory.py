"""The (q, p) and (J, K) recursions: exact limits, consistency, and the asymptotic laws."""

import math

import numpy as np
import pytest
from scipy.special import gammaln

from transformer_stability.apjn.kernels import norm_kernel, relu_kappa, relu_kappa_prime
from transformer_stability.apjn.theory import (
    MeanField,
    ViTShape,
    _log_gamma_ratio,
    _log_rising_ratio,
    backward_log_apjn,
    end_to_end_log_apjn,
    forward_log_apjn,
    preln_mode_weights,
    preln_modes,
    preln_share_depth,
    preln_two_mode_log_apjn,
    propagate_statistics,
    saturated_fixed_point,
    saturated_growth_rate,
    sqrt_depth_slope,
)

VIT_B = MeanField.from_shape(ViTShape(width=768, n_tokens_total=197))


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


def test_mean_field_constants_of_vit_b_match_the_spec():
    """Built inside the test (the module's VIT_B is built once, at import)."""
    vit_b = MeanField.from_shape(ViTShape(width=768, n_tokens_total=197))
    assert vit_b.a == pytest.approx(0.094372, abs=5e-7)
    assert vit_b.m == pytest.approx(0.377487, abs=5e-7)
    assert vit_b.n_tokens == 196 and not vit_b.exact


def test_init_multipliers_scale_the_constants():
    base = ViTShape(width=256, n_tokens_total=65)
    scaled = MeanField.from_shape(ViTShape(width=256, n_tokens_total=65, attn_mult=2, mlp_mult=3))
    ref = MeanField.from_shape(base)
    assert scaled.a == pytest.approx(16 * ref.a)  # a = sigma_o^2 sigma_v^2 ~ attn_mult^4
    assert scaled.m == pytest.approx(81 * ref.m)


def test_saturated_constants_of_vit_b_match_the_spec():
    assert saturated_fixed_point(VIT_B) == pytest.approx(0.66, abs=0.005)
    assert saturated_growth_rate(VIT_B) == pytest.approx(0.232, abs=5e-4)
    assert sqrt_depth_slope("derf", 1.0, VIT_B) == pytest.approx(0.50, abs=0.005)
    modes = preln_modes(VIT_B)
    assert modes.zeta_minus == pytest.approx(VIT_B.m / (VIT_B.m + 2 * VIT_B.a), rel=1e-12)
    assert modes.zeta_minus == pytest.approx(0.6667, abs=5e-4)
    assert modes.zeta_plus == pytest.approx(1 + VIT_B.a / (196 * modes.growth), rel=1e-12)


@pytest.mark.parametrize(
    ("norm", "alpha", "q0", "p0"),
    [("ln", None, 1.0, 0.2), ("derf", 1.0, 0.7, 0.1), ("dyt", 1.5, 2.0, 1.2), ("derf", 5.0, 1, 0)],
)
def test_forward_and_backward_give_the_same_end_to_end_apjn(norm, alpha, q0, p0):
    """J^{L,0} computed forward from block 0 equals J^{L,0} computed backward from block L."""
    traj = propagate_statistics(norm_kernel(norm, alpha), VIT_B, q0, p0, depth=40)
    fwd, bwd = forward_log_apjn(traj, VIT_B), backward_log_apjn(traj, VIT_B)
    assert fwd[0] == 0.0 and bwd[-1] == 0.0
    assert fwd[-1] == pytest.approx(bwd[0], rel=1e-12)
    assert np.all(np.diff(fwd) > 0) and np.all(np.diff(bwd) < 0)


def test_without_attention_preln_apjn_is_the_variance_ratio():
    """a = 0: each block multiplies J by 1 + (m/2)/q_h = q_{l+1}/q_l, so J^{L,0} = q_L/q_0
    exactly, and the depth exponent tends to 1 (the residual-MLP result)."""
    mf = MeanField(a=0.0, m=VIT_B.m, n_tokens=196)
    traj = propagate_statistics(norm_kernel("ln"), mf, 1.0, 0.2, depth=20_000)
    log_j = forward_log_apjn(traj, mf)
    np.testing.assert_allclose(log_j, np.log(traj.q / traj.q[0]), rtol=1e-10, atol=1e-12)
    depth = np.arange(2_000, 20_001)
    assert _slope(np.log(depth), log_j[depth]) == pytest.approx(1.0, abs=0.01)
    assert preln_modes(mf).zeta_minus == preln_modes(mf).zeta_plus == 1.0


def test_derf_apjn_vanishes_with_alpha():
    """alpha -> 0: the erf map is ~0 and its slope ~0, so every block is the identity."""
    log_j = end_to_end_log_apjn("derf", 1e-7, VIT_B, 1.0, 0.2, max_depth=200)
    np.testing.assert_allclose(log_j, 0.0, atol=1e-10)


def test_preln_variance_grows_linearly_for_identical_tokens():
    """rho = 1 is invariant for pre-LN and q grows by exactly a + m/2 per block."""
    traj = propagate_statistics(norm_kernel("ln"), VIT_B, 1.0, 1.0, depth=100)
    np.testing.assert_allclose(traj.p, traj.q, rtol=1e-14)
    np.testing.assert_allclose(traj.q, 1.0 + np.arange(101) * (VIT_B.a + VIT_B.m / 2), rtol=1e-12)


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("n_tokens", [4, 64, 196])
@pytest.mark.parametrize("q0", [1.0, 0.3])
def test_preln_two_mode_closed_form_is_the_recursion_at_rho_one(n_tokens, q0, exact):
    """p0 = q0 keeps rho = 1 exactly, where the linearisation is exact: the closed form (two
    modes, Gamma-function products) equals the iterated recursion at every depth, in both
    closures."""
    mf = MeanField(a=VIT_B.a, m=VIT_B.m, n_tokens=n_tokens, exact=exact)
    log_j = end_to_end_log_apjn("ln", None, mf, q0, q0, max_depth=5_000)
    closed = preln_two_mode_log_apjn(mf, q0, np.arange(5_001))
    np.testing.assert_allclose(closed, log_j, rtol=1e-10, atol=1e-10)


def _token_gram_log_apjn(traj, mf: MeanField) -> np.ndarray:
    """ln J^{b,0} from the tangent's whole token Gram matrix G (N + 1 tokens, G = I at the
    source): uniform attention adds a times the mean over all token pairs of chi G (chi_q on
    the diagonal, chi_p off it) to every entry; the MLP scales the diagonal by 1 + (m/2)
    chi^h_q and the rest by 1 + m kappa' chi^h_p. J is the mean of the diagonal."""
    tokens = mf.n_tokens + 1
    gram, off = np.eye(tokens), ~np.eye(tokens, dtype=bool)
    out = [0.0]
    for layer in range(traj.depth):
        chi = np.where(off, traj.chi_p[layer], traj.chi_q[layer])
        gram = gram + mf.a * (chi * gram).mean()
        mlp = 1 + mf.m * traj.kappa_prime_h[layer] * traj.chi_h_p[layer]
        gram = gram * np.where(off, mlp, 1 + 0.5 * mf.m * traj.chi_h_q[layer])
        out.append(math.log(np.diag(gram).mean()))
    return np.array(out)


@pytest.mark.parametrize(("norm", "alpha", "n_tokens"), [("ln", None, 4), ("derf", 1.0, 7)])
def test_exact_closure_is_uniform_attention_over_every_token_pair(norm, alpha, n_tokens):
    """The exact closure is the token-space propagation of the tangent Gram matrix, term by
    term; the authors' closure is not (it counts the own token in both channels)."""
    exact = MeanField(VIT_B.a, VIT_B.m, n_tokens, exact=True)
    traj = propagate_statistics(norm_kernel(norm, alpha), exact, 1.0, 0.3, depth=60)
    direct = _token_gram_log_apjn(traj, exact)
    np.testing.assert_allclose(forward_log_apjn(traj, exact), direct, rtol=1e-12, atol=1e-12)
    backward = backward_log_apjn(traj, exact)
    assert backward[0] == pytest.approx(direct[-1], rel=1e-12)
    released = MeanField(VIT_B.a, VIT_B.m, n_tokens)
    assert forward_log_apjn(traj, released)[-1] > direct[-1] + 0.01


@pytest.mark.parametrize("n_tokens", [4, 16, 196])
def test_closures_differ_in_the_attention_eigenvalue_only(n_tokens):
    """At rho = 1 the attention matrix a [[s, x], [s, x]] has the eigenvalue a (s + x): a exactly
    (zeta_+ = 1) in the exact closure, a (1 + 1/N) in the authors'; both put weight 1/(N + 1)
    on the fast mode and share zeta_-; the exact crossover comes later."""
    released = MeanField(VIT_B.a, VIT_B.m, n_tokens)
    exact = MeanField(VIT_B.a, VIT_B.m, n_tokens, exact=True)
    assert preln_modes(exact).attention_eigenvalue == pytest.approx(VIT_B.a, rel=1e-14)
    assert preln_modes(exact).zeta_plus == pytest.approx(1.0, rel=1e-14)
    lam = preln_modes(released).attention_eigenvalue
    assert lam == pytest.approx(VIT_B.a * (1 + 1 / n_tokens), rel=1e-14)
    assert preln_modes(exact).zeta_minus == preln_modes(released).zeta_minus
    for mf in (released, exact):
        assert preln_mode_weights(mf)[1] == pytest.approx(1 / (n_tokens + 1), rel=1e-14)
    assert preln_share_depth(exact, 1.0) > preln_share_depth(released, 1.0)


def test_identical_tokens_at_four_tokens_give_the_closures_apart():
    """ViT-B constants, N = 4 (five tokens attend), L = 256, rho = 1: the two closures differ by
    a fifth (released 34.68, exact 28.30, both recomputed here by hand from the 2 x 2 map)."""
    a, m, n = VIT_B.a, VIT_B.m, 4
    values = {}
    for exact, (s, x) in ((False, (1 / n, 1.0)), (True, (1 / (n + 1), n / (n + 1)))):
        q, j, k = 1.0, 1.0, 0.0
        for _ in range(256):
            mixed = a * (s * j + x * k) / q
            j, k = (j + mixed) * (1 + m / (2 * (q + a))), (k + mixed) * (1 + m / (2 * (q + a)))
            q += a + m / 2
        mf = MeanField(a, m, n, exact=exact)
        assert end_to_end_log_apjn("ln", None, mf, 1.0, 1.0, 256)[-1] == pytest.approx(
            math.log(j), rel=1e-12
        )
        values[exact] = j
    assert values[False] / values[True] == pytest.approx(1.2256, abs=1e-3)


def test_preln_mode_weights_decompose_the_start():
    mf = MeanField(a=VIT_B.a, m=VIT_B.m, n_tokens=16)
    w_minus, w_plus = preln_mode_weights(mf)
    assert w_plus == pytest.approx(1 / 17) and w_minus == pytest.approx(16 / 17)
    w_minus, w_plus = preln_mode_weights(mf, 0.3, 0.7)  # (J, K) = w_-(1, -1/N) + w_+(1, 1)
    assert w_minus + w_plus == pytest.approx(0.3) and w_plus - w_minus / 16 == pytest.approx(0.7)


@pytest.mark.parametrize("n_tokens", [16, 64, 196])
def test_local_exponent_passes_the_midpoint_at_the_crossover(n_tokens):
    """At the crossover both modes carry half of J, so the local exponent of the closed form is
    the midpoint of zeta_- and zeta_+; the crossover grows like N^(1/(zeta_+ - zeta_-))."""
    mf = MeanField(a=VIT_B.a, m=VIT_B.m, n_tokens=n_tokens)
    modes, cross = preln_modes(mf), preln_share_depth(mf, 1.0)
    depth = cross * np.array([0.999, 1.001])
    slope = np.diff(preln_two_mode_log_apjn(mf, 1.0, depth))[0] / np.diff(np.log(depth))[0]
    assert slope == pytest.approx((modes.zeta_minus + modes.zeta_plus) / 2, abs=2e-3)
    ratio = cross / n_tokens ** (1 / (modes.zeta_plus - modes.zeta_minus))
    assert 1 < ratio < 20  # the prefactor ~ q0/c times Gamma factors, independent of N


@pytest.mark.slow
def test_preln_fits_match_zeta_minus_below_and_zeta_plus_above_the_crossover():
    """At rho = 1: N = 196, depths 3e2..3e3 (far below L* ~ 2e7) fit zeta_- ; N = 4, depths
    2e4..2e5 (far above L* ~ 90) fit zeta_+. Two-sided: the residual share of the other mode
    (predicted by the closed form) is what is left."""
    for n_tokens, window, target in ((196, (300, 3_000), "zeta_minus"),
                                     (4, (20_000, 200_000), "zeta_plus")):  # fmt: skip
        mf = MeanField(a=VIT_B.a, m=VIT_B.m, n_tokens=n_tokens)
        log_j = end_to_end_log_apjn("ln", None, mf, 1.0, 1.0, max_depth=window[1])
        depth = np.arange(*window)
        fitted = _slope(np.log(depth), log_j[depth])
        assert fitted == pytest.approx(getattr(preln_modes(mf), target), rel=0.03)


def test_preln_exponent_of_vit_b_approaches_zeta_minus_from_above():
    """From the generic input (rho0 = 0.2) the fit over 10^3..10^4 blocks (N = 196, far below
    the crossover) sits above zeta_- : q grows at a rho + m/2 < c while rho < 1, and the zeta_+
    admixture has begun; both corrections shrink with depth."""
    log_j = end_to_end_log_apjn("ln", None, VIT_B, 1.0, 0.2, max_depth=100_000)
    zeta = preln_modes(VIT_B).zeta_minus
    fits = [_slope(np.log(d), log_j[d]) for d in (np.arange(300, 3_001), np.arange(3_000, 30_001))]
    assert zeta < fits[1] < fits[0] < zeta + 0.06


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.0)])
def test_attention_self_term_adds_the_own_token_share(norm, alpha):
    """Uniform attention averages all N_tot = N + 1 value vectors, each token's own included:
    the self-term adds a (q~ - p~)/N_tot to q_h and p_h alike, and nothing for identical
    tokens (q~ = p~)."""
    kernel, mf = norm_kernel(norm, alpha), MeanField(a=0.3, m=0.5, n_tokens=16)
    plain = propagate_statistics(kernel, mf, 1.0, 0.2, depth=1)
    with_self = propagate_statistics(kernel, mf, 1.0, 0.2, depth=1, self_term=True)
    k = kernel(1.0, 0.2)
    shift = mf.a * (k.q_tilde - k.p_tilde) / 17
    q_h, p_h = 1.0 + mf.a * k.p_tilde + shift, 0.2 + mf.a * k.p_tilde + shift
    kh = kernel(q_h, p_h)
    assert with_self.q[1] == pytest.approx(q_h + 0.5 * mf.m * kh.q_tilde, rel=1e-14)
    assert with_self.p[1] > plain.p[1] and with_self.q[1] > plain.q[1]
    same = propagate_statistics(kernel, mf, 1.0, 1.0, depth=5, self_term=True)
    np.testing.assert_allclose(same.q, propagate_statistics(kernel, mf, 1.0, 1.0, 5).q, rtol=1e-14)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5])
def test_derf_grows_as_a_stretched_exponential_with_the_predicted_slope(alpha):
    log_j = end_to_end_log_apjn("derf", alpha, VIT_B, 1.0, 0.2, max_depth=100_000)
    depth = np.arange(10_000, 100_001)
    assert _slope(np.sqrt(depth), log_j[depth]) == pytest.approx(
        sqrt_depth_slope("derf", alpha, VIT_B), rel=0.01
    )
    assert _slope(np.log(depth), np.log(log_j[depth])) == pytest.approx(0.5, abs=0.02)


@pytest.mark.slow
def test_dyt_behaves_like_derf_at_a_smaller_alpha():
    log_j = end_to_end_log_apjn("dyt", 1.0, VIT_B, 1.0, 0.2, max_depth=10_000)
    depth = np.arange(1_000, 10_001)
    fitted = _slope(np.sqrt(depth), log_j[depth])
    assert fitted == pytest.approx(sqrt_depth_slope("dyt", 1.0, VIT_B), rel=0.03)
    assert sqrt_depth_slope("dyt", 1.0, VIT_B) == pytest.approx(
        0.836 * sqrt_depth_slope("derf", 1.0, VIT_B), rel=1e-3
    )


def test_log_scale_survives_growth_beyond_float64():
    """ln J > 709 would overflow exp(); the recursion keeps it in log form."""
    log_j = end_to_end_log_apjn("derf", 8.0, VIT_B, 1.0, 0.2, max_depth=100_000)
    assert np.all(np.isfinite(log_j)) and log_j[-1] > 1_000


@pytest.mark.parametrize(("q0", "p0"), [(0.0, 0.0), (1.0, 1.5), (-1.0, 0.0)])
def test_invalid_input_statistics_are_rejected(q0, p0):
    with pytest.raises(ValueError, match="q0"):
        propagate_statistics(norm_kernel("ln"), VIT_B, q0, p0, depth=3)


def test_forward_curve_from_a_later_source_uses_that_blocks_statistics():
    """Starting the recursion at block b0 with the statistics found there reproduces the tail
    of the block-0 trajectory, so forward curves from any source are consistent."""
    kernel = norm_kernel("derf", 1.0)
    full = propagate_statistics(kernel, VIT_B, 1.0, 0.2, depth=30)
    tail = propagate_statistics(kernel, VIT_B, full.q[10], full.p[10], depth=20)
    np.testing.assert_allclose(tail.q, full.q[10:], rtol=1e-12)
    np.testing.assert_allclose(tail.chi_h_p, full.chi_h_p[10:], rtol=1e-12)
    assert math.isclose(
        backward_log_apjn(full, VIT_B)[10], forward_log_apjn(tail, VIT_B)[-1], rel_tol=1e-12
    )


@pytest.mark.parametrize("shift", [0.3, 0.6667, 1.0004, 3.0])
def test_log_gamma_ratio_is_accurate_on_both_sides_of_the_series_switch(shift):
    """ln Gamma(x + s) - ln Gamma(x): the asymptotic series (x >= 1e4) meets the gammaln
    difference at the switch, and obeys the recurrence R(x + 1) - R(x) = ln(1 + s/x) far beyond
    it, where the gammaln difference would cancel. s = 3 makes the 1/x^2 term (~2.5e-8 at
    1e4) visible above the gammaln difference's rounding."""
    near = np.array([9_999.0, 1e4, 1e4 + 0.5, 1.5e4, 3e4])
    np.testing.assert_allclose(
        _log_gamma_ratio(near, shift), gammaln(near + shift) - gammaln(near), rtol=0, atol=1e-10
    )
    far = np.array([1e4, 3e4, 1e5, 1e6, 1e7])
    step = _log_gamma_ratio(far + 1, shift) - _log_gamma_ratio(far, shift)
    np.testing.assert_allclose(step, np.log1p(shift / far), rtol=1e-6, atol=1e-14)


def test_log_rising_ratio_is_the_product_it_names():
    """ln prod_{l<L} (1 + s/(l + start)) summed term by term, across the series switch."""
    start, shift = 3.7, 0.42
    terms = np.log1p(shift / (np.arange(20_000) + start))
    depth = np.array([0, 1, 7, 9_990, 10_010, 20_000])
    summed = np.concatenate([[0.0], np.cumsum(terms)])[depth]
    np.testing.assert_allclose(
        _log_rising_ratio(start, shift, depth), summed, rtol=1e-11, atol=1e-14
    )


@pytest.mark.parametrize("share", [0.2, 0.5, 0.9])
def test_share_depth_is_where_the_fast_mode_carries_that_share(share):
    """At the returned depth w_+ prod(1 + lambda/q_l) / (w_- + w_+ prod(...)) = share; a start
    that already gives the fast mode that share returns 0."""
    mf = MeanField(a=VIT_B.a, m=VIT_B.m, n_tokens=8)
    depth = preln_share_depth(mf, 1.0, share)
    modes, (w_minus, w_plus) = preln_modes(mf), preln_mode_weights(mf)
    grown = w_plus * np.exp(
        _log_rising_ratio(1.0 / modes.growth, modes.attention_eigenvalue / modes.growth, depth)
    )
    assert grown / (w_minus + grown) == pytest.approx(share, rel=1e-9)
    assert preln_share_depth(mf, 1.0, share, j0=1.0, k0=0.95) == 0.0
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="share"):
            preln_share_depth(mf, 1.0, bad)


def test_saturated_fixed_point_solves_its_equation():
    """rho* = [a rt + m kappa(rt)] / [a rt + m/2] with rt = (2/pi) asin(rho*), at two
    attention/MLP balances; c_q = a rt + m/2 at it."""
    for mf in (VIT_B, MeanField(a=0.8, m=0.2, n_tokens=16)):
        rho = saturated_fixed_point(mf)
        rt = 2 / math.pi * math.asin(rho)
        assert rho == pytest.approx(
            (mf.a * rt + mf.m * relu_kappa(rt)) / (mf.a * rt + mf.m / 2), abs=1e-12
        )
        assert 0 < rho < 1
        assert saturated_growth_rate(mf) == pytest.approx(mf.a * rt + mf.m / 2, rel=1e-12)


def test_sqrt_depth_slope_gains_a_over_n_from_attention():
    """The token count enters the slope only through the attention gain a/N added to m/2; the
    law is for the saturating maps only."""
    few, many = (MeanField(VIT_B.a, VIT_B.m, n) for n in (4, 10**9))
    scale = 4.0 * 1.3 / math.pi / math.sqrt(saturated_growth_rate(VIT_B))
    difference = sqrt_depth_slope("derf", 1.3, few) - sqrt_depth_slope("derf", 1.3, many)
    assert difference == pytest.approx(scale * VIT_B.a / 4, rel=1e-6)
    assert sqrt_depth_slope("derf", 1.3, many) == pytest.approx(scale * VIT_B.m / 2, rel=1e-6)
    with pytest.raises(ValueError, match="sqrt-depth"):
        sqrt_depth_slope("ln", 1.0, VIT_B)


def test_exact_closure_end_to_end_keeps_the_self_term():
    """mf.exact switches both the APJN mixing and the statistics' 1/N_tot self-term; from a
    generic input (p0 < q0) the self-term changes the statistics, so it shows."""
    exact = MeanField(VIT_B.a, VIT_B.m, n_tokens=4, exact=True)
    kernel = norm_kernel("derf", 1.0)
    with_self = propagate_statistics(kernel, exact, 1.0, 0.2, depth=50, self_term=True)
    without = propagate_statistics(kernel, exact, 1.0, 0.2, depth=50)
    log_j = end_to_end_log_apjn("derf", 1.0, exact, 1.0, 0.2, max_depth=50)
    np.testing.assert_allclose(log_j, forward_log_apjn(with_self, exact), rtol=1e-12)
    assert abs(log_j[-1] - forward_log_apjn(without, exact)[-1]) > 1e-3


def test_two_mode_closed_form_follows_the_map_from_any_start():
    """From a start (J, K) = (j0, k0) at rho = 1 the closed form equals the 2 x 2 map iterated
    by hand: (J, K) += a (s J + x K) / q, both times 1 + m / (2 (q + a)), q += a + m/2."""
    mf, q0, (j0, k0) = MeanField(VIT_B.a, VIT_B.m, n_tokens=4), 0.6, (0.7, 0.4)
    s, x = 1 / 4, 1.0
    q, j, k, by_hand = q0, j0, k0, [math.log(j0)]
    for _ in range(60):
        mixed = mf.a * (s * j + x * k) / q
        gain = 1 + mf.m / (2 * (q + mf.a))
        j, k, q = (j + mixed) * gain, (k + mixed) * gain, q + mf.a + mf.m / 2
        by_hand.append(math.log(j))
    closed = preln_two_mode_log_apjn(mf, q0, np.arange(61), j0=j0, k0=k0)
    np.testing.assert_allclose(closed, by_hand, rtol=1e-10, atol=1e-12)


def test_trajectory_susceptibilities_are_the_kernels_at_their_points():
    """chi_* are the norm kernel at the block input (q_l, p_l); chi_h_* and kappa'(rho_h) at the
    mid-block point q_h = q_l + a p~, p_h = p_l + a p~ (the authors' closure)."""
    kernel, mf = norm_kernel("derf", 1.2), MeanField(a=0.4, m=0.5, n_tokens=8)
    traj = propagate_statistics(kernel, mf, 1.0, 0.3, depth=6)
    for layer in range(6):
        k = kernel(traj.q[layer], traj.p[layer])
        kh = kernel(traj.q[layer] + mf.a * k.p_tilde, traj.p[layer] + mf.a * k.p_tilde)
        got = (traj.chi_q, traj.chi_p, traj.chi_h_q, traj.chi_h_p, traj.kappa_prime_h)
        expected = (k.chi_q, k.chi_p, kh.chi_q, kh.chi_p, relu_kappa_prime(kh.p_tilde / kh.q_tilde))
        for value, target in zip(got, expected, strict=True):
            assert value[layer] == pytest.approx(target, rel=1e-12)
    assert traj.depth == 6
