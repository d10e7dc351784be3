"""Study C constructions: every explicit construction counts exactly on the whole grid, with
norms above the theory's lower bound, and the grid check catches a broken one."""

import math

import pytest
import torch

from transformer_stability.counting.constructions import construct, grid_errors
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.model import ModelSpec, grid_forward
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.theory import lower_bound, prenorm_max_length


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
    assert construct(ModelSpec("pre_bare", "regression", 8, wall + 1)) is None
