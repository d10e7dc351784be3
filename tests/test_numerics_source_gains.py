"""Study N's per-source gains (source_gains.py): how much of a rounding source's relative error
reaches its branch output, checked against closed forms where the rest of the branch is linear,
against exact Jacobians where it is not, and for being first order."""

import pytest
import torch
from torch.func import jvp

from transformer_stability.numerics.gpt2 import (
    _layer_norm,
    branch,
    build_gpt2,
    embed,
    stored_blocks,
)
from transformer_stability.numerics.rounding import Precision
from transformer_stability.numerics.source_gains import BRANCH_SOURCES, source_gains
from transformer_stability.numerics.spec import GPT2Spec

FP64 = Precision.parse("fp64")
SPEC = GPT2Spec(size="tiny", layers=1, width=32, heads=4, vocab=97, positions=64)


@pytest.fixture(scope="module")
def block_and_inputs():
    """One float64 block of a random tiny GPT-2 and both branches' LayerNorm outputs for 3
    sequences of 24 tokens."""
    model = build_gpt2(SPEC, torch.Generator().manual_seed(0))
    (block,) = stored_blocks(model, FP64, 1.0, torch.device("cpu"))
    ids = torch.randint(SPEC.vocab, (3, 24), generator=torch.Generator().manual_seed(1))
    h = embed(model, ids).double()
    normed = {"attn": _layer_norm(h, block.ln_1, block.eps)}
    h = h + branch("attn", normed["attn"], block, FP64)
    normed["mlp"] = _layer_norm(h, block.ln_2, block.eps)
    return block, normed


def _mean_square(kind, block, normed, source, draws: int = 64) -> torch.Tensor:
    """E[G_j²] per token over `draws` independent draws of the relative errors."""
    generator = torch.Generator().manual_seed(2)
    return torch.stack(
        [source_gains(kind, normed, block, generator)[source] ** 2 for _ in range(draws)]
    ).mean(0)


@pytest.mark.parametrize(("kind", "source"), [("attn", "attn_proj"), ("mlp", "mlp_proj")])
def test_an_output_projection_s_error_reaches_the_output_as_it_is(block_and_inputs, kind, source):
    """Rounding the branch's last product: E‖ξ ⊙ out‖² = ‖out‖² for unit-variance ξ."""
    block, normed = block_and_inputs
    out = branch(kind, normed[kind], block, FP64)
    ratio = _mean_square(kind, block, normed[kind], source) / out.pow(2).sum(-1)
    assert ratio.mean().item() == pytest.approx(1.0, rel=0.03)


def test_a_mix_error_passes_the_output_projection(block_and_inputs):
    """Rounding P·V (z): the output moves by (ξ ⊙ z) W_O, so E‖·‖² = Σ_i z_i² ‖(W_O)_i‖²."""
    block, normed = block_and_inputs
    weight, bias = block.attn_proj
    z = torch.linalg.solve(weight.T, (branch("attn", normed["attn"], block, FP64) - bias).mT).mT
    closed = (z.pow(2) * weight.pow(2).sum(-1)).sum(-1)
    ratio = _mean_square("attn", block, normed["attn"], "mix") / closed
    assert ratio.mean().item() == pytest.approx(1.0, rel=0.05)


def test_a_layernorm_error_passes_the_whole_branch_as_its_jacobian_says(block_and_inputs):
    """Rounding the branch's input y: E‖J(ξ ⊙ y)‖² per token equals the mean of exact
    Jacobian-vector products over the same kind of draws (here by forward mode)."""
    block, normed = block_and_inputs
    y = normed["mlp"]
    generator = torch.Generator().manual_seed(3)
    exact = []
    for _ in range(64):
        xi = (torch.rand(y.shape, generator=generator, dtype=torch.float64) - 0.5) * 12**0.5
        _, moved = jvp(lambda x: branch("mlp", x, block, FP64), (y,), (xi * y,))
        exact.append(moved.pow(2).sum(-1))
    ratio = _mean_square("mlp", block, y, "layernorm") / torch.stack(exact).mean(0)
    assert ratio.mean().item() == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("kind", ["attn", "mlp"])
def test_gains_are_first_order_and_every_source_reaches_the_output(block_and_inputs, kind):
    """The same draws with a 16x smaller step give the same gains (no second-order part, no
    float64 noise); every source of the branch moves its output, but the scores of the first
    token, which attends to itself alone (a softmax of one score is 1 whatever the score)."""
    block, normed = block_and_inputs

    def gains(eta):
        return source_gains(kind, normed[kind], block, torch.Generator().manual_seed(4), eta)

    coarse, fine = gains(2.0**-26), gains(2.0**-30)
    assert list(coarse) == list(BRANCH_SOURCES[kind])
    for source in coarse:
        assert torch.allclose(coarse[source], fine[source], rtol=1e-5), source
        first, rest = coarse[source][:, 0], coarse[source][:, 1:]
        assert (rest > 0).all(), source
        assert (first == 0).all() if source == "scores" else (first > 0).all(), source
