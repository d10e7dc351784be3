"""The APJN estimators against exact Jacobians on tiny timm ViTs, and the models and inputs
they are measured on."""

import functools
import math
import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from transformer_stability.apjn.agreement import EARLY, agreement, gmfe, region_gmfe
from transformer_stability.apjn.agreement_intervals import agreement_means, sensitivity_ratios
from transformer_stability.apjn.inputs import (
    bundled_images,
    cifar100_images,
    embed_images,
    equiangular_tokens,
    read_cifar100,
)
from transformer_stability.apjn.measure import (
    _chunks,
    backward_apjn,
    backward_apjn_per_pair,
    block_states,
    forward_apjn,
    gaussian_probes,
    model_blocks,
    push_tangents,
    token_statistics,
)
from transformer_stability.apjn.models import SaturatingNorm, build_vit, mean_field_from_model
from transformer_stability.apjn.spec import ViTSpec, resolve_init_std
from transformer_stability.apjn.training import cifar100_dataset

TINY = ViTSpec(width=16, heads=2, depth=3, img_size=8, patch_size=4, attn_mult=10, mlp_mult=8)


def _tiny(norm: str, alpha: float | None) -> tuple[list, torch.Tensor]:
    model = build_vit(TINY.with_(norm=norm, alpha=alpha), seed=0).double()
    x0 = equiangular_tokens(TINY.n_tokens, TINY.width, 1.0, 0.3, torch.Generator().manual_seed(1))
    return model_blocks(model), x0[None]


def _block_jacobians(blocks: list, states: list[torch.Tensor]) -> list[torch.Tensor]:
    """Dense Jacobian of each block at its input, as (N d) x (N d) matrices."""
    size = states[0][0].numel()
    return [
        torch.autograd.functional.jacobian(block, x, vectorize=True).reshape(size, size)
        for block, x in zip(blocks, states, strict=False)
    ]


def _within_hutchinson_error(estimate: float, jac: torch.Tensor, n_probes: int) -> bool:
    """|estimate - ||J||_F^2/(N d)| < 5 standard errors; Var(u^T A u) = 2 ||A||_F^2 for a
    Gaussian u and A = J^T J (or J J^T for forward probes: same Frobenius norm)."""
    size = jac.shape[0]
    exact = float(jac.pow(2).sum()) / size
    stderr = math.sqrt(2 * float((jac.T @ jac).pow(2).sum())) / size / math.sqrt(n_probes)
    return abs(estimate - exact) < 5 * stderr


def _exact_apjn(blocks: list, x0: torch.Tensor) -> tuple[list[float], list[float]]:
    """(backward J^{L,b}, forward J^{b,0}) for b = 0..L from products of dense block
    Jacobians: ||J||_F^2 / (N d)."""
    states = block_states(blocks, x0)
    jacs = _block_jacobians(blocks, states)
    identity = torch.eye(jacs[0].shape[0], dtype=torch.float64)
    size = identity.shape[0]

    def apjn(chain: list[torch.Tensor]) -> float:
        return float(functools.reduce(lambda acc, j: j @ acc, chain, identity).pow(2).sum()) / size

    depth = len(blocks)
    return (
        [apjn(jacs[b:]) for b in range(depth + 1)],
        [apjn(jacs[:b]) for b in range(depth + 1)],
    )


def _basis_probes(x: torch.Tensor) -> torch.Tensor:
    """sqrt(N d) e_k for every coordinate k of one sample (1, N d, N, d): the probe average of
    |J^T u|^2 / (N d) is then ||J||_F^2 / (N d) exactly, with no Monte Carlo error."""
    size = x[0].numel()
    return (math.sqrt(size) * torch.eye(size, dtype=x.dtype)).reshape(1, size, *x.shape[1:])


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("derf", 1.5), ("dyt", 2.0)])
def test_estimators_with_basis_probes_are_the_exact_apjn(norm, alpha):
    """Backward J^{L,b} and forward J^{b,0} at every b equal ||J||_F^2/(N d) of the dense
    Jacobian products to float64 rounding when the probes span the space, for every chunking."""
    blocks, x0 = _tiny(norm, alpha)
    backward_exact, forward_exact = _exact_apjn(blocks, x0)
    probes = _basis_probes(x0)
    for chunk_size in (7, 64):
        backward = backward_apjn(blocks, x0, probes, chunk_size=chunk_size)[0]
        forward = forward_apjn(blocks, x0, probes, chunk_size=chunk_size)[0]
        np.testing.assert_allclose(backward.numpy(), backward_exact, rtol=1e-10)
        np.testing.assert_allclose(forward.numpy(), forward_exact, rtol=1e-10)
    per_pair = backward_apjn_per_pair(blocks, x0, probes)[0]
    np.testing.assert_allclose(per_pair.numpy(), backward_exact, rtol=1e-10)
    assert backward_exact[0] > 1.2 and forward_exact[-1] > 1.2  # multipliers: not trivial


@pytest.mark.parametrize(("norm", "alpha"), [("ln", None), ("dyt", 2.0)])
def test_hutchinson_estimates_converge_to_the_exact_apjn(norm, alpha):
    """With Gaussian probes, backward J^{L,b} at every b and forward J^{b,0} at every b lie
    within the Hutchinson estimate's error of the exact ||J||_F^2/(N d)."""
    blocks, x0 = _tiny(norm, alpha)
    n_probes, depth = 400, len(blocks)
    generator = torch.Generator().manual_seed(2)
    states = block_states(blocks, x0)
    u, v = (
        gaussian_probes(states[-1], n_probes, generator),
        gaussian_probes(x0, n_probes, generator),
    )
    backward = backward_apjn(blocks, x0, u, chunk_size=n_probes)[0]
    forward = forward_apjn(blocks, x0, v, chunk_size=n_probes)[0]
    jacs = _block_jacobians(blocks, states)
    identity = torch.eye(jacs[0].shape[0], dtype=torch.float64)
    for b in range(depth):
        to_last = functools.reduce(lambda acc, j: j @ acc, jacs[b:], identity)
        from_first = functools.reduce(lambda acc, j: j @ acc, jacs[: b + 1], identity)
        assert _within_hutchinson_error(float(backward[b]), to_last, n_probes), b
        assert _within_hutchinson_error(float(forward[b + 1]), from_first, n_probes), b
    assert backward[-1] == 1.0 and forward[0] == 1.0


def test_probes_are_float64_draws_whatever_the_working_dtype():
    """The same generator state gives the same probes (rounded) for a float32 batch as for a
    float64 one: draws are made in float64 on the CPU, one standard normal per coordinate, and
    moved to the batch's device (here the meta device)."""
    like = torch.zeros(2, 5, 3, dtype=torch.float64)
    wide = gaussian_probes(like, 4000, torch.Generator().manual_seed(8))
    narrow = gaussian_probes(like.float(), 4000, torch.Generator().manual_seed(8))
    assert wide.shape == (2, 4000, 5, 3) and wide.dtype == torch.float64
    assert narrow.dtype == torch.float32
    torch.testing.assert_close(narrow, wide.float(), rtol=0, atol=0)
    assert (wide != wide.float().double()).all()  # float64 draws, not widened float32 ones
    on_meta = gaussian_probes(like.to("meta"), 3, torch.Generator().manual_seed(8))
    assert on_meta.device.type == "meta" and on_meta.shape == (2, 3, 5, 3)
    assert float(wide.mean()) == pytest.approx(0.0, abs=0.02)
    assert float(wide.var()) == pytest.approx(1.0, abs=0.02)


def test_chunks_partition_the_batch():
    """Chunks are disjoint, in order, cover every row once and hold at most `size` rows: what
    bounds the memory of one autograd pass."""
    for total, size in ((10, 4), (8, 8), (3, 64)):
        rows = [list(range(total))[part] for part in _chunks(total, size)]
        assert sum(rows, []) == list(range(total))
        assert all(0 < len(chunk) <= size for chunk in rows)


def test_token_statistics_average_over_the_tokens_after_cls():
    """q = mean_i |x_i|^2/d and p = mean_{i != j} x_i.x_j/d over tokens 1.., per sample."""
    x = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    q, p = token_statistics(x)
    for s in range(2):
        tokens = x[s, 1:]
        overlaps = tokens @ tokens.T / 7
        off = ~torch.eye(4, dtype=torch.bool)
        assert float(q[s]) == pytest.approx(float(overlaps.diagonal().mean()), rel=1e-12)
        assert float(p[s]) == pytest.approx(float(overlaps[off].mean()), rel=1e-12)


def test_pushed_tangents_are_the_jacobian_vector_product():
    """push_tangents returns the block outputs, J v from dense Jacobians and |J v|^2/(N d)
    after every block."""
    blocks, x0 = _tiny("derf", 1.5)
    v = torch.randn((1, *x0.shape), generator=torch.Generator().manual_seed(10), dtype=x0.dtype)
    states = block_states(blocks, x0)
    primal, tangent, norms = push_tangents(blocks, x0, v)
    torch.testing.assert_close(primal, states[-1], rtol=1e-12, atol=1e-12)
    expected = v.reshape(-1)
    for b, jac in enumerate(_block_jacobians(blocks, states)):
        expected = jac @ expected
        assert float(norms[0, 0, b]) == pytest.approx(float(expected.pow(2).mean()), rel=1e-10)
    torch.testing.assert_close(tangent.reshape(-1), expected, rtol=1e-10, atol=1e-12)


def test_all_blocks_estimator_equals_the_per_pair_loop():
    blocks, x0 = _tiny("derf", 1.0)
    x0 = torch.cat([x0, 0.5 * x0])  # two samples
    probes = gaussian_probes(x0, 5, torch.Generator().manual_seed(3))
    fast = backward_apjn(blocks, x0, probes, chunk_size=3)
    slow = backward_apjn_per_pair(blocks, x0, probes)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=0)
    assert fast.dtype == torch.float64


def test_chunking_and_per_sample_averaging_do_not_change_the_estimate():
    blocks, x0 = _tiny("ln", None)
    x0 = torch.cat([x0, 2.0 * x0, 0.5 * x0])
    probes = gaussian_probes(x0, 4, torch.Generator().manual_seed(4))
    one_pass = forward_apjn(blocks, x0, probes, chunk_size=100)
    chunked = forward_apjn(blocks, x0, probes, chunk_size=5)
    assert one_pass.dtype == torch.float64  # whatever the model's dtype: the tables' precision
    torch.testing.assert_close(one_pass, chunked, rtol=1e-12, atol=0)
    alone = forward_apjn(blocks, x0[1:2], probes[1:2])
    torch.testing.assert_close(one_pass[1:2], alone, rtol=1e-12, atol=0)


def test_pushing_a_stack_in_pieces_equals_one_pass_and_each_probe_alone():
    """push_tangents maps the P tangents of each input together: a stack pushed in two pieces
    (the second fed by the first's outputs) gives the one-pass outputs, tangents and norms,
    and each probe's tangent is the one it gets alone."""
    blocks, x0 = _tiny("dyt", 1.0)
    x0 = torch.cat([x0, 0.5 * x0])
    v = gaussian_probes(x0, 3, torch.Generator().manual_seed(5)).transpose(0, 1)
    primal, tangent, norms = push_tangents(blocks, x0, v)
    middle, half_tangent, first = push_tangents(blocks[:1], x0, v)
    end, end_tangent, second = push_tangents(blocks[1:], middle, half_tangent)
    assert norms.shape == (3, 2, len(blocks))
    torch.testing.assert_close(end, primal, rtol=1e-12, atol=0)
    torch.testing.assert_close(end_tangent, tangent, rtol=1e-12, atol=0)
    torch.testing.assert_close(torch.cat([first, second], dim=-1), norms, rtol=1e-12, atol=0)
    alone = push_tangents(blocks, x0, v[1:2])
    torch.testing.assert_close(alone[1][0], tangent[1], rtol=1e-12, atol=0)
    torch.testing.assert_close(primal, block_states(blocks, x0)[-1], rtol=1e-12, atol=0)
    expected = tangent.pow(2).sum(dim=(-2, -1)) / tangent[0, 0].numel()
    torch.testing.assert_close(norms[..., -1], expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    ("n", "d", "q0", "p0"), [(5, 8, 1.0, 0.2), (65, 384, 2.0, 0.5), (5, 16, 1.5, 1.5)]
)
def test_equiangular_input_has_exactly_the_requested_gram_matrix(n, d, q0, p0):
    x = equiangular_tokens(n, d, q0, p0, torch.Generator().manual_seed(0))
    gram = x @ x.T / d
    target = torch.full((n, n), p0, dtype=torch.float64).fill_diagonal_(q0)
    torch.testing.assert_close(gram, target, rtol=0, atol=1e-12)
    assert (x.abs().sum(0) > 1e-8).all()  # rotated: no zero-padded coordinates left
    q, p = token_statistics(x[None])
    assert float(q) == pytest.approx(q0, abs=1e-12) and float(p) == pytest.approx(p0, abs=1e-12)


def test_equiangular_input_rejects_impossible_statistics():
    with pytest.raises(ValueError, match="width >= n_tokens"):
        equiangular_tokens(10, 8, 1.0, 0.2, torch.Generator())
    with pytest.raises(ValueError, match="p0 <= q0"):
        equiangular_tokens(4, 8, 1.0, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="p0 <= q0"):
        equiangular_tokens(4, 8, 1.0, -0.1, torch.Generator())


@pytest.mark.parametrize(("kind", "f"), [("dyt", torch.tanh), ("derf", torch.erf)])
def test_saturating_norms_match_their_formulas(kind, f):
    module = SaturatingNorm(6, kind, alpha=0.7)
    with torch.no_grad():
        module.weight.copy_(torch.linspace(0.5, 2.0, 6))
        module.bias.copy_(torch.linspace(-1.0, 1.0, 6))
    x = torch.randn(3, 4, 6, generator=torch.Generator().manual_seed(0))
    expected = torch.linspace(0.5, 2.0, 6) * f(0.7 * x) + torch.linspace(-1.0, 1.0, 6)
    torch.testing.assert_close(module(x), expected)
    assert module.alpha.requires_grad and module.alpha.numel() == 1


def test_built_model_has_the_requested_structure():
    spec = TINY.with_(norm="derf", alpha=0.8, attn_mult=1.0, mlp_mult=1.0)
    plain, scaled = build_vit(spec, seed=5), build_vit(spec.with_(attn_mult=3, mlp_mult=2), 5)
    assert not plain.training
    assert isinstance(plain.norm, SaturatingNorm) and isinstance(plain.norm_pre, torch.nn.Identity)
    d = spec.width
    for a, b in zip(plain.blocks, scaled.blocks, strict=True):
        assert isinstance(a.norm1, SaturatingNorm) and isinstance(a.norm2, SaturatingNorm)
        assert not a.attn.fused_attn and isinstance(a.mlp.act, torch.nn.ReLU)
        torch.testing.assert_close(b.attn.qkv.weight[: 2 * d], a.attn.qkv.weight[: 2 * d])
        torch.testing.assert_close(b.attn.qkv.weight[2 * d :], 3 * a.attn.qkv.weight[2 * d :])
        torch.testing.assert_close(b.attn.proj.weight, 3 * a.attn.proj.weight)
        torch.testing.assert_close(b.mlp.fc1.weight, 2 * a.mlp.fc1.weight)
        torch.testing.assert_close(b.mlp.fc2.weight, 2 * a.mlp.fc2.weight)
    for alpha in (None, 0.0):
        with pytest.raises(ValueError, match="positive alpha"):
            build_vit(spec.with_(alpha=alpha), seed=0)
    narrow = build_vit(spec.with_(mlp_ratio=1.0, relu=False), seed=0)
    assert narrow.blocks[0].mlp.fc1.out_features == d
    assert isinstance(narrow.blocks[0].mlp.act, torch.nn.GELU)
    with pytest.raises(ValueError, match=r"SaturatingNorm is one of \('derf', 'dyt'\), not 'ln'"):
        SaturatingNorm(d, "ln", 1.0)


def test_mean_field_constants_read_off_a_vit_b_match_the_spec():
    spec = ViTSpec(width=768, heads=12, depth=2, img_size=224, patch_size=16)
    mf = mean_field_from_model(build_vit(spec, seed=0))
    assert mf.a == pytest.approx(0.094372, rel=0.01)
    assert mf.m == pytest.approx(0.377487, rel=0.01)
    assert mf.n_tokens == 196


def test_vit_b_init_std_gives_vit_b_constants_at_any_width():
    """init_std 'vit_b' keeps fan_in * std^2 of ViT-B: std 0.02 at width 768, 0.02 * sqrt(2) at
    384, and the built weights of a narrow model carry ViT-B's (a, m)."""
    assert resolve_init_std("vit_b", 768) == pytest.approx(0.02)
    assert resolve_init_std("vit_b", 384) == pytest.approx(0.02 * math.sqrt(2))
    assert resolve_init_std(0.05, 384) == 0.05
    for bad in ("vit_s", 0.0, -1.0):
        with pytest.raises(ValueError, match="init_std"):
            resolve_init_std(bad, 384)
    spec = ViTSpec(width=192, heads=3, depth=2, img_size=64, patch_size=16, init_std="vit_b")
    mf = mean_field_from_model(build_vit(spec, seed=0))
    assert mf.a == pytest.approx(0.094372, rel=0.03)
    assert mf.m == pytest.approx(0.377487, rel=0.03)
    timm = mean_field_from_model(build_vit(spec.with_(init_std=0.02), seed=0))
    assert timm.a == pytest.approx(mf.a / 16, rel=1e-5)  # a ~ std^4: (768/192)^2 = 16


def test_theory_seeded_with_measured_statistics_tracks_a_small_vit():
    """End-to-end check of the chain model -> input -> estimator -> seeded theory."""
    from transformer_stability.apjn.kernels import norm_kernel
    from transformer_stability.apjn.theory import backward_log_apjn, propagate_statistics

    for norm, alpha in (("ln", None), ("derf", 1.0)):
        spec = ViTSpec(
            width=192,
            heads=3,
            depth=8,
            img_size=64,
            patch_size=16,
            norm=norm,
            alpha=alpha,
            attn_mult=2.0,
            mlp_mult=2.0,
        )
        model = build_vit(spec, seed=0).double()
        x0 = torch.stack(
            [
                equiangular_tokens(17, 192, 1.0, 0.2, torch.Generator().manual_seed(s))
                for s in range(2)
            ]
        )
        blocks = model_blocks(model)
        states = block_states(blocks, x0)
        probes = gaussian_probes(states[-1], 4, torch.Generator().manual_seed(0))
        measured = backward_apjn(blocks, x0, probes).mean(0).numpy()
        mf = mean_field_from_model(model)
        traj = propagate_statistics(norm_kernel(norm, alpha), mf, 1.0, 0.2, spec.depth)
        theory = np.exp(backward_log_apjn(traj, mf))
        assert measured[0] > 1.5
        assert gmfe(measured[:-1], theory[:-1]) < 1.06, (norm, measured, theory)


def test_gmfe_and_regions():
    theory = np.linspace(1, 10, 9)
    measured = theory * np.exp(np.array([0.1, -0.1, 0.1, 0.2, 0.2, -0.2, 0, 0, 0]))
    assert gmfe(measured, theory) == pytest.approx(math.exp(0.1))
    regions = region_gmfe(np.arange(9)[::-1].copy(), measured[::-1].copy(), theory[::-1].copy())
    assert regions["shallow"] == pytest.approx(math.exp(0.1))
    assert regions["middle"] == pytest.approx(math.exp(0.2))
    assert regions["deep"] == pytest.approx(1.0)


def test_image_agreement_sets_the_early_blocks_apart():
    """On images the regions cover blocks >= compare_from (source excluded) and the earlier
    blocks form 'early'; equiangular curves are compared over every block."""
    blocks = np.arange(13)
    rows = []
    for kind in ("images", "equiangular"):
        error = np.where(blocks < 4, 2.0, 1.0)  # a factor 2 in blocks 0..3 only
        rows.append(
            pd.DataFrame(
                {
                    "norm": "ln",
                    "alpha": np.nan,
                    "attn_mult": 1.0,
                    "mlp_mult": 1.0,
                    "input": kind,
                    "init_seed": 0,
                    "sample": 0,
                    "direction": "backward",
                    "source_block": 12,
                    "block": blocks,
                    "apjn": error,
                    "apjn_theory": 1.0,
                    "apjn_theory_gram": np.nan,
                }
            )  # fmt: skip
        )
    table = agreement(pd.concat(rows), compare_from=4).set_index(["input", "region"])["gmfe"]
    assert table["images", EARLY] == pytest.approx(2.0)
    assert table["images"].drop(EARLY).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert EARLY not in table["equiangular"].index
    assert table["equiangular", "shallow"] == pytest.approx(2.0)


def _fake_cifar(root, n: int = 12) -> None:
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        batch = {
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"fine_labels": list(rng.integers(0, 100, n)),
        }
        with open(folder / split, "wb") as handle:
            pickle.dump(batch, handle)


def test_cifar100_is_read_from_a_local_copy(tmp_path):
    _fake_cifar(tmp_path)
    images, labels = read_cifar100(tmp_path, "test")
    assert images.shape == (12, 32, 32, 3) and images.dtype == np.uint8
    assert labels.shape == (12,)
    with open(tmp_path / "cifar-100-python" / "test", "rb") as handle:
        raw = pickle.load(handle)[b"data"]
    np.testing.assert_array_equal(images[3, :, :, 1].ravel(), raw[3, 1024:2048])
    batch = cifar100_images(tmp_path, count=4, size=48, seed=0)
    assert batch.shape == (4, 3, 48, 48)
    with pytest.raises(FileNotFoundError, match="apjn.images.cifar_root"):
        read_cifar100(tmp_path / "missing")


@pytest.mark.parametrize("content", [b"", b"not a pickle", pickle.dumps({b"data": [1, 2]})])
def test_a_corrupt_cifar100_file_is_named_with_its_config_key(tmp_path, content):
    _fake_cifar(tmp_path)
    (tmp_path / "cifar-100-python" / "train").write_bytes(content)
    named = r"cifar-100-python/train \(from apjn.train.data.cifar_root\)"
    with pytest.raises(ValueError, match=named):
        cifar100_dataset(str(tmp_path), train=2, test=2, seed=0)


def test_bundled_images_are_reproducible_and_embed_into_block_zero():
    first, again = bundled_images(3, 32, seed=1), bundled_images(3, 32, seed=1)
    torch.testing.assert_close(first, again)
    assert first.shape == (3, 3, 32, 32)
    assert abs(float(first.mean())) < 1.0 and 0.3 < float(first.std()) < 3.0
    model = build_vit(ViTSpec(width=16, heads=2, depth=1, img_size=32, patch_size=8), seed=0)
    tokens = embed_images(model, first.float())
    assert tokens.shape == (3, 17, 16)


def _noisy_curves(inits: int, samples: int, spread: float) -> pd.DataFrame:
    """Equiangular backward curves over 9 blocks whose measured APJN is the theory's times
    exp(+-spread) alternating over (initialization, sample)."""
    rows = []
    for init in range(inits):
        for sample in range(samples):
            sign = 1.0 if (init + sample) % 2 else -1.0
            rows.append(pd.DataFrame({
                "norm": "ln", "alpha": np.nan, "attn_mult": 1.0, "mlp_mult": 1.0,
                "input": "equiangular", "init_seed": init, "sample": sample,
                "direction": "backward", "source_block": 9, "block": np.arange(10),
                "apjn": 2.0 ** np.arange(10) * np.exp(sign * spread),
                "apjn_theory": 2.0 ** np.arange(10), "apjn_theory_gram": np.nan,
            }))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def test_agreement_means_average_the_curves_gmfe_and_bound_it():
    """Every curve is off by a factor e^0.1: each per-curve GMFE is e^0.1 with a zero-width
    interval, while the averaged curve cancels the alternating errors up to cosh(0.1), and
    its interval (curves drawn again) lies between that and e^0.1."""
    curves = _noisy_curves(inits=4, samples=2, spread=0.1)
    means = agreement_means(agreement(curves), curves).set_index("region")
    assert set(means.index) == {"shallow", "middle", "deep", "compared"}
    for column in ("gmfe", "gmfe_lo", "gmfe_hi"):
        assert means[column].to_numpy() == pytest.approx(np.exp(0.1))
    assert means["gmfe_gram"].isna().all()
    averaged = means.loc["compared"]
    assert averaged["gmfe_averaged"] == pytest.approx(np.cosh(0.1))
    lo, hi = averaged["gmfe_averaged_lo"], averaged["gmfe_averaged_hi"]
    assert np.cosh(0.1) - 1e-12 <= lo < hi < np.exp(0.1)


def _sweep_rows(sweep: str, value: float, ratios: list[list[float]]) -> pd.DataFrame:
    """End-to-end rows of one Derf sweep point: ratios[init][sample] = measured / theory, the
    theory differing between samples (each is seeded by its own input)."""
    point = {"alpha": 1.0, "attn_mult": 1.0, "mlp_mult": 1.0} | {sweep: value}
    return pd.DataFrame([
        {"sweep": sweep, "norm": "derf", **point, "width": 8, "depth": 4, "init_seed": init,
         "sample": sample, "apjn": ratio * (3.0 + sample), "apjn_theory": 3.0 + sample}
        for init, row in enumerate(ratios) for sample, ratio in enumerate(row)
    ])  # fmt: skip


def test_sensitivity_ratios_average_each_point_and_bound_it_over_initializations():
    """One point's initializations off by 1.1, 1.2 and 1.3 (both samples alike): mean 1.2,
    an interval within their range that leaves out 1; identical initializations give a
    zero-width interval; the depth sweep is not a sensitivity point."""
    end_to_end = pd.concat([
        _sweep_rows("attn_mult", 2.0, [[1.1, 1.1], [1.2, 1.2], [1.3, 1.3]]),
        _sweep_rows("alpha", 0.5, [[0.9, 0.9], [0.9, 0.9]]),
        _sweep_rows("depth", 1.0, [[5.0, 5.0]]),
    ])  # fmt: skip
    ratios = sensitivity_ratios(end_to_end).set_index("sweep")
    assert sorted(ratios.index) == ["alpha", "attn_mult"]
    spread = ratios.loc["attn_mult"]
    assert spread["inits"] == 3 and spread["ratio"] == pytest.approx(1.2)
    assert spread["apjn"] == pytest.approx(1.2 * 3.5) and spread["apjn_theory"] == 3.5
    assert 1.1 - 1e-12 <= spread["ratio_lo"] < 1.2 < spread["ratio_hi"] <= 1.3 + 1e-12
    steady = ratios.loc["alpha"]
    assert steady["alpha"] == 0.5 and steady["attn_mult"] == 1.0
    assert steady[["ratio", "ratio_lo", "ratio_hi"]].to_numpy() == pytest.approx(0.9)
