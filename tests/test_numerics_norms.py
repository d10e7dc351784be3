"""Study N norms on batches and by definition: every function reduces over the last axis only,
the outlier inputs are exact in their format, and each measurement is the quantity its name
says, with every measured error below its bound; the rigorous bounds in closed form on
hand-made rows, since the measured errors lie far below them and cannot pin their terms."""

import math

import pytest
import torch

from transformer_stability.numerics import norms
from transformer_stability.numerics.lowp import fl, gamma, operation_roundoff, pairwise_depth

NAMES = ("layernorm", "rmsnorm")


@pytest.mark.parametrize("name", NAMES)
def test_norms_reduce_over_the_last_axis_of_any_batch(name):
    x = norms.outlier_inputs(7, 40.0, samples=6, bits=7, seed=1)
    stacked = x.view(2, 3, 7)
    for f in norms.NORMS[name]:
        takes_bits = f.__name__.endswith(("_lowp", "_bound"))
        batched = f(stacked, 7) if takes_bits else f(stacked)
        flat = f(x, 7) if takes_bits else f(x)
        torch.testing.assert_close(batched, flat.view(2, 3, *flat.shape[1:]), rtol=0, atol=0)
        for row, want in zip(x, flat, strict=True):  # and each row alone
            one = f(row.unsqueeze(0), 7) if takes_bits else f(row.unsqueeze(0))
            torch.testing.assert_close(one[0], want, rtol=1e-14, atol=1e-15)


def test_outlier_inputs_are_exact_in_their_format_with_the_outlier_first():
    x = norms.outlier_inputs(16, 1e3, samples=400, bits=4, seed=2)
    assert x.shape == (400, 16) and x.dtype == torch.float64
    assert torch.equal(fl(x, 4), x)
    assert x[:, 0].mean().item() == pytest.approx(1e3, rel=0.01)
    bulk = x[:, 1:]
    assert bulk.mean().abs() < 0.05 and bulk.std().item() == pytest.approx(1.0, abs=0.05)
    assert torch.equal(norms.outlier_inputs(16, 1e3, 400, 4, seed=2), x)  # seeded


def _by_definition(x: torch.Tensor, name: str, bits: int) -> dict[str, torch.Tensor]:
    """The measurements one sample at a time, from their definitions (float64)."""
    exact, lowp, bound, jacobian, _ = norms.NORMS[name]
    rows = []
    for v in x:
        y, error, limit = exact(v), (lowp(v, bits) - exact(v)).abs(), bound(v, bits)
        j = torch.func.jacrev(exact)(v)
        sensitivity = j.abs() @ v.abs()
        spread = y[1:].std()
        rows.append(
            {
                "kappa_normwise": torch.linalg.matrix_norm(j, ord=2) * v.norm() / y.norm(),
                "kappa_comp_median": (sensitivity / y.abs())[1:].median(),
                "kappa_bulk": sensitivity[1:].max() / spread,
                "err_normwise": error.norm() / y.norm(),
                "bound_normwise": limit.norm() / y.norm(),
                "err_comp_median": (error / y.abs())[1:].median(),
                "bound_comp_median": (limit / y.abs())[1:].median(),
                "err_comp_max": (error / y.abs())[1:].max(),
                "bound_comp_max": (limit / y.abs())[1:].max(),
                "err_bulk": error[1:].max() / spread,
                "bound_bulk": limit[1:].max() / spread,
            }
        )
    return {key: torch.stack([row[key] for row in rows]) for key in rows[0]}


@pytest.mark.parametrize("name", NAMES)
def test_measurements_are_their_definitions_and_errors_stay_below_bounds(name):
    x = norms.outlier_inputs(9, 300.0, samples=5, bits=7, seed=3)
    found = norms.norm_measurements(x, name, 7)
    want = _by_definition(x, name, 7)
    assert list(found) == list(want)
    for key, value in want.items():
        torch.testing.assert_close(found[key], value, rtol=1e-9, atol=0, msg=key)
    for kind in ("normwise", "comp_median", "comp_max", "bulk"):
        assert (found[f"err_{kind}"] <= found[f"bound_{kind}"]).all(), kind


@pytest.mark.parametrize("u", [2.0**-5, 2.0**-8])
def test_division_error_is_attained_at_the_worst_corner(u):
    """n̂/σ̂ with |n̂ − n| ≤ e_n, |σ̂ − σ| ≤ e_σ, then rounded: the worst case is n̂ = n ± e_n away
    from 0, σ̂ = σ − e_σ and a rounding up, so the bound is that corner, attained."""
    for n, n_error, sigma, sigma_error in [
        (3.0, 0.5, 2.0, 0.25),
        (-0.4, 0.1, 0.7, 0.3),
        (5.0, 0.0, 0.9, 0.05),
    ]:
        args = [torch.tensor([v], dtype=torch.float64) for v in (n, n_error, sigma, sigma_error)]
        corner = (abs(n) + n_error) / (sigma - sigma_error) * (1 + u) - abs(n) / sigma
        assert norms._division_error(*args, u).item() == pytest.approx(corner, rel=1e-12)
    # σ̂ may vanish: no bound
    vanishing = [torch.tensor([v], dtype=torch.float64) for v in (1.0, 0.1, 0.5, 0.6)]
    assert norms._division_error(*vanishing, u).isinf().all()


@pytest.mark.parametrize("u", [2.0**-5, 2.0**-8])
def test_sqrt_error_in_closed_form_and_above_every_corner(u):
    """|√v̂ − √v| = |v̂ − v|/(√v̂ + √v) ≤ e_v/√v, then one rounding of √v̂ (relative u)."""
    for value, value_error in [(4.0, 1.0), (0.09, 0.01), (100.0, 0.5)]:
        bound = norms._sqrt_error(
            torch.tensor(value, dtype=torch.float64),
            torch.tensor(value_error, dtype=torch.float64),
            u,
        ).item()
        root = math.sqrt(value)
        assert bound == pytest.approx(value_error / root * (1 + u) + u * root, rel=1e-12)
        for moved in (value - value_error, value + value_error):
            for rounding in (1 - u, 1 + u):
                assert abs(math.sqrt(moved) * rounding - root) <= bound


@pytest.mark.parametrize("bits", [4, 7])
def test_rms_norm_error_bound_in_closed_form(bits):
    """Every step errs relatively: squares by u, the pairwise sum by γ_k (k = ⌈log₂ d⌉) of the
    rounded squares, the division by d by u, so the mean square by δ = s + u(1 + s) with
    s = u + γ_k(1 + u); its root by ρ = δ(1 + u) + u; and y_i = x_i/r̂ rounded by
    ρ(1 + u)/(1 − ρ) + u, relative to |y_i|, whatever the input."""
    u = operation_roundoff(bits)
    for row in (
        [3.0, -1.0, 1.0],
        [2.0, 2.0, -2.0, 0.5],
        [1.0, -4.0, 0.25, 3.0, 1.0, 1.0, -1.0, 2.0, 5.0],
    ):
        x = torch.tensor([row], dtype=torch.float64)
        k = math.ceil(math.log2(len(row)))
        s = u + k * u / (1 - k * u) * (1 + u)
        rho = (s + u * (1 + s)) * (1 + u) + u
        want = norms.rms_norm(x).abs() * (rho * (1 + u) / (1 - rho) + u)
        torch.testing.assert_close(norms.rms_norm_error_bound(x, bits), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("bits", [4, 7])
@pytest.mark.parametrize("d", [4, 8])
def test_layer_norm_error_bound_in_closed_form(bits, d):
    """Rows m + (a, −a, a, −a, ...), |m| < a: Σ|x| = d·a and every centred value is ±a, σ = a.
    The mean errs by e_μ = γa + u(|m| + γa), each centred value by c = e_μ + u(a + e_μ), the
    variance by c(2a + c) + (u + γ)(a + c)²(1 + u) (squares, their rounding, the sum), one more
    u for the division by d, σ by e_σ = e_v(1 + u)/a + ua, and y = ±1 by
    ((c + e_σ)/(a − e_σ))(1 + u) + u."""
    u = operation_roundoff(bits)
    g = gamma(pairwise_depth(d), u)
    for a, m in ((2.0, 0.5), (1.0, -0.25), (0.5, 0.0)):
        x = m + a * torch.tensor([[1.0, -1.0] * (d // 2)], dtype=torch.float64)
        mean_error = g * a + u * (abs(m) + g * a)
        c = mean_error + u * (a + mean_error)
        variance_error = c * (2 * a + c) + (u + g) * (a + c) ** 2 * (1 + u)
        variance_error += u * (a**2 + variance_error)
        sigma_error = variance_error * (1 + u) / a + u * a
        want = ((c + sigma_error) / (a - sigma_error)) * (1 + u) + u
        torch.testing.assert_close(
            norms.layer_norm_error_bound(x, bits), torch.full_like(x, want), rtol=1e-12, atol=0
        )


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_jacobians_and_conditions_keep_the_inputs_dtype_and_device(dtype):
    """The identity and the ones they build follow the input (the meta device checks it without
    computing: a tensor made on the CPU would not mix with it)."""
    x = torch.empty(2, 5, dtype=dtype, device="meta")
    for f in (
        norms.layer_norm_jacobian,
        norms.rms_norm_jacobian,
        norms.layer_norm_condition,
        norms.rms_norm_condition,
    ):
        out = f(x)
        assert (out.dtype, out.device.type, out.shape[0]) == (dtype, "meta", 2), f.__name__


def test_outlier_inputs_are_float64_normals_with_the_outlier_added():
    """At 52 bits the rounding keeps float64's draws, finer than float32's; the outlier
    coordinate is M + z_0, spread like the others."""
    x = norms.outlier_inputs(8, 10.0, samples=400, bits=52, seed=4)
    assert (x.float().double() != x).float().mean() > 0.9
    assert (x[:, 0] - 10.0).std().item() == pytest.approx(1.0, abs=0.15)
