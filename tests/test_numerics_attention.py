"""Study N attention Lipschitz constants: the exact ∞-norm row sums against the full Jacobian,
the bounds never below the exact norms and in closed form on hand-made weights, the worst-case
ascent inside the ball and step by step, and the random weights' scale and seed."""

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


def test_random_weights_are_the_generators_draw():
    first = attention.AttentionWeights.random(8, torch.Generator().manual_seed(5))
    again = attention.AttentionWeights.random(8, torch.Generator().manual_seed(5))
    other = attention.AttentionWeights.random(8, torch.Generator().manual_seed(6))
    assert torch.equal(first.value, again.value) and torch.equal(first.output, again.output)
    assert not torch.equal(first.value, other.value)


def test_input_bounds_when_every_token_attends_to_the_same_one():
    """Two parallel tokens of sizes a > b in d = 3: both rows peak at token 0, P_t0 =
    σ(kq·x_t(a − b)/√d), so the smallest row maximum is P_10, not a column's maximum
    (1 − P_10); the largest token is a in both norms, not a column's size √(a² + b²)."""
    dim, a, b, kq = 3, 0.9, 0.4, 3.0
    w = _scaled_identity(dim, kq=kq, ov=2.0)
    x = torch.tensor([[a, 0.0, 0.0], [b, 0.0, 0.0]], dtype=F64)
    p_max = 1 / (1 + math.exp(-kq * b * (a - b) / math.sqrt(dim)))
    omega_kq = 2 * kq * math.sqrt(dim)
    assert attention.lipschitz_bound_inf(w, x) == pytest.approx(
        2 * (1 + 2 * (1 - p_max**2) * omega_kq * a**2), rel=1e-12
    )
    logit = 2 * (1 - p_max**2) * math.sqrt(2 * 3) * kq * a**2 / math.sqrt(dim)
    assert attention.lipschitz_bound_frobenius(w, x) == pytest.approx(
        2 * (math.sqrt(2) + logit), rel=1e-12
    )


def test_exact_row_sums_where_some_key_directions_are_flat():
    """W_Q = W_K = I: g_t = x_t/√d vanishes in the coordinates where x_t does, so a token mixes
    breakpoints of both kinds (flat ones add |M_ij| whatever c is)."""
    generator = torch.Generator().manual_seed(8)
    random = attention.AttentionWeights.random(4, generator)
    eye = torch.eye(4, dtype=F64)
    weights = attention.AttentionWeights(eye, 2 * eye, random.value, random.output)
    x = 2 * torch.rand(6, 4, generator=generator, dtype=F64) - 1
    x[1, :2] = 0.0
    x[3, 1:] = 0.0
    x[4, 2] = 0.0
    full = jacobian(weights, x).reshape(x.numel(), x.numel())
    rows = full.abs().sum(dim=1).reshape(x.shape)
    torch.testing.assert_close(
        attention.jacobian_row_sums(weights, x, torch.arange(6)), rows, rtol=1e-12, atol=1e-13
    )


def _adam_ascent(weights, x: torch.Tensor, radius: float, steps: int, rate: float):
    """The projected ascent by hand: Adam (β = 0.9, 0.999, ε = 1e-8) on −(token 0's largest row
    sum), the k-th step rate·R·(1 − k/steps), then a clamp to the box. (values, points)."""
    first = torch.zeros(1, dtype=torch.long)
    m = torch.zeros_like(x)
    v = torch.zeros_like(x)
    points, values = [x], []
    for k in range(steps + 1):
        point = points[-1].clone().requires_grad_(True)
        value = attention.jacobian_row_sums(weights, point, first).max()
        values.append(value.item())
        if k == steps:
            break
        (grad,) = torch.autograd.grad(-value, point)
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad**2
        moment = m / (1 - 0.9 ** (k + 1))
        scale = (v / (1 - 0.999 ** (k + 1))).sqrt() + 1e-8
        update = rate * radius * (1 - k / steps) * moment / scale
        points.append((points[-1] - update).clamp(-radius, radius))
    return values, points


@pytest.mark.parametrize("steps", [1, 3])
def test_worst_case_search_is_projected_adam_with_a_linearly_decaying_step(steps):
    radius, rate = 0.8, 0.2
    weights, x, _ = _tiny_attention(n=5, d=3, seed=2, radius=radius, sharpen=2.0)
    values, points = _adam_ascent(weights, x, radius, steps, rate)
    assert values[-1] == max(values)  # the ascent climbs: its last point is the best
    found, where = attention.worst_case_search(weights, x, radius, steps, rate)
    assert found == pytest.approx(values[-1], rel=1e-12)
    torch.testing.assert_close(where, points[-1], rtol=1e-12, atol=1e-14)
