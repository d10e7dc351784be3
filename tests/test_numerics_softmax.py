"""Study N softmax helpers on batches and in closed form: shapes that reach the tables (one value
per row), the perturbation gain of a two-entry row, where softmax is a sigmoid, and the error
bound written out by hand on rows where every term is known (equal logits, a two-entry sink),
with the edges where it gives up. The bound's slack hides its second-order terms from any
comparison with measured errors; only these closed forms pin them."""

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


def _exp_perturbation(w: float, fmt: Format) -> tuple[float, float]:
    """(b, b'): the exp argument rounded (relative u, absolute η), then exp itself (relative u),
    so ê = E(1 + ε) with |ε| ≤ b = (1 + u)e^{u|w| + η} − 1; an underflow η of ê adds η/E."""
    u, eta = fmt.roundoff, fmt.underflow
    b = (1 + u) * math.exp(u * abs(w) + eta) - 1
    return b, b + eta / math.exp(w)


def _equal_row_bound(n: int, w: float, fmt: Format) -> float:
    """The bound on every entry of n = 2^m equal logits, exp argument w, by hand: p = 1/n,
    ε̄ = b; a node of the tree adds two equal halves (u·node is the smaller error), so level k
    errs by u(1 + b)(1 + u)^k and the sum by (1 + b)((1 + u)^m − 1); c ≤ 1/2, so 1 − c > u·c."""
    u, eta = fmt.roundoff, fmt.underflow
    _, b = _exp_perturbation(w, fmt)
    normalisation = 2 * b * (n - 1) / (n**2 * (1 - b))
    total = (1 + b) * ((1 + u) ** round(math.log2(n)) - 1) / (1 - b)
    q = (1 + b) / (n * (1 - b))
    return normalisation + q * total / (1 - total) + u * q / (1 - total) + eta


def _two_entry_bound(w: tuple[float, float], fmt: Format) -> list[float]:
    """The bound on a two-entry row with exp arguments w (entry 1 the smaller), by hand: q_i −
    p_i = p_i(ε_i − ε̄)/(1 + ε̄) = ±p_0p_1(ε_0 − ε_1)/(1 + ε̄); the one addition errs by at most
    the smaller term (plus the inner arithmetic); rounding c_i errs by u·c_i or 1 − c_i."""
    u, eta, inner = fmt.roundoff, fmt.underflow, fmt.inner
    p1 = 1 / (1 + math.exp(w[0] - w[1]))
    p = (1 - p1, p1)
    b = [_exp_perturbation(entry, fmt)[1] for entry in w]
    mean = p[0] * b[0] + p[1] * b[1]
    x = [p[i] * (1 + b[i]) for i in (0, 1)]
    total = min(u * (x[0] + x[1]), x[1] + inner * (x[0] + x[1])) / (1 - mean)
    normalisation = p[0] * p[1] * (b[0] + b[1]) / (1 - mean)
    bounds = []
    for i, other in ((0, 1), (1, 0)):
        c = x[i] / ((1 - mean) * (1 - total))
        one_minus_c = x[other] / (p[i] * (1 - b[i])) + total if b[i] < 1 else math.inf
        division = min(u * c, one_minus_c + inner * c) + eta
        bounds.append(normalisation + c * total + division)
    return bounds


@pytest.mark.parametrize("name", ["m7", "fp16", "bf16"])
@pytest.mark.parametrize("shifted", [False, True])
def test_error_bound_of_equal_logits_in_closed_form(name, shifted):
    fmt = Format.parse(name)
    for n, logit in ((4, -3.0), (8, 1.5), (16, 6.0)):
        z = torch.full((1, n), logit, dtype=torch.float64)
        want = _equal_row_bound(n, 0.0 if shifted else logit, fmt)
        got = softmax.softmax_error_bound(z, fmt, shifted)
        torch.testing.assert_close(got, torch.full_like(z, want), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["m7", "fp16", "bf16"])
@pytest.mark.parametrize("offset", [0.0, 3.0])
def test_error_bound_of_a_two_entry_sink_row_in_closed_form(name, offset):
    """The tail entry 1e-5·e^{±1} is below u: the sum errs by at most the tail and the sink's
    c rounds to within 1 − c, the regimes where the bound follows 1 − p_max."""
    fmt = Format.parse(name)
    for gap in (10.5, 11.5, 12.5):
        z = torch.tensor([[offset, offset - gap]], dtype=torch.float64)
        for shifted in (False, True):
            w = (0.0, -gap) if shifted else (offset, offset - gap)
            want = torch.tensor([_two_entry_bound(w, fmt)], dtype=torch.float64)
            got = softmax.softmax_error_bound(z, fmt, shifted)
            torch.testing.assert_close(got, want, rtol=1e-10, atol=0)
            assert got[0, 0] < fmt.roundoff  # below u·p_max: the sink's error follows its tail


def test_error_bound_is_infinite_once_the_perturbations_reach_the_size_of_the_row():
    # m4 at z = 25, unshifted: b = (1 + u)e^{25u} − 1 ≈ 1.25, every exp may be off by 125 %
    m4 = Format.parse("m4")
    b, _ = _exp_perturbation(25.0, m4)
    assert 1 <= b < 2
    z = torch.full((1, 2), 25.0, dtype=torch.float64)
    assert softmax.softmax_error_bound(z, m4, shifted=False).isinf().all()
    assert softmax.softmax_error_bound(z, m4, shifted=True).isfinite().all()
    # m2 over 64 equal logits: the sum's error reaches (1 + u)((1 + u)^6 − 1)/(1 − u) ≈ 1.3
    m2 = Format.parse("m2")
    u = m2.roundoff
    assert 1 <= (1 + u) * ((1 + u) ** 6 - 1) / (1 - u) < 2
    assert (
        softmax.softmax_error_bound(torch.zeros(1, 64, dtype=torch.float64), m2, True).isinf().all()
    )
    assert (
        softmax.softmax_error_bound(torch.zeros(1, 16, dtype=torch.float64), m2, True)
        .isfinite()
        .all()
    )


def test_error_bound_is_infinite_exactly_where_the_largest_partial_sum_may_overflow():
    """n = 4 equal unshifted logits c in an fp16-range format: the computed sum is at most
    4e^c(1 + b)(1 + u)² with 1 + b = (1 + u)e^{uc}, which reaches the largest finite number
    at c* = (log largest − log 4 − 3 log(1 + u))/(1 + u). A 3-D batch: rows below and above."""
    fmt = Format.parse("m10", max_exponent=15)
    u = fmt.roundoff
    edge = (math.log(fmt.largest) - math.log(4) - 3 * math.log1p(u)) / (1 + u)
    z = torch.tensor([edge * (1 - 1e-9), edge * (1 + 1e-9)], dtype=torch.float64)
    z = z.view(2, 1, 1).expand(2, 1, 4)
    limit = softmax.softmax_error_bound(z, fmt, shifted=False)
    assert limit[0].isfinite().all() and limit[1].isinf().all()
    # shifted, the same rows are far from any overflow
    assert softmax.softmax_error_bound(z, fmt, shifted=True).isfinite().all()


def test_error_bound_is_infinite_where_a_rounded_argument_reaches_float64_subnormals():
    """The tail exp argument w rounded may reach w(1 + u); below log(smallest normal) float64's
    exp is no longer relatively accurate, so the row's bound gives up (inf)."""
    fmt = Format.parse("m7")
    edge = softmax.EXP_SUBNORMAL / (1 + fmt.roundoff)
    z = torch.tensor([[0.0, edge * (1 - 1e-9)], [0.0, edge * (1 + 1e-9)]], dtype=torch.float64)
    limit = softmax.softmax_error_bound(z, fmt, shifted=True)
    assert limit[0].isfinite().all() and limit[1].isinf().all()


def test_softmax_lowp_normalises_each_row_of_a_3d_batch():
    z = torch.stack([_batch(seed)[0] for seed in range(3)])  # (3, 4, 6)
    for fmt in (Format.parse("m7"), Format.parse("fp16")):
        got = softmax.softmax_lowp(z, fmt, shifted=True)
        want = torch.stack([softmax.softmax_lowp(rows, fmt, shifted=True) for rows in z])
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(
            got.sum(-1), torch.ones(3, 4, dtype=torch.float64), atol=0.02, rtol=0
        )


@pytest.mark.parametrize("name", ["m7", "fp16"])
def test_pairwise_sum_error_bound_in_closed_form(name):
    fmt = Format.parse(name)
    u = fmt.roundoff
    # two terms: the addition errs by u(a + b) or by the smaller term (and the inner error)
    for scale in (1e-3, 1.0, 1e3):
        for ratio in (0.5, 1e-2, 1e-6):
            pair = torch.tensor([[scale, scale * ratio]], dtype=torch.float64)
            node = scale * (1 + ratio)
            want = min(u * node, scale * ratio + fmt.inner * node)
            got = softmax.pairwise_sum_error_bound(pair, fmt)
            assert got.item() == pytest.approx(want, rel=1e-12)
    # 2^m equal terms x: level k adds terms bounded by 2^k x(1 + u)^k, erring by u per addition
    for m in (2, 3, 5):
        x = torch.full((2, 2**m), 0.25, dtype=torch.float64)
        want = 2**m * 0.25 * ((1 + u) ** m - 1)
        torch.testing.assert_close(
            softmax.pairwise_sum_error_bound(x, fmt), torch.full((2,), want, dtype=torch.float64)
        )


def test_pairwise_sum_error_bound_of_one_term_is_zero_of_the_input_kind():
    """A single term needs no addition; the zero keeps the input's dtype and device."""
    one = torch.ones(3, 1, dtype=torch.float64)
    got = softmax.pairwise_sum_error_bound(one, Format.parse("m7"))
    assert got.dtype == torch.float64 and got.shape == (3,) and not got.any()
    meta = softmax.pairwise_sum_error_bound(one.to("meta"), Format.parse("m7"))
    assert meta.device.type == "meta"


def test_sink_logits_without_spread_in_closed_form_and_drawn_from_the_generator():
    # spread 0: the others sit at the offset and the sink at log(p/(1 − p)·(n − 1)) + offset
    generator = torch.Generator().manual_seed(0)
    z = softmax.sink_logits(5, 0.8, 0.0, 7.0, 2, generator)
    row = [math.log(0.8 / 0.2 * 4) + 7.0] + [7.0] * 4
    torch.testing.assert_close(z, torch.tensor([row, row], dtype=torch.float64))
    first = softmax.sink_logits(5, 0.8, 1.0, 0.0, 3, torch.Generator().manual_seed(1))
    again = softmax.sink_logits(5, 0.8, 1.0, 0.0, 3, torch.Generator().manual_seed(1))
    torch.testing.assert_close(first, again, rtol=0, atol=0)
