"""A measured model built and measured a piece at a time gives the numbers it gives whole,
with one piece in memory: the cuts, the per-block seeds, the estimators over pieces, and the
measurement rules end to end."""

from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest
import torch

from transformer_stability.apjn import models
from transformer_stability.apjn.inputs import equiangular_tokens
from transformer_stability.apjn.items import FiniteNItem, ImageSource, MeasureSettings
from transformer_stability.apjn.measure import (
    Held,
    backward_apjn,
    block_states,
    forward_apjn,
    forward_pass,
    gaussian_probes,
    piece_ranges,
    token_statistics,
)
from transformer_stability.apjn.measured_tables import finite_n_table, measure
from transformer_stability.apjn.models import (
    BuiltBlocks,
    block_moments,
    block_seed,
    build_embedding,
    build_vit,
    mean_field_from_model,
)
from transformer_stability.apjn.spec import ViTSpec

CPU = torch.device("cpu")
SPEC = ViTSpec(width=16, heads=2, depth=5, img_size=8, patch_size=4, norm="derf", alpha=1.0)


@pytest.mark.parametrize(
    ("depth", "size", "start", "cuts"),
    [
        (5, 2, 0, [(0, 2), (2, 4), (4, 5)]),
        (5, 5, 0, [(0, 5)]),
        (5, 9, 0, [(0, 5)]),
        (7, 3, 4, [(4, 6), (6, 7)]),  # a start inside a piece shortens that piece
        (6, 3, 3, [(3, 6)]),
        (4, 1, 4, []),
    ],
)
def test_pieces_cut_at_the_multiples_of_their_size(depth, size, start, cuts):
    assert [(r.start, r.stop) for r in piece_ranges(depth, size, start)] == cuts


def test_a_piece_of_no_blocks_is_refused():
    with pytest.raises(ValueError, match="at least one block"):
        piece_ranges(4, 0, 0)


def _stack(depth: int = 5) -> tuple[list, torch.Tensor]:
    model = build_vit(SPEC.with_(depth=depth, attn_mult=4.0), seed=3).double()
    generator = torch.Generator().manual_seed(2)
    x0 = torch.stack([equiangular_tokens(SPEC.n_tokens, 16, 1.0, 0.3, generator) for _ in "ab"])
    return list(model.blocks), x0


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_curves_measured_piece_by_piece_equal_the_whole_stack_bit_for_bit(size):
    blocks, x0 = _stack()
    probes = gaussian_probes(x0, 3, torch.Generator().manual_seed(0))
    whole_back = backward_apjn(blocks, x0, probes, chunk_size=3)
    whole_fwd = forward_apjn(blocks[2:], block_states(blocks, x0)[2], probes, chunk_size=3)
    pieces = Held(blocks, size)
    run = forward_pass(pieces, x0, keep=[2])
    back = backward_apjn(pieces, x0, probes, chunk_size=3, starts=run.states)
    fwd = forward_apjn(pieces, run.states[2], probes, chunk_size=3, source=2)
    assert torch.equal(back, whole_back)
    assert torch.equal(fwd, whole_fwd)
    assert fwd.shape == (2, len(blocks) - 2 + 1)
    stats = [token_statistics(x) for x in block_states(blocks, x0)]
    assert torch.equal(run.q, torch.stack([q for q, _ in stats], 1))
    assert torch.equal(run.p, torch.stack([p for _, p in stats], 1))
    assert torch.equal(run.states[len(blocks)], block_states(blocks, x0)[-1])


def test_the_forward_pass_keeps_only_piece_starts_the_blocks_asked_for_and_the_output():
    blocks, x0 = _stack()
    run = forward_pass(Held(blocks, 2), x0, keep=[3])
    assert sorted(run.states) == [0, 2, 3, 4, 5]


def test_a_stack_in_pieces_needs_the_state_entering_each_piece():
    blocks, x0 = _stack()
    probes = gaussian_probes(x0, 2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=r"blocks \[2, 4\]"):
        backward_apjn(Held(blocks, 2), x0, probes)


def test_each_block_has_its_own_seed_so_any_cut_builds_the_same_model():
    deep = BuiltBlocks(SPEC.with_(depth=7), 11, 7, CPU, torch.float64)
    whole = deep.piece(range(7))
    pieces = BuiltBlocks(SPEC.with_(depth=7), 11, 3, CPU, torch.float64)
    shallow = BuiltBlocks(SPEC.with_(depth=4), 11, 2, CPU, torch.float64)
    for b in range(7):
        (piece,) = [p for p in pieces.pieces() if b in p]
        built = pieces.piece(piece)[b - piece.start]
        assert all(
            torch.equal(x, y)
            for x, y in zip(
                whole[b].state_dict().values(), built.state_dict().values(), strict=True
            )
        )
    # the first blocks of a deeper model are the shallower model (the depth sweep reads J^{L,0}
    # of every L off one deep model)
    first = shallow.piece(range(4))
    assert torch.equal(first[3].mlp.fc1.weight, whole[3].mlp.fc1.weight)
    # another initialization draws other weights
    other = BuiltBlocks(SPEC.with_(depth=7), 12, 7, CPU, torch.float64).piece(range(1))
    assert not torch.equal(other[0].attn.qkv.weight, whole[0].attn.qkv.weight)
    assert pieces.mean_field() == deep.mean_field()


def test_block_b_is_the_one_block_vit_of_its_own_seed_and_the_embedding_has_no_block():
    blocks = BuiltBlocks(SPEC.with_(depth=3), 7, 3, CPU, torch.float64)
    for b, block in enumerate(blocks.piece(range(3))):
        alone = build_vit(SPEC.with_(depth=1), block_seed(7, b)).blocks[0].double()
        assert all(
            torch.equal(x, y)
            for x, y in zip(block.state_dict().values(), alone.state_dict().values(), strict=True)
        )
    assert len({block_seed(7, b) for b in range(100)} | {block_seed(8, 0)}) == 101
    assert len(build_embedding(SPEC.with_(depth=5), 7).blocks) == 0


def test_a_range_inside_the_held_piece_is_its_own_blocks():
    blocks = BuiltBlocks(SPEC.with_(depth=6), 0, 3, CPU, torch.float32)
    held = blocks.piece(range(3, 6))
    assert blocks.piece(range(3, 4)) == held[:1]
    assert blocks.piece(range(4, 6)) == held[1:]
    assert all(a is b for a, b in zip(blocks.piece(range(4, 6)), held[1:], strict=True))


def _count_draws(monkeypatch) -> list[int]:
    """The seeds of the blocks drawn from here on (none kept from before)."""
    built: list[int] = []
    real = build_vit
    monkeypatch.setattr(models, "_DRAWN", OrderedDict())
    monkeypatch.setattr(
        models, "build_vit", lambda spec, seed: built.append(seed) or real(spec, seed)
    )
    return built


def test_built_blocks_hold_one_piece_and_build_a_held_piece_once(monkeypatch):
    built = _count_draws(monkeypatch)
    blocks = BuiltBlocks(SPEC.with_(depth=5), 0, 2, CPU, torch.float32)
    for piece in blocks.pieces():
        blocks.piece(piece)
        assert len(blocks._held[1]) <= 2
    assert len(built) == 5
    blocks.piece(range(4, 5))  # the piece held last: nothing built
    blocks.piece(range(2, 3))  # drawn before the last piece: drawn again
    assert len(built) == 6
    with pytest.raises(ValueError, match="2 of 3 blocks"):
        partial = BuiltBlocks(SPEC.with_(depth=3), 0, 2, CPU, torch.float32)
        partial.piece(range(2))
        partial.mean_field()


def test_the_mean_field_of_built_blocks_is_that_of_the_model_they_form():
    blocks = BuiltBlocks(SPEC.with_(depth=4), 5, 3, CPU, torch.float32)
    for piece in blocks.pieces():
        blocks.piece(piece)
    model = build_vit(SPEC.with_(depth=4), 0)
    model.blocks = torch.nn.Sequential(*(blocks.piece(range(b, b + 1))[0] for b in range(4)))
    assert blocks.mean_field() == mean_field_from_model(model)
    a, m = block_moments(model.blocks[0])
    assert a > 0 and m > 0


def _settings(chunk_blocks: int) -> MeasureSettings:
    return MeasureSettings(
        q0=1.0, p0=0.2, samples=2, probes=3, chunk_size=3, chunk_blocks=chunk_blocks,
        dtype="float64", seed=4,
    )  # fmt: skip


@pytest.mark.parametrize("images", [None, ImageSource("bundled", None, 2)])
def test_a_measurement_does_not_depend_on_the_pieces_the_model_is_built_in(images):
    spec = SPEC.with_(depth=5, img_size=8)
    runs = [measure(spec, _settings(size), CPU, images, forward_source=2) for size in (1, 2, 5)]
    for run in runs[1:]:
        for field in ("backward", "forward", "q", "p"):
            assert np.array_equal(getattr(run, field), getattr(runs[0], field)), field
        assert run.mean_field == runs[0].mean_field
        assert all(np.array_equal(run.grams[b], runs[0].grams[b]) for b in (0, 2))
    assert runs[0].forward.shape == (2, 5 - 2 + 1)


def test_finite_n_does_not_depend_on_the_pieces_either():
    spec = ViTSpec(width=16, heads=2, depth=5, img_size=8, patch_size=4)

    def table(chunk_blocks: int) -> pd.DataFrame:
        item = FiniteNItem(spec, (3, 4), 1.0, 0.2, 2, chunk_blocks, "float64", 0)
        return finite_n_table(item, CPU)

    pd.testing.assert_frame_equal(table(2), table(5), check_exact=True)


def test_variants_of_one_initialization_share_their_draws_bit_for_bit(monkeypatch):
    """Every norm, α and multiplier of one initialization draws its blocks once; each block
    equals build_vit's, and casting one leaves the kept draws (and the next variant) alone."""
    built = _count_draws(monkeypatch)
    variants = [
        SPEC, SPEC.with_(norm="derf", alpha=1.5), SPEC.with_(norm="dyt", alpha=0.5),
        SPEC.with_(attn_mult=2.0, mlp_mult=0.5), SPEC.with_(norm="derf", alpha=1.0, mlp_mult=3.0),
    ]  # fmt: skip
    x = torch.randn(2, SPEC.n_tokens, SPEC.width, dtype=torch.float64)
    for spec in variants * 2:
        blocks = BuiltBlocks(spec.with_(depth=3), 7, 3, CPU, torch.float64)
        for b, block in enumerate(blocks.piece(range(3))):
            alone = build_vit(spec.with_(depth=1), block_seed(7, b)).blocks[0].double()
            assert block.state_dict().keys() == alone.state_dict().keys()
            for name, value in alone.state_dict().items():
                assert torch.equal(block.state_dict()[name], value), (spec, name)
            assert torch.equal(block(x), alone(x))
    drawn = [seed for seed in built if seed in {block_seed(7, b) for b in range(3)}]
    assert len(drawn) == 3  # once per block, for ten measured models
    assert all(p.dtype == torch.float32 for block in models._DRAWN.values()
               for p in block.parameters())  # fmt: skip
