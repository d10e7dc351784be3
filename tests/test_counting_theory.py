"""Study C theory: the reduced LPs reproduce the closed forms and walls of docs/counting.md,
and every explicit construction counts exactly on the whole grid."""

import math

import numpy as np
import pytest
import torch

from transformer_stability.counting.constructions import construct, grid_errors
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.model import ModelSpec, grid_forward
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.theory import (
    error_exponent,
    fitted_exponent,
    lower_bound,
    minimal_gain,
    prenorm_max_length,
)


def test_no_norm_gain_lower_bound_is_floor_of_quarter_square():
    """D_min = floor((L + 1)^2 / 4) for every L = 5..64, attained at alpha L^2 -> 4."""
    for length in range(5, 65):
        optimum = minimal_gain(length)
        assert optimum.gain == pytest.approx(math.floor((length + 1) ** 2 / 4), rel=1e-6), length
    assert minimal_gain(64).alpha * 64**2 == pytest.approx(4, rel=0.05)


@pytest.mark.parametrize(("score_range", "expected"), [(4, 15), (6, 41), (8, 110)])
def test_prenorm_wall_matches_the_spec_table(score_range, expected):
    assert prenorm_max_length(score_range) == expected


def test_linear_attention_construction_is_exact_at_4096():
    spec = ModelSpec("none", "regression", 8, 4096, attention="linear")
    found = construct(spec)
    worst, exact = grid_errors(found, chunk=1 << 21)
    assert exact and worst <= 1e-9
    assert found.max_norm == pytest.approx(math.sqrt(2), rel=1e-6)  # d = 8: exactly sqrt 2


@pytest.mark.parametrize("readout", ["regression", "classification"])
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("length", [5, 24])
def test_every_construction_counts_exactly_on_the_full_grid(placement, readout, length):
    spec = ModelSpec(placement, readout, 8, length)
    found = construct(spec)
    assert found is not None
    c, m = torch_grid(length)
    out = grid_forward(spec, found.params, c, m)[0]
    predicted = out.round() if readout == "regression" else out.argmax(-1).to(out.dtype)
    assert torch.equal(predicted, c.to(out.dtype))
    assert grid_errors(found)[1]
    if readout == "classification":
        assert found.max_norm == pytest.approx(1.0)  # bounded, even unit, norms
    else:  # upper bound above the lower bound
        assert found.max_norm >= lower_bound(placement, length, 8) * (1 - 1e-6)


def test_a_broken_construction_is_caught_by_the_grid_check():
    found = construct(ModelSpec("post_learned", "regression", 8, 16))
    found.params.u.mul_(1.01)
    assert not grid_errors(found)[1]


def test_bare_prenorm_has_no_construction_past_its_wall():
    wall = prenorm_max_length(2 * math.sqrt(8))
    assert math.isinf(lower_bound("pre_bare", wall + 1, 8))
    assert construct(ModelSpec("pre_bare", "regression", 8, wall + 1)) is None


def test_postnorm_bounds_follow_the_spec_constants():
    """K_min ~ L^{3/2}/(4 sqrt2): B ~ L^{3/2}/(4 sqrt(2d)) bare, L^{3/4}/(2^{5/4}(d-1)^{1/4})."""
    length, d = 512, 8
    assert lower_bound("post_bare", length, d) == pytest.approx(
        length**1.5 / (4 * math.sqrt(2 * d)), rel=0.03
    )
    assert lower_bound("post_learned", length, d) == pytest.approx(
        length**0.75 / (2**1.25 * (d - 1) ** 0.25), rel=0.03
    )


@pytest.mark.parametrize("placement", ["none", "post_bare", "post_learned"])
def test_lower_bound_diverges_as_the_allowed_error_vanishes_at_the_predicted_rate(placement):
    """B(e) ~ e^-k at fixed L: the local exponent between e = 0.05 and 0.025 at L = 64."""
    low, high = (lower_bound(placement, 64, 8, error) for error in (0.05, 0.025))
    local = math.log(high / low) / math.log(2)
    assert local == pytest.approx(error_exponent(placement), rel=0.03)


def test_fitted_exponent_recovers_a_power_law_and_skips_inf():
    lengths = np.array([8, 16, 32, 64, 128])
    values = 0.3 * lengths**0.75
    values[-1] = math.inf
    assert fitted_exponent(lengths, values, 3) == pytest.approx(0.75)
