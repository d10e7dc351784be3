"""Study C model: the multiplicity forward pass equals the ordinary one on real sequences, and
the grid and its weights are what docs/counting.md says."""

import itertools
import math

import numpy as np
import pytest
import torch

from transformer_stability.counting.grid import balanced_weights, extreme_points, grid_points
from transformer_stability.counting.model import (
    ModelSpec,
    Params,
    grid_forward,
    layer_norm,
    sequence_forward,
)
from transformer_stability.counting.names import PLACEMENTS

D, L = 6, 7


def _random_params(spec: ModelSpec, runs: int, gen: torch.Generator) -> Params:
    def draw(*shape):
        return torch.randn(runs, *shape, generator=gen, dtype=torch.float64)

    extra = {"gamma": draw(D), "beta": draw(D)} if spec.learned else {}
    if spec.readout == "regression":
        extra |= {"u": draw(D), "b0": draw(1)}
    else:
        extra |= {"head_w": draw(spec.n_classes, D), "head_b": draw(spec.n_classes)}
    return Params(e_q=draw(D), e_a=draw(D), e_b=draw(D), **extra)


def _sequences(c: np.ndarray, m: np.ndarray, rng: np.random.Generator):
    """One random permutation of c a's and m b's per grid point, right-padded with a mask."""
    tokens = np.zeros((len(c), L), dtype=np.int64)
    mask = np.zeros((len(c), L), dtype=bool)
    for i, (ci, mi) in enumerate(zip(c, m, strict=True)):
        seq = rng.permutation(np.r_[np.zeros(ci, int), np.ones(mi, int)])
        tokens[i, : len(seq)] = seq
        tokens[i, len(seq) :] = rng.integers(0, 2, L - len(seq))  # padding content must not matter
        mask[i, : len(seq)] = True
    return torch.from_numpy(tokens), torch.from_numpy(mask)


@pytest.mark.parametrize(
    ("placement", "attention", "readout"),
    list(itertools.product(PLACEMENTS, ("softmax", "linear"), ("regression", "classification"))),
)
def test_multiplicity_forward_equals_sequence_forward(placement, attention, readout):
    spec = ModelSpec(placement, readout, D, L, attention)
    gen = torch.Generator().manual_seed(7)
    params = _random_params(spec, runs=3, gen=gen)
    c, m = grid_points(L)
    tokens, mask = _sequences(c, m, np.random.default_rng(3))
    runs = params.runs
    expected = sequence_forward(
        spec, params, tokens[None].expand(runs, -1, -1), mask[None].expand(runs, -1, -1)
    )
    got = grid_forward(spec, params, torch.from_numpy(c), torch.from_numpy(m))
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=1e-11, atol=1e-11)
    # a different permutation of the same multiset gives the same output (no positions)
    tokens2, _ = _sequences(c, m, np.random.default_rng(4))
    again = sequence_forward(
        spec, params, tokens2[None].expand(runs, -1, -1), mask[None].expand(runs, -1, -1)
    )
    torch.testing.assert_close(again, expected, rtol=1e-11, atol=1e-11)


def test_layer_norm_is_centred_with_norm_sqrt_d():
    x = torch.randn(5, D, dtype=torch.float64)
    y = layer_norm(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(5, dtype=torch.float64), atol=1e-14, rtol=0)
    torch.testing.assert_close(y.norm(dim=-1), torch.full((5,), math.sqrt(D), dtype=torch.float64))
    torch.testing.assert_close(layer_norm(3.0 * x + 2.0), y)  # scale and shift invariant


def test_grid_has_every_point_once_and_balanced_weights():
    c, m = grid_points(L)
    assert len(c) == (L + 1) * (L + 2) // 2
    assert len(set(zip(c.tolist(), m.tolist(), strict=True))) == len(c)
    assert (c + m).max() == L and c.min() == 0 and m.min() == 0
    w = balanced_weights(c, L)
    per_count = np.bincount(c, weights=w)
    np.testing.assert_allclose(per_count, np.full(L + 1, 1 / (L + 1)))
    ce, me = extreme_points(L)
    assert set(zip(ce.tolist(), me.tolist(), strict=True)) <= set(
        zip(c.tolist(), m.tolist(), strict=True)
    )
