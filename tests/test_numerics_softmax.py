"""Study N softmax helpers on batches and in closed form: shapes that reach the tables (one value
per row), and the perturbation gain of a two-entry row, where softmax is a sigmoid."""

import math

import pytest
import torch

from transformer_stability.numerics import softmax
from transformer_stability.numerics.lowp import Format


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Four rows of 6 logits with different sinks, so no row's value can stand for another's."""
    generator = torch.Generator().manual_seed(seed)
    rows = [softmax.sink_logits(6, q, 1.0, 2.0, 1, generator)[0] for q in (0.3, 0.6, 0.9, 0.99)]
    z = torch.stack(rows)
    return z, torch.softmax(z, -1)


def test_jacobian_helpers_work_row_by_row_on_a_batch():
    z, p = _batch(1)
    exact = torch.stack([torch.diag(row) - torch.outer(row, row) for row in p])
    torch.testing.assert_close(softmax.softmax_jacobian(p), exact, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(
        softmax.jacobian_inf_norm(p), torch.linalg.matrix_norm(exact, ord=math.inf)
    )
    torch.testing.assert_close(softmax.jacobian_abs_sum(p), exact.abs().sum((-2, -1)))


@pytest.mark.parametrize("shifted", [False, True])
def test_relative_condition_works_row_by_row_on_a_batch(shifted):
    z, p = _batch(2)
    batched = softmax.relative_condition(z, p, shifted)
    assert batched.shape == z.shape
    for row_z, row_p, row in zip(z, p, batched, strict=True):
        w = row_z - row_z.max() if shifted else row_z
        torch.testing.assert_close(row, w.abs() + (row_p * w.abs()).sum())


def test_perturbation_gain_of_a_two_entry_row_is_a_sigmoid_difference():
    # p_1 = σ(d), d = z_1 − z_2; δ = η(s_1, s_2), s = ±1, moves d by 0 or ±2η, so the 1-norm
    # change is 0 or 2|σ(d ± 2η) − σ(d)|
    eta, d = 1e-3, 1.5
    z = torch.tensor([[d, 0.0]] * 64, dtype=torch.float64)
    gain = softmax.perturbation_gain(z, eta, torch.Generator().manual_seed(3))
    sigma = torch.sigmoid(torch.tensor(d, dtype=torch.float64))
    moved = [
        2 * (torch.sigmoid(torch.tensor(d + t, dtype=torch.float64)) - sigma).abs() / eta
        for t in (2 * eta, -2 * eta)
    ]
    closest = torch.stack([(gain - m).abs() / m for m in moved]).amin(0)
    unmoved = gain < 1e-9
    assert unmoved.any() and (~unmoved).any()  # both sign patterns were drawn
    assert (closest[~unmoved] < 1e-9).all()
    again = softmax.perturbation_gain(z, eta, torch.Generator().manual_seed(3))
    torch.testing.assert_close(again, gain, rtol=0, atol=0)  # the draw is the generator's


def test_perturbation_bound_holds_for_large_perturbations_and_is_the_jacobian_bound_at_zero():
    generator = torch.Generator().manual_seed(4)
    z = softmax.sink_logits(2, 0.999, 1.0, 0.0, 1, generator)
    p = torch.softmax(z, -1)
    torch.testing.assert_close(softmax.perturbation_bound(p, 0.0), 2 * (1 - p.amax(-1) ** 2))
    # moving d by −2η lowers p_max from σ(d) to σ(d − 2η) ≥ σ(d)e^{−2η}
    eta = 0.5
    d = z[0, 0] - z[0, 1]
    gain = 2 * (torch.sigmoid(d) - torch.sigmoid(d - 2 * eta)) / eta
    bound = softmax.perturbation_bound(p, eta)
    assert gain <= 2 * (1 - torch.sigmoid(d - 2 * eta) ** 2) <= bound
    assert bound <= 2 * (1 - (torch.sigmoid(d) * math.exp(-2 * eta)) ** 2) * (1 + 1e-12)


@pytest.mark.parametrize("name", ["m7", "fp16"])
def test_error_bound_and_perturbations_reduce_over_the_last_axis_of_any_batch(name):
    """Attention holds (batch, heads, query, key) rows: a 4-D stack gives each row what the
    same row gives in a 2-D batch."""
    z = torch.stack([_batch(seed)[0] for seed in range(6)]).view(2, 3, 4, 6) * 3.0
    flat = z.reshape(-1, 6)
    fmt = Format.parse(name)
    for shifted in (False, True):
        batched = softmax.softmax_error_bound(z, fmt, shifted)
        want = softmax.softmax_error_bound(flat, fmt, shifted).view_as(z)
        torch.testing.assert_close(batched, want, rtol=1e-12, atol=0)
    gain = softmax.perturbation_gain(z, 1e-3, torch.Generator().manual_seed(6))
    want = softmax.perturbation_gain(flat, 1e-3, torch.Generator().manual_seed(6))
    torch.testing.assert_close(gain, want.view(2, 3, 4), rtol=1e-12, atol=0)
    p = torch.softmax(z, -1)
    torch.testing.assert_close(
        softmax.perturbation_bound(p, 0.1),
        softmax.perturbation_bound(p.reshape(-1, 6), 0.1).view(2, 3, 4),
        rtol=0,
        atol=0,
    )
