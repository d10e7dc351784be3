"""Study C constructions: every explicit construction counts exactly on the whole grid, with
norms above the theory's lower bound, and the grid check catches a broken one."""

import math

import numpy as np
import pytest
import torch

from transformer_stability.counting.constructions import (
    Construction,
    axis_frame,
    construct,
    grid_errors,
    line_directions,
    mean_zero_frame,
)
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.model import ModelSpec, grid_forward, grid_representation
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.theory import (
    HALF,
    error_exponent,
    gain_for_alpha,
    lower_bound,
    prenorm_max_length,
)


def _built(placement: str, readout: str = "regression", length: int = 16) -> Construction:
    """The default-margin construction at d = 8. Built afresh in every test, never cached
    across tests: mutmut runs, for each mutant, only the tests that called the mutated
    function while it collected its stats, and a cache hit would hide those calls."""
    return construct(ModelSpec(placement, readout, 8, length))


@pytest.mark.slow  # the construction's properties at L = 40 are a fast test below
def test_linear_attention_construction_is_exact_at_4096():
    spec = ModelSpec("none", "regression", 8, 4096, attention="linear")
    found = construct(spec)
    worst, exact = grid_errors(found, chunk=1 << 21)
    assert exact and worst <= 1e-9
    assert found.max_norm == pytest.approx(math.sqrt(2), rel=1e-6)  # d = 8: exactly sqrt 2


@pytest.mark.slow
@pytest.mark.parametrize("readout", ["regression", "classification"])
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("length", [5, 16])
def test_every_construction_counts_exactly_on_the_full_grid(placement, readout, length):
    found = _built(placement, readout, length)
    assert found is not None
    c, m = torch_grid(length)
    out = grid_forward(found.spec, found.params, c, m)[0]
    predicted = out.round() if readout == "regression" else out.argmax(-1).to(out.dtype)
    assert torch.equal(predicted, c.to(out.dtype))
    assert grid_errors(found)[1]
    if readout == "classification":
        assert found.max_norm == pytest.approx(1.0)  # bounded, even unit, norms
    else:  # upper bound above the lower bound
        assert found.max_norm >= lower_bound(placement, length, 8) * (1 - 1e-6)


def test_a_broken_construction_is_caught_by_the_grid_check():
    original = _built("post_learned")
    found = Construction(original.spec, original.params.map(torch.clone))
    found.params.u.mul_(1.01)
    assert not grid_errors(found)[1]


def test_bare_prenorm_has_no_construction_past_its_wall():
    wall = prenorm_max_length(2 * math.sqrt(8))
    assert construct(ModelSpec("pre_bare", "regression", 8, wall + 1)) is None


@pytest.mark.parametrize("d", [4, 8, 13])
def test_frames_are_orthonormal_mean_zero_pairs(d):
    """LayerNorm keeps mean-zero directions (up to sqrt d); the axis frame's g1 is the mean-zero
    direction closest to e_1, so it reads e_1 with gain sqrt((d - 1) / d)."""
    for frame in (mean_zero_frame(d), axis_frame(d)):
        g = np.stack(frame)
        np.testing.assert_allclose(g @ g.T, np.eye(2), atol=1e-12)
        np.testing.assert_allclose(g.sum(1), 0.0, atol=1e-12)
    g1 = axis_frame(d)[0]
    assert g1[0] == pytest.approx(math.sqrt((d - 1) / d))
    np.testing.assert_allclose(g1[1:], g1[1])
    g1, g2 = mean_zero_frame(d)
    assert not (np.abs(g1) * np.abs(g2)).any()  # disjoint supports


def test_the_mean_zero_frame_needs_four_dimensions():
    with pytest.raises(ValueError, match="d >= 4"):
        mean_zero_frame(3)


@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_grid_errors_equal_the_forward_pass_in_any_chunking(readout):
    spec = ModelSpec("pre_learned", readout, 8, 12)
    found = construct(spec)
    c, m = torch_grid(12)
    out = grid_forward(spec, found.params, c, m)[0]
    if readout == "regression":
        expected = float((out - c).abs().max())
    else:
        found.params.head_w[0, [3, 4]] = found.params.head_w[0, [4, 3]]  # counts 3, 4 swapped
        expected = 1.0
    for chunk in (7, 50, 1 << 18):
        worst, exact = grid_errors(found, chunk=chunk)
        assert worst == pytest.approx(expected, rel=1e-12)
        assert exact == (readout == "regression")


@pytest.mark.parametrize("tau", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("q", [0.25, 1.0])
@pytest.mark.parametrize("target", [-0.3, -0.05, -1e-6, 1e-3, 0.7, 40.0])
def test_the_offset_solves_its_equation_on_the_monotone_branch(q, tau, target):
    """x with exp(q (x - q) / tau) (q + x) = target: beyond -q for a positive target (the
    branch where the left side grows from 0), in [-q - tau / q, -q] for a negative one; None
    where a negative target lies below the left side's minimum, -tau / q exp(-2 q^2 / tau - 1)."""
    from transformer_stability.counting.constructions import _solve_offset

    x = _solve_offset(q, target, tau)
    lowest = -tau / q * math.exp(-2 * q**2 / tau - 1)
    if target < lowest:
        assert x is None
        return
    assert math.exp(q * (x - q) / tau) * (q + x) == pytest.approx(target, rel=1e-12, abs=1e-15)
    if target > 0:
        assert x > -q
    else:
        assert -q - tau / q <= x <= -q


@pytest.mark.parametrize("wrong", [0, 5, -1], ids=["first", "early", "last"])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 18])
def test_grid_errors_see_a_miscount_at_any_grid_point_in_any_chunk(monkeypatch, wrong, chunk):
    """One grid point counted wrong (by 1, regression) is found wherever it lies: the first
    point, one in an early chunk, the last; the other points are exact."""
    from transformer_stability.counting import constructions

    found = construct(ModelSpec("pre_learned", "regression", 8, 12))
    c_all, m_all = torch_grid(12)
    index = wrong % len(c_all)

    def counts(spec, params, c, m):
        hit = (c == c_all[index]) & (m == m_all[index])
        return (c.to(torch.float64) + hit.to(torch.float64),)

    monkeypatch.setattr(constructions, "grid_forward", counts)
    assert grid_errors(found, chunk=chunk) == (1.0, False)


@pytest.mark.parametrize(("d", "norm"), [(8, math.sqrt(2)), (16, None), (256, None)])
def test_linear_attention_construction_balances_its_bias_and_ignores_m(d, norm):
    """Smallest B with |b0| <= B: e_Q and u have norm B, |b0| = B, e_b = 0; the output is c
    exactly, whatever m."""
    found = construct(ModelSpec("none", "regression", d, 40, attention="linear"))
    p = found.params
    bound = found.max_norm
    for vector in (p.e_q, p.u):
        assert float(vector.norm()) == pytest.approx(bound, rel=1e-9)
    assert float(p.b0.abs()) == pytest.approx(bound, rel=1e-9)
    assert float(p.e_a.norm()) <= bound and not p.e_b.any()
    c, m = torch_grid(40)
    out = grid_forward(found.spec, p, c, m)[0]
    torch.testing.assert_close(out, c.to(out.dtype), rtol=0, atol=1e-9)
    if norm is not None:
        assert bound == pytest.approx(norm, rel=1e-9)


def test_linear_attention_is_built_for_the_no_norm_placement_only():
    with pytest.raises(ValueError, match="placement 'none'"):
        construct(ModelSpec("post_bare", "regression", 8, 8, attention="linear"))


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_b_tokens_point_away_from_the_query(placement):
    """e_b = -e_Q direction in every regression construction (b tokens score lowest; post-norm:
    the output line does not depend on m); without a norm e_b is grown up to the largest norm,
    which only shrinks the b tokens' weight."""
    found = _built(placement)
    e_q, e_b = found.params.e_q[0], found.params.e_b[0]
    cosine = float(e_q @ e_b / (e_q.norm() * e_b.norm()))
    assert cosine == pytest.approx(-1.0, abs=1e-12)
    if placement == "none":
        assert float(e_b.norm()) == pytest.approx(found.max_norm, rel=1e-12)
    else:
        torch.testing.assert_close(e_b, -e_q, rtol=0, atol=1e-15)


def test_line_directions_are_unit_vectors_along_the_line():
    directions = line_directions(5, 1.5, 2.0)
    points = np.c_[np.arange(6) - 1.5, np.full(6, 2.0)]
    np.testing.assert_allclose(directions * np.hypot(*points.T)[:, None], points)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_regression_construction_keeps_its_margin(placement):
    """The read-out LPs are solved on exact constraints with the band 1/2 - margin: the whole
    grid stays within it, not only within the rounding threshold."""
    assert grid_errors(_built(placement))[0] <= 0.48 + 1e-9  # default margin 0.02


@pytest.mark.parametrize("length", [5, 12])
def test_no_norm_construction_pays_sqrt_2_over_the_bound(length):
    """With u orthogonal to e_Q the gain is D = |u| |e_a| = B^2 where the bound allows
    D <= 2 B^2; at margin 0 the construction is exactly sqrt 2 above the lower bound."""
    found = construct(ModelSpec("none", "regression", 8, length), margin=0.0)
    assert found.max_norm == pytest.approx(math.sqrt(2) * lower_bound("none", length, 8), rel=1e-6)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_classification_heads_have_one_unit_row_per_count(placement):
    """L + 1 rows, the largest (with its bias) of norm 1; without pre-norm row k is the unit
    direction of the output at (k, 0), with no bias (the nearest-direction head)."""
    spec = ModelSpec(placement, "classification", 8, 9)
    p = construct(spec).params
    rows = torch.cat([p.head_w[0], p.head_b[0][:, None]], 1)
    assert rows.shape == (10, 9)
    assert (p.gamma is None) == (p.beta is None) == (not spec.learned)  # norms' own parameters
    assert float(rows.norm(dim=1).max()) == pytest.approx(1.0)
    if not spec.pre:
        c = torch.arange(10)
        rep = grid_representation(spec, p, c, torch.zeros_like(c))[0]
        torch.testing.assert_close(p.head_w[0], rep / rep.norm(dim=1, keepdim=True))
        assert not p.head_b.any()


@pytest.mark.parametrize("length", [2, 3, 12, prenorm_max_length(2 * math.sqrt(8))])
def test_bare_prenorm_construction_is_the_best_of_its_family(length):
    """Unit e_Q, e_a, e_b; N(e_a) at angle theta to N(e_Q) sets the score ratio alpha =
    exp(d (cos theta - 1) / tau) and reads the gain D = |u| sqrt(d) sin theta, so the family
    costs max(1, D(alpha) / (sqrt(d) sin theta)) with D the m = 0 band's gain (the b tokens do
    not bind at d = 8). At margin 0 the construction is no worse than any member on a grid of
    cos theta (up to the wall, where alpha -> e^{-S}), and, as D >= D_min and sin theta <= 1,
    at least twice the lower bound."""
    d = 8
    found = construct(ModelSpec("pre_bare", "regression", d, length), margin=0.0)
    cosines = np.linspace(-1, 1, 201)[1:-1]
    family = [
        gain_for_alpha(math.exp(d * (cos - 1) / math.sqrt(d)), length)
        / (math.sqrt(d) * math.sqrt(1 - cos**2))
        for cos in cosines
    ]
    assert found.max_norm <= max(min(family), 1.0) * (1 + 1e-9)
    assert found.max_norm >= 2 * lower_bound("pre_bare", length, d) * (1 - 1e-9)


@pytest.mark.parametrize("length", [5, 16])
def test_learned_prenorm_pays_at_least_two_to_the_three_quarters(length):
    """The gain D = |u| sqrt(d) gamma_v with |gamma| >= sqrt(2) gamma_v (g2 has two entries):
    B >= max(sqrt(2) gamma_v, D / (sqrt(d) gamma_v)) >= (sqrt(2) D / sqrt(d))^{1/2}, and the
    bound is (D_min / (2 sqrt(d)))^{1/2}: the construction (margin 0) is at least 2^{3/4} above
    it, and within 2x of it (the score gain gamma_s adds little)."""
    found = construct(ModelSpec("pre_learned", "regression", 8, length), margin=0.0)
    ratio = found.max_norm / lower_bound("pre_learned", length, 8)
    assert 2**0.75 * (1 - 1e-9) <= ratio <= 2


@pytest.mark.parametrize("d", [8, 64])
def test_no_norm_b_tokens_grow_to_the_largest_norm_at_any_width(d):
    """|e_b| equals the largest norm whichever vector sets it: e_a at d = 8, e_Q at d = 64 (its
    score scale sqrt(tau log(1 / alpha)) grows with d); a longer e_b costs nothing."""
    found = construct(ModelSpec("none", "regression", d, 5))
    assert float(found.params.e_b.norm()) == pytest.approx(found.max_norm, rel=1e-12)


@pytest.mark.slow
def test_bare_postnorm_pays_only_for_its_narrower_band():
    """The geometry comes from the optimal arc at the band 1/2 - margin - 0.01 and B grows as
    (band)^(-1/2): at L = 16 (default margin 0.02) the construction is within that factor of
    the lower bound (band 1/2)."""
    ratio = _built("post_bare").max_norm / lower_bound("post_bare", 16, 8)
    assert 1 <= ratio <= (HALF / (HALF - 0.03)) ** error_exponent("post_bare")


@pytest.mark.parametrize("length", [2, 5, 16])
def test_learned_prenorm_construction_is_the_best_of_its_family(length):
    """Score gain gamma_s on g1's support (alpha = exp(-d gamma_s^2 / tau)), value gain gamma_v
    on g2's: |gamma|^2 = 2 gamma_s^2 + 2 gamma_v^2 and |u| = D / (sqrt(d) gamma_v). For a fixed
    alpha the best gamma_v makes the two equal (a quadratic in gamma_v^2); at margin 0 the
    construction is no worse than that family's best over a grid of alpha (b tokens, weight
    alpha^2, do not bind at d = 8)."""
    d = 8
    found = construct(ModelSpec("pre_learned", "regression", d, length), margin=0.0)
    family = []
    for log_alpha in np.linspace(math.log(0.02 / length**2), -1e-3, 150):
        gain = gain_for_alpha(math.exp(log_alpha), length)
        score = -math.sqrt(d) * log_alpha / d  # gamma_s^2
        value = (math.sqrt(score**2 + 2 * gain**2 / d) - score) / 2  # gamma_v^2
        family.append(max(gain / math.sqrt(d * value), 1.0))
    assert found.max_norm <= min(family) * (1 + 1e-9)


def test_learned_postnorm_splits_its_bias_evenly():
    """The read-out bias is b0 + <u, beta> with u = sqrt(k) e_1: any split gives the same
    output; the even split without cancellation (b0 and <u, beta> of one sign) keeps the larger
    of |b0| and |beta| smallest."""
    p = _built("post_learned").params
    assert float(p.b0.abs()) == pytest.approx(float(p.beta.norm()), rel=1e-12)
    assert float(p.b0.flatten()[0]) * float(p.beta[0, 0]) >= 0
