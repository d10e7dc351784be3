"""Study N attention Lipschitz constants: the exact ∞-norm row sums against the full Jacobian,
the bounds never below the exact norms and in closed form on hand-made weights, the worst-case
ascent inside the ball, and the random weights' scale."""

import math

import pytest
import torch

from transformer_stability.numerics import attention

F64 = torch.float64


def jacobian(f, x: torch.Tensor) -> torch.Tensor:
    """The full Jacobian by reverse mode, one output entry at a time: on these sizes it starts
    in a tenth of the time torch.func's jacrev needs on its first call, which every mutant's
    fresh test process would pay again."""
    return torch.autograd.functional.jacobian(f, x)


def _tiny_attention(n: int, d: int, seed: int, radius: float = 1.0, sharpen: float = 1.0):
    generator = torch.Generator().manual_seed(seed)
    weights = attention.AttentionWeights.random(d, generator)
    weights = attention.AttentionWeights(
        sharpen * weights.query, weights.key, weights.value, weights.output
    )
    x = radius * (2 * torch.rand(n, d, generator=generator, dtype=torch.float64) - 1)
    return weights, x, generator


@pytest.mark.parametrize("seed", range(4))
def test_exact_row_sums_match_the_full_jacobian(seed):
    weights, x, _ = _tiny_attention(n=7, d=4, seed=seed, radius=2.0, sharpen=3.0)
    x[2] = 0.0  # a token with q = 0: every breakpoint weight g_tj vanishes
    full = jacobian(weights, x).reshape(x.numel(), x.numel())
    rows = full.abs().sum(dim=1).reshape(x.shape)
    torch.testing.assert_close(
        attention.jacobian_row_sums(weights, x, torch.arange(7)), rows, rtol=1e-12, atol=1e-13
    )
    assert attention.exact_inf(weights, x, chunk=3) == pytest.approx(rows.max().item(), 1e-12)


def test_power_iteration_converges_to_the_spectral_norm_from_below():
    weights, x, generator = _tiny_attention(n=7, d=4, seed=0, radius=2.0, sharpen=3.0)
    exact_two = torch.linalg.matrix_norm(jacobian(weights, x).reshape(28, 28), ord=2).item()
    first = attention.estimate_frobenius(weights, x, generator, iterations=1)
    assert first < 0.99 * exact_two  # one step from a random vector: well below
    converged = attention.estimate_frobenius(weights, x, generator, iterations=150)
    assert converged == pytest.approx(exact_two, rel=1e-6)


def test_exact_row_sums_have_the_gradient_of_finite_differences():
    weights, x, _ = _tiny_attention(n=5, d=3, seed=11, radius=1.0, sharpen=2.0)
    first = torch.zeros(1, dtype=torch.long)
    x.requires_grad_(True)
    (grad,) = torch.autograd.grad(attention.jacobian_row_sums(weights, x, first).sum(), x)
    with torch.no_grad():
        step = 1e-6 * torch.randn(
            x.shape, generator=torch.Generator().manual_seed(0), dtype=x.dtype
        )
        ahead = attention.jacobian_row_sums(weights, x + step, first).sum()
        behind = attention.jacobian_row_sums(weights, x - step, first).sum()
    assert ((ahead - behind) / 2).item() == pytest.approx((grad * step).sum().item(), rel=1e-5)


@pytest.mark.parametrize("n", [2, 8, 40])
@pytest.mark.parametrize("sharpen", [1.0, 6.0])
def test_lipschitz_bounds_are_never_below_the_exact_norms(n, sharpen):
    for seed in range(3):
        weights, x, _ = _tiny_attention(n=n, d=4, seed=seed, radius=1.5, sharpen=sharpen)
        full = jacobian(weights, x).reshape(x.numel(), x.numel())
        assert full.abs().sum(dim=1).max() <= attention.lipschitz_bound_inf(weights, x)
        assert torch.linalg.matrix_norm(full, ord=2) <= attention.lipschitz_bound_frobenius(
            weights, x
        )


def test_worst_case_search_climbs_to_exact_row_sums_inside_the_ball():
    climbed, radius = 0, 1.5
    for seed in range(4):
        weights, x, _ = _tiny_attention(n=5, d=3, seed=seed, radius=radius, sharpen=2.0)
        found, where = attention.worst_case_search(weights, x, radius, steps=40, rate=0.1)
        assert where.abs().max() <= radius  # projected onto the ball
        full = jacobian(weights, where).reshape(x.numel(), x.numel())
        # an exact row sum of output token 0 at the input returned
        assert found == pytest.approx(full.abs().sum(dim=1)[:3].max().item(), rel=1e-12)
        assert found <= attention.ball_bound_inf(weights, radius)
        climbed += found > 2 * attention.exact_inf(weights, x)
    assert climbed >= 3  # the ascent finds far larger constants than the random start
    assert attention.worst_case_search(weights, x, radius, steps=0, rate=0.1)[0] == pytest.approx(
        attention.jacobian_row_sums(weights, x, torch.zeros(1, dtype=torch.long)).max().item()
    )


def test_random_weights_have_entries_of_variance_one_over_d():
    dim = 64
    weights = attention.AttentionWeights.random(dim, torch.Generator().manual_seed(0))
    entries = torch.stack([weights.query, weights.key, weights.value, weights.output])
    assert entries.dtype == F64 and entries.shape == (4, dim, dim)
    assert entries.var().item() * dim == pytest.approx(1.0, abs=0.03)  # 16384 draws
    assert not torch.equal(weights.query, weights.key)  # four independent draws


def _scaled_identity(dim: int, kq: float, ov: float) -> attention.AttentionWeights:
    """W_Q = W_K = √kq·I, W_V = ov·I, W_O = I: ω_OV = ov, every ℓ1/ℓ2 norm known."""
    eye = torch.eye(dim, dtype=F64)
    return attention.AttentionWeights(math.sqrt(kq) * eye, math.sqrt(kq) * eye, ov * eye, eye)


def test_the_bounds_in_closed_form_on_scaled_identities():
    dim, radius = 4, 0.5
    w = _scaled_identity(dim, kq=3.0, ov=2.0)
    # ω_KQ = 2/√d·‖|W_K|1‖₂‖|W_Q|1‖₂ = 2/√d·(√3·√d)² = 6√d; ω_OV = 2
    omega_kq = 6 * math.sqrt(dim)
    assert attention.ball_bound_inf(w, radius) == pytest.approx(
        2 * (1 + 2 * omega_kq * radius**2), rel=1e-12
    )
    # ‖W_OW_V‖₂ = 2, ‖W_QᵀW_K‖₂ = 3, R₂ = √d·R at n tokens
    for n in (1, 5):
        logit = 2 * math.sqrt(2 * (n + 1)) * 3 * dim * radius**2 / math.sqrt(dim)
        assert attention.ball_bound_frobenius(w, n, radius) == pytest.approx(
            2 * (math.sqrt(n) + logit), rel=1e-12
        )


def test_input_bounds_use_the_smallest_row_maximum_and_the_input_size():
    # two orthogonal tokens of size a: each attends to itself with p = σ(3a²/√d)
    dim, a = 2, 0.8
    w = _scaled_identity(dim, kq=3.0, ov=2.0)
    x = torch.tensor([[a, 0.0], [0.0, 0.5 * a]], dtype=F64)
    own = [1 / (1 + math.exp(-3 * s**2 / math.sqrt(dim))) for s in (a, 0.5 * a)]
    p_max = min(own)
    omega_kq = 6 * math.sqrt(dim)
    expected = 2 * (1 + 2 * (1 - p_max**2) * omega_kq * a**2)
    assert attention.lipschitz_bound_inf(w, x) == pytest.approx(expected, rel=1e-12)
    logit = 2 * (1 - p_max**2) * math.sqrt(2 * 3) * 3 * a**2 / math.sqrt(dim)
    assert attention.lipschitz_bound_frobenius(w, x) == pytest.approx(
        2 * (math.sqrt(2) + logit), rel=1e-12
    )
