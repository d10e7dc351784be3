"""Study N norms on batches and by definition: every function reduces over the last axis only,
the outlier inputs are exact in their format, and each measurement is the quantity its name
says, with every measured error below its bound."""

import pytest
import torch

from transformer_stability.numerics import norms
from transformer_stability.numerics.lowp import fl

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
