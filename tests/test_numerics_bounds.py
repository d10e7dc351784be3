"""Study N bound experiments: Jacobians and conditions against finite differences, the bounds
never below the measured errors, and the Lipschitz table's draws below their bounds."""

import math

import pytest
import torch
from torch.func import jacrev

from transformer_stability.numerics import norms, softmax, synthetic
from transformer_stability.numerics.lowp import (
    Format,
    fl,
    gamma,
    operation_roundoff,
    pairwise_depth,
    pairwise_sum,
)
from transformer_stability.numerics.rounding import unit_roundoff


def jacobian(f, x: torch.Tensor) -> torch.Tensor:
    return jacrev(f)(x)


def _fd_jacobian(f, x: torch.Tensor, h: float = 1e-6) -> torch.Tensor:
    """Central finite differences of f: R^d -> R^d at one point x (float64)."""
    columns = []
    for j in range(x.shape[-1]):
        step = torch.zeros_like(x)
        step[j] = h
        columns.append((f(x + step) - f(x - step)) / (2 * h))
    return torch.stack(columns, dim=-1)


def _outlier_vector(d: int, outlier: float, seed: int) -> torch.Tensor:
    x = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    x[0] += outlier
    return x


@pytest.mark.parametrize("outlier", [0.0, 5.0, 300.0])
def test_norm_jacobians_and_conditions_match_finite_differences(outlier):
    x = _outlier_vector(12, outlier, seed=3)
    for f, jac, condition in [
        (norms.layer_norm, norms.layer_norm_jacobian, norms.layer_norm_condition),
        (norms.rms_norm, norms.rms_norm_jacobian, norms.rms_norm_condition),
    ]:
        numeric = _fd_jacobian(f, x, h=1e-6 * max(1.0, outlier))
        torch.testing.assert_close(jac(x), numeric, rtol=1e-6, atol=1e-7)
        y = f(x)
        normwise = torch.linalg.matrix_norm(numeric, ord=2) * x.norm() / y.norm()
        assert condition(x).item() == pytest.approx(normwise.item(), rel=1e-6)
        componentwise = (numeric.abs() @ x.abs()) / y.abs()
        torch.testing.assert_close(
            norms.componentwise_condition(jac(x), x, y), componentwise, rtol=1e-5, atol=0
        )


def test_pairwise_sum_error_within_its_bound():
    generator = torch.Generator().manual_seed(4)
    for bits in (4, 7, 10):
        x = fl(torch.randn(64, 300, generator=generator, dtype=torch.float64) * 10, bits)
        x[:, 0] += 1e4
        x = fl(x, bits)
        error = (pairwise_sum(x, Format(bits)) - x.sum(-1)).abs()
        limit = gamma(pairwise_depth(300), operation_roundoff(bits)) * x.abs().sum(-1)
        assert (error <= limit).all()


@pytest.mark.parametrize("bits", [4, 7, 10])
@pytest.mark.parametrize("outlier", [0.0, 30.0, 3000.0, 1e5])
def test_low_precision_norm_errors_never_exceed_the_bounds(bits, outlier):
    x = norms.outlier_inputs(256, outlier, samples=32, bits=bits, seed=int(outlier) + bits)
    for exact, lowp, bound in [
        (norms.layer_norm, norms.layer_norm_lowp, norms.layer_norm_error_bound),
        (norms.rms_norm, norms.rms_norm_lowp, norms.rms_norm_error_bound),
    ]:
        error = (lowp(x, bits) - exact(x)).abs()
        assert (error <= bound(x, bits)).all()
        assert error.max() > 0  # the evaluation did round


def test_layer_norm_loses_the_bulk_under_a_massive_outlier_but_rms_norm_does_not():
    x = norms.outlier_inputs(768, 1e4, samples=16, bits=7, seed=0)
    ln = norms.norm_measurements(x, "layernorm", 7)["err_bulk"].median()
    rms = norms.norm_measurements(x, "rmsnorm", 7)["err_bulk"].median()
    assert ln > 4 * rms


def test_softmax_jacobian_identities():
    z = softmax.sink_logits(9, 0.7, 1.5, 2.0, samples=5, generator=torch.Generator().manual_seed(5))
    p = torch.softmax(z, -1)
    assert torch.allclose(p[:, 0], torch.full((5,), 0.7, dtype=torch.float64))
    for row_z, row_p in zip(z, p, strict=True):
        exact = jacobian(lambda v: torch.softmax(v, -1), row_z)
        j = softmax.softmax_jacobian(row_p)
        torch.testing.assert_close(j, exact, rtol=1e-12, atol=1e-14)
        inf_norm = torch.linalg.matrix_norm(j, ord=math.inf)
        assert inf_norm == pytest.approx(torch.linalg.matrix_norm(j, ord=1).item())
        assert inf_norm == pytest.approx(softmax.jacobian_inf_norm(row_p).item())
        assert inf_norm <= 2 * (1 - row_p.max()) + 1e-15
        assert j.abs().sum() == pytest.approx(softmax.jacobian_abs_sum(row_p).item())
        assert softmax.jacobian_abs_sum(row_p) <= 2 * (1 - row_p.max() ** 2)
        assert j.sum(dim=1).abs().max() < 1e-15  # J1 = 0


def test_softmax_relative_condition_bounds_the_exact_one():
    # exact: Σ_j |∂p_i/∂z_j||z_j|/p_i = |z_i|(1 − p_i) + Σ_{j≠i} p_j|z_j|, i.e. κ_i − 2p_i|z_i|
    generator = torch.Generator().manual_seed(6)
    z = softmax.sink_logits(7, 0.6, 1.0, 3.0, samples=1, generator=generator)[0]
    p = torch.softmax(z, -1)
    exact = (jacobian(lambda v: torch.softmax(v, -1), z).abs() @ z.abs()) / p
    kappa = softmax.relative_condition(z, p, shifted=False)
    torch.testing.assert_close(kappa, exact + 2 * p * z.abs())
    shifted = softmax.relative_condition(z, p, shifted=True)
    assert shifted.max() < kappa.max()  # the offset of 3 no longer counts


def _adversarial_rows(n: int, bits: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Logit rows built to break a softmax error bound, 8 rows each."""
    u = unit_roundoff(bits)
    base = torch.randn(8, n, generator=generator, dtype=torch.float64)
    ties = base.clone()
    ties[:, :3] = 2.5  # three-way tie at the max
    cluster = base - 6.0
    cluster[:, :32] = 1e-2 * base[:, :32]  # many logits within 1e-2 of the max
    half_ulp = torch.full((8, n), math.log(u / (n - 1)), dtype=torch.float64) + 1e-9 * base
    half_ulp[:, 0] = 0.0  # the tails add up to half an ulp of the sink: ties in the rounding
    rows = {"ties": ties, "near_max": 3.0 + 1e-3 * base, "cluster": cluster}
    rows["half_ulp_tail"] = half_ulp
    for depth in (
        10.0,
        12.0,
        15.0,
        17.0,
        20.0,
        40.0,
    ):  # fp16: subnormal below e^-9.7, 0 below e^-17.3
        tails = 0.5 * base - depth
        tails[:, 0] = 0.0
        rows[f"tail_e-{depth:g}"] = tails
    for offset in (-300.0, 80.0, 300.0, 720.0):  # 720: exp overflows float64 unshifted
        z = base.clone()
        z[:, 0] = 12.0
        rows[f"offset{offset:g}"] = z + offset
    for p_max in (1 - 1e-4, 1 - 1e-6):
        rows[f"sink{p_max}"] = softmax.sink_logits(n, p_max, 1.0, 0.0, 8, generator)
        rows[f"sink{p_max}_offset"] = softmax.sink_logits(n, p_max, 2.0, 30.0, 8, generator)
    return rows


FORMATS = ["m4", "m7", "m10", "m16", "fp16", "bf16"]


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("name", FORMATS)
def test_softmax_error_bound_holds_on_adversarial_rows_and_is_tight_with_a_sink(shifted, name):
    fmt = Format.parse(name)
    generator = torch.Generator().manual_seed(fmt.bits + 10 * shifted)
    smallest = torch.finfo(fmt.dtype or torch.float64).smallest_normal
    for row, z in _adversarial_rows(128, fmt.bits, generator).items():
        p = torch.softmax(z, -1)
        error = (softmax.softmax_lowp(z, fmt, shifted) - p).abs()
        limit = softmax.softmax_error_bound(z, fmt, shifted)
        finite = torch.isfinite(limit).all(-1)
        assert (error[finite] <= limit[finite]).all(), row  # every entry (nan fails)
        # inf where the unshifted exp of the largest logit overflows the format
        w = z - z.amax(-1, keepdim=True) if shifted else z
        overflow = w.amax(-1) > math.log(fmt.largest) + 1e-3
        assert not (finite & overflow).any(), row
        # finite wherever no exp argument is rounded by a sizeable amount and the sum stays
        # well inside the format's range
        size = torch.logsumexp(w, -1)
        safe = (w.abs().amax(-1) * fmt.roundoff < 0.1) & (size < math.log(fmt.largest) - 1)
        assert finite[safe & (size > math.log(smallest) + 10)].all(), row
        # the sink regime, above float64's own resolution of 1 - p_max and, for a cast,
        # above its underflow floor
        tail = 1 - p.amax(-1)
        sink = finite & (tail <= 1e-4 + 1e-12) & (tail > max(1e-12, 1e3 * fmt.underflow))
        if fmt.bits in (7, 10) and sink.any():
            # within a factor 100 of the measured 1-norm error
            assert (limit.sum(-1)[sink] <= 100 * error.sum(-1)[sink]).all(), row


@pytest.mark.parametrize("shifted", [False, True])
def test_fp16_tails_below_its_normal_range_err_absolutely_and_stay_within_the_bound(shifted):
    fmt = Format.parse("fp16")
    tails = torch.linspace(-10.0, -16.0, 64, dtype=torch.float64).unsqueeze(0)
    z = torch.cat([torch.zeros(1, 1, dtype=torch.float64), tails], dim=-1)
    p = torch.softmax(z, -1)
    error = (softmax.softmax_lowp(z, fmt, shifted) - p).abs()
    limit = softmax.softmax_error_bound(z, fmt, shifted)
    assert (error <= limit).all()
    # a relative model (u per operation) misses them by far: subnormal spacing 2^-24
    assert (error / p)[:, 1:].max() > 30 * fmt.roundoff
    assert limit.sum() <= 10 * error.sum()  # and the bound stays close
    # bf16 keeps float32's range: the same row errs relatively, by its condition times u
    bf16 = Format.parse("bf16")
    relative = (softmax.softmax_lowp(z, bf16, shifted) - p).abs() / p
    kappa = softmax.relative_condition(z, p, shifted)
    assert (relative <= (kappa + 4) * bf16.roundoff).all()


def test_pairwise_sum_error_bound_uses_the_smaller_operand():
    # a sink of 1 plus tails below half its ulp: the sum rounds back to 1, erring by the tails
    for bits in (4, 7, 10):
        tails = torch.full((1, 255), 2.0 ** -(bits + 3) / 255, dtype=torch.float64)
        x = torch.cat([torch.ones(1, 1, dtype=torch.float64), fl(tails, bits)], dim=-1)
        error = (pairwise_sum(x, Format(bits)) - x.sum(-1)).abs()
        limit = softmax.pairwise_sum_error_bound(x, Format(bits))
        assert error <= limit <= (1 + 16 * unit_roundoff(bits)) * x[:, 1:].sum(-1)
        assert error > 0.9 * x[:, 1:].sum(-1)  # the tails were lost: the bound is attained


def test_shifting_removes_the_offset_from_the_error_and_a_sink_silences_logit_errors():
    generator = torch.Generator().manual_seed(7)
    z = softmax.sink_logits(128, 0.5, 1.0, 40.0, samples=32, generator=generator)
    p = torch.softmax(z, -1)
    error = {
        s: ((softmax.softmax_lowp(z, Format(7), s) - p).abs() / p).amax(-1).median() for s in (0, 1)
    }
    assert error[1] < error[0] / 3
    z_sink = softmax.sink_logits(128, 0.9999, 1.0, 0.0, samples=32, generator=generator)
    z_flat = softmax.sink_logits(128, 0.2, 1.0, 0.0, samples=32, generator=generator)
    gain_sink = softmax.perturbation_gain(z_sink, 1e-6, generator)
    gain_flat = softmax.perturbation_gain(z_flat, 1e-6, generator)
    assert (gain_sink <= softmax.perturbation_bound(torch.softmax(z_sink, -1), 1e-6)).all()
    assert gain_sink.max() < gain_flat.min() / 100


@pytest.mark.slow
def test_lipschitz_table_keeps_each_draws_weights_and_stays_below_its_bounds():
    cfg = {
        "dim": 4,
        "radius": 1.5,
        "seq_lens": [2, 8, 32],
        "draws": 4,
        "iterations": 30,
        "search": {"restarts": 2, "steps": 40, "rate": 0.1},
    }
    table = synthetic.lipschitz_table(cfg, seed=3)
    assert len(table) == 3 * 4 * 2
    inf = table[table.norm == "inf"]
    # the same weights at every n: the n-free ball bound is one number per draw
    assert (inf.groupby("draw").ball_bound.nunique() == 1).all()
    assert inf.groupby("seq_len").ball_bound.nunique().eq(4).all()
    assert (table.estimate <= table.bound).all()
    assert (inf.worst <= inf.ball_bound).all() and (inf.bound_over_worst >= 1).all()
    assert (inf.worst > inf.estimate).all()  # the ascent beats the random input
    assert table[table.norm == "frobenius"].worst.isna().all()


def test_a_finite_exponent_range_makes_unshifted_softmax_overflow_like_fp16():
    z = torch.tensor([[11.0, 0.0, -1.0], [11.2, 0.0, -1.0]], dtype=torch.float64)
    p = torch.softmax(z, -1)
    fp16_range = Format(10, max_exponent=15)
    unshifted = softmax.softmax_lowp(z, fp16_range, shifted=False)
    assert torch.isfinite(unshifted[0]).all()  # e^11 = 59874 < 65504
    assert torch.isnan(unshifted[1, 0])  # e^11.2 overflows: inf/inf
    shifted = softmax.softmax_lowp(z, fp16_range, shifted=True)
    assert ((shifted - p).abs() <= softmax.softmax_error_bound(z, fp16_range, True)).all()
    limit = softmax.softmax_error_bound(z, fp16_range, shifted=False)
    assert torch.isfinite(limit[0]).all() and not torch.isfinite(limit[1]).any()
    assert ((unshifted[0] - p[0]).abs() <= limit[0]).all()
    assert fl(torch.tensor([65504.0, 65520.0], dtype=torch.float64), 10, 15).isinf().tolist() == [
        False,
        True,
    ]
