"""Study N GPT-2: the residual-stream forward against Hugging Face, α scaling, loading, metrics."""

import copy
import dataclasses
import math

import huggingface_hub.constants
import numpy as np
import pandas as pd
import pytest
import torch
from torch.func import jacrev

from transformer_stability.numerics.gpt2 import (
    BlockWeights,
    ModelSourceError,
    _attention,
    _layer_norm,
    _mlp,
    build_gpt2,
    embed,
    logits,
    residual_stream,
    stored_blocks,
)
from transformer_stability.numerics.gpt2_runs import run_group, sources_table, weights_table
from transformer_stability.numerics.inputs import TextInputError, input_ids
from transformer_stability.numerics.items import SOURCES, TokenInputs
from transformer_stability.numerics.metrics import (
    activation_lipschitz,
    inf_norm,
    layer_norm_statistics,
    quantiles,
    token_errors,
    weight_magnitudes,
)
from transformer_stability.numerics.recursion import BlockConstants
from transformer_stability.numerics.rounding import Precision
from transformer_stability.numerics.spec import GPT2Spec

TINY = GPT2Spec(size="tiny", layers=3, width=32, heads=4, vocab=97, positions=64)
FP64 = Precision.parse("fp64")
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def tiny_model():
    return build_gpt2(TINY, torch.Generator().manual_seed(0))


def _ids(seed: int = 1, batch: int = 3, length: int = 20) -> torch.Tensor:
    return torch.randint(TINY.vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


def _final_stream(model, ids, alpha: float = 1.0, precision: Precision = FP64):
    blocks = stored_blocks(model, precision, alpha, CPU)
    return list(residual_stream(blocks, embed(model, ids).to(precision.storage), precision))


def test_float64_forward_reproduces_the_hugging_face_logits(tiny_model):
    model = copy.deepcopy(tiny_model).double()
    ids = _ids()
    with torch.no_grad():
        expected = model(ids).logits
        checkpoints = _final_stream(model, ids)
        ours = logits(model, checkpoints[-1].stream)
    assert len(checkpoints) == 2 * 3
    assert [c.kind for c in checkpoints[:2]] == ["attn", "mlp"]
    relative = (ours - expected).abs().max() / expected.abs().max()
    assert relative < 1e-10


def test_alpha_scales_both_residual_branches_like_scaled_projections(tiny_model):
    alpha = 7.5
    scaled = build_gpt2(TINY, torch.Generator().manual_seed(0)).double()
    with torch.no_grad():
        for block in scaled.transformer.h:
            for proj in (block.attn.c_proj, block.mlp.c_proj):
                proj.weight.mul_(alpha)
                proj.bias.mul_(alpha)
        ids = _ids(seed=2)
        hidden = scaled(ids, output_hidden_states=True).hidden_states
        ours = _final_stream(copy.deepcopy(tiny_model).double(), ids, alpha=alpha)
    after_mlp = [c.stream for c in ours if c.kind == "mlp"]
    for b in range(len(after_mlp) - 1):  # the last hidden state is after ln_f
        torch.testing.assert_close(after_mlp[b], hidden[b + 1], rtol=1e-12, atol=1e-12)


def test_random_init_follows_the_spec(tiny_model):
    layers, width = 3, 32
    params = dict(tiny_model.named_parameters())
    std = lambda name: params[name].detach().double().std().item()  # noqa: E731
    assert std("transformer.h.0.attn.c_attn.weight") == pytest.approx(width**-0.5, rel=0.05)
    assert std("transformer.h.1.attn.c_proj.weight") == pytest.approx(
        (width * 2 * layers) ** -0.5, rel=0.1
    )
    assert std("transformer.h.1.mlp.c_proj.weight") == pytest.approx(
        (4 * width * 2 * layers) ** -0.5, rel=0.05
    )
    assert std("transformer.wte.weight") == pytest.approx(width**-0.5, rel=0.05)
    assert std("transformer.wpe.weight") == pytest.approx(0.02, rel=0.05)
    assert torch.equal(params["transformer.h.2.ln_1.weight"], torch.ones(width))
    assert not params["transformer.h.2.mlp.c_fc.bias"].any()
    assert tiny_model.lm_head.weight.data_ptr() == params["transformer.wte.weight"].data_ptr()


def test_pretrained_weights_load_offline_from_a_local_directory(tiny_model, tmp_path):
    tiny_model.save_pretrained(tmp_path / "tiny")
    spec = GPT2Spec(size="tiny", weights="pretrained", source=str(tmp_path / "tiny"))
    loaded = build_gpt2(spec, torch.Generator())
    for (name, a), (_, b) in zip(
        tiny_model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_missing_local_directory_names_the_key_and_the_offline_alternative(tmp_path):
    spec = GPT2Spec(weights="pretrained", source=str(tmp_path / "absent"), key="numerics.models[1]")
    with pytest.raises(ModelSourceError, match=r"numerics\.models\[1\]\.source.*weights: random"):
        build_gpt2(spec, torch.Generator())


def test_a_directory_without_a_checkpoint_is_reported_as_such(tmp_path):
    spec = GPT2Spec(weights="pretrained", source=str(tmp_path))
    with pytest.raises(ModelSourceError, match=r"from the local directory.*weights: random"):
        build_gpt2(spec, torch.Generator())


def test_unreachable_hub_gives_one_clear_error(monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    spec = GPT2Spec(weights="pretrained", source="no-such-org/no-such-gpt2")
    with pytest.raises(ModelSourceError, match=r"Hugging Face hub.*weights: random"):
        build_gpt2(spec, torch.Generator())


def test_token_errors_and_quantiles_on_known_values():
    reference = torch.tensor([[[2.0, -4.0], [1.0, 1.0]]], dtype=torch.float64)
    test = torch.tensor([[[2.5, -4.0], [1.0, float("inf")]]])
    errors = token_errors(test, reference)
    assert errors["abs_linf"][0].tolist() == [0.5, math.inf]
    assert errors["rel_linf"][0, 0].item() == 0.5 / 4
    assert errors["rel_comp"][0, 0].item() == 0.5 / 2
    found = quantiles(np.array([1.0, 2.0, 3.0, math.inf]))
    assert found["p01"] == 1.0 and found["p99"] == math.inf
    assert not any(math.isnan(v) for v in found.values())


def test_weight_magnitudes_match_their_definitions(tiny_model):
    block = stored_blocks(tiny_model, FP64, 1.0, CPU)[0]
    hf = tiny_model.transformer.h[0]
    w = hf.attn.c_attn.weight.detach().double().T  # (3d, d) in the x -> Wx layout
    w_q, w_k, w_v = w[:32], w[32:64], w[64:]
    w_o = hf.attn.c_proj.weight.detach().double().T
    found = weight_magnitudes(block)
    row_sum_max = lambda m: max(sum(abs(v) for v in row) for row in m.tolist())  # noqa: E731
    assert found["omega_ov"] == pytest.approx(row_sum_max(w_o) * row_sum_max(w_v), rel=1e-12)
    kq = max(
        torch.linalg.norm(w_k[h * 8 : (h + 1) * 8].abs().sum(1)).item()
        * torch.linalg.norm(w_q[h * 8 : (h + 1) * 8].abs().sum(1)).item()
        for h in range(4)
    )
    assert found["omega_kq"] == pytest.approx(2 / math.sqrt(8) * kq, rel=1e-12)
    assert inf_norm(torch.tensor([[1.0, -2.0], [0.5, 0.5]])) == 3.0


def _run_tables(model, alphas, groups, inputs: TokenInputs, seed: int = 0):
    """errors and recursion of every (alpha, storage group), stacked as the gather rule does."""
    runs = [run_group(model, TINY, a, g, inputs, seed, CPU) for a in alphas for g in groups]
    return tuple(pd.concat(tables, ignore_index=True) for tables in zip(*runs, strict=True))


def test_run_tables_recursion_bound_and_alpha_regimes(tiny_model):
    inputs = TokenInputs(seq_len=24, sequences=4, batch=2)
    errors, recursion = _run_tables(tiny_model, (1e-3, 10.0, 100.0), [("fp32", "m10")], inputs)
    weights = weights_table(tiny_model, TINY)
    assert list(errors.columns[:12]) == [
        "weights",
        "model",
        "precision",
        "alpha",
        "checkpoint",
        "kind",
        "metric",
        "p01",
        "p25",
        "p50",
        "p75",
        "p99",
    ]
    assert set(errors.metric) == {
        "rel_linf",
        "rel_comp",
        "abs_linf",
        "stream_min_l2",
        "stream_median_l2",
    }
    assert errors.checkpoint.max() == 6 and set(errors.kind) == {"attn", "mlp"}
    assert (errors[["p01", "p25", "p50", "p75", "p99"]].diff(axis=1).iloc[:, 1:] >= 0).all().all()
    assert (recursion.bound_rel >= recursion.measured_rel).all()
    assert set(weights.quantity) == {"omega_ov", "omega_ud", "omega_kq"}
    stream = errors[(errors.metric == "stream_median_l2") & (errors.precision == "fp32")]
    last = stream[stream.checkpoint == 6].set_index("alpha").p50
    assert last[100.0] / last[10.0] == pytest.approx(10, rel=0.1)  # residual-dominated: ∝ α
    m10 = errors[(errors.metric == "rel_linf") & (errors.precision == "m10")]
    at = m10[m10.checkpoint == 6].set_index("alpha").p50
    assert at[1e-3] < at[10.0] / 10  # embedding-dominated: the branches barely touch h


def test_a_group_run_is_the_same_alone_or_beside_other_groups(tiny_model):
    """One storage group's tables do not depend on which other formats were configured: a
    bf16 group beside an fp32 group gives the rows it gives alone."""
    inputs = TokenInputs(seq_len=8, sequences=2, batch=2)
    both = _run_tables(tiny_model, (0.1,), [("fp32", "m10"), ("bf16",)], inputs)
    alone = _run_tables(tiny_model, (0.1,), [("bf16",)], inputs)
    for got, want in zip(both, alone, strict=True):
        bf16 = got[got.precision == "bf16"].reset_index(drop=True)
        pd.testing.assert_frame_equal(bf16, want)


def test_a_group_must_share_one_storage_format(tiny_model):
    inputs = TokenInputs(seq_len=8, sequences=2, batch=2)
    with pytest.raises(ValueError, match="share one storage format"):
        run_group(tiny_model, TINY, 1.0, ("fp32", "bf16"), inputs, 0, CPU)


def _one_block(heads: int, sharpen: float, alpha: float = 1.0):
    """A 1-block float64 GPT-2 (width 8) with W_Q and W_K scaled by `sharpen`, and an embedded
    input."""
    spec = GPT2Spec(size="tiny", layers=1, width=8, heads=heads, vocab=97, positions=64)
    model = build_gpt2(spec, torch.Generator().manual_seed(0))
    (block,) = stored_blocks(model, FP64, alpha, CPU)
    weight = block.qkv[0].clone()
    weight[:, :16] *= sharpen
    block = dataclasses.replace(block, qkv=(weight, block.qkv[1]))
    ids = torch.randint(97, (1, 5), generator=torch.Generator().manual_seed(1))
    return model, block, embed(model, ids).double()


def _exact_inf(f, x: torch.Tensor) -> float:
    """‖∂f/∂x‖∞ over all tokens jointly: the exact first-order worst-case gain."""
    full = jacrev(f)(x).reshape(x.numel(), x.numel())
    return full.abs().sum(dim=1).max().item()


def _branch_gain(branch, ln, block, h: torch.Tensor) -> float:
    """Exact ‖∂/∂h of branch(LN(h))‖∞ of one residual branch."""
    return _exact_inf(lambda x: branch(_layer_norm(x, ln, block.eps), block, FP64), h)


@pytest.mark.parametrize("sharpen", [4.0, 8.0])
def test_attention_lipschitz_needs_the_score_path(sharpen):
    # with sharper logits the exact gain exceeds the value path's ω_OV: a bound that freezes
    # the attention pattern would fail here
    _, block, h = _one_block(heads=1, sharpen=sharpen)
    y = _layer_norm(h, block.ln_1, block.eps)
    exact = _exact_inf(lambda x: _attention(x, block, FP64), y)
    constants = BlockConstants.of(block)
    assert constants.w_o * constants.w_v < exact
    assert exact <= constants.attention_lipschitz(y.abs().max().item())


@pytest.mark.parametrize("alpha", [0.01, 1.0, 100.0])
def test_amplification_bounds_the_exact_first_order_gain_of_a_residual_add(alpha):
    model, block, h = _one_block(heads=2, sharpen=3.0, alpha=alpha)
    constants = BlockConstants.of(block)
    for kind, ln, branch, sublayer in [
        ("attn", block.ln_1, _attention, constants.attention_lipschitz),
        (
            "mlp",
            block.ln_2,
            _mlp,
            lambda r: constants.w_proj * activation_lipschitz(block.act) * constants.w_fc,
        ),
    ]:
        exact = _branch_gain(branch, ln, block, h)
        radius = _layer_norm(h, ln, block.eps).abs().max().item()
        lipschitz = layer_norm_statistics(h, ln[0], block.eps)["ln_lipschitz"].max().item()
        assert exact <= lipschitz * sublayer(radius), kind
        at_one = _branch_gain(branch, ln, _one_block(heads=2, sharpen=3.0)[1], h)
        # the branch, and so its amplification, carries α (α·W is rounded to float32 once)
        assert exact == pytest.approx(alpha * at_one, rel=1e-6), kind


def test_recursion_collapses_under_alpha_and_the_typical_estimate_sizes_the_first_add(tiny_model):
    inputs = TokenInputs(seq_len=24, sequences=4, batch=2)
    _, recursion = _run_tables(
        tiny_model, (1e-3, 10.0, 100.0), [("fp32", "m10"), ("bf16",)], inputs
    )
    assert (recursion.bound_rel >= recursion.measured_rel).all()
    first = recursion[recursion.checkpoint == 1]
    ratio = first.typical_rel_l2 / first.measured_rel_l2
    assert ratio.between(0.3, 3).all(), ratio  # each format's own u, every rounding counted
    last = recursion[(recursion.checkpoint == 6) & (recursion.precision == "fp32")]
    amplification = last.set_index("alpha").amplification
    # residual-dominated: the per-step amplification does not depend on α
    assert amplification[100.0] == pytest.approx(amplification[10.0], rel=0.2)
    assert amplification[1e-3] < amplification[10.0] / 100  # embedding-dominated: ∝ α


def test_rounded_accumulation_runs_in_the_forward_and_costs_accuracy(tiny_model):
    inputs = TokenInputs(seq_len=8, sequences=2, batch=2)
    errors, recursion = _run_tables(tiny_model, (1.0,), [("m7", "m7k1")], inputs)
    last = errors[(errors.metric == "rel_linf") & (errors.checkpoint == 6)].set_index("precision")
    assert last.p50["m7k1"] > 2 * last.p50["m7"]  # 32-term sums rounded at every term
    assert (recursion.bound_rel >= recursion.measured_rel).all()


def _word_tokenizer(words: list[str]):
    """A tiny whitespace/word-level tokenizer, built offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]")


def test_text_inputs_are_windows_tokenized_by_the_model_s_own_tokenizer(tmp_path):
    words = ["[UNK]", "the", "cat", "sat", "on", "mat", "a", "dog"]
    shape = {"size": "tiny", "layers": 1, "width": 8, "heads": 2, "vocab": 8, "positions": 16}
    model_dir, bare_dir = tmp_path / "model", tmp_path / "bare"
    build_gpt2(GPT2Spec(**shape), torch.Generator().manual_seed(0)).save_pretrained(model_dir)
    build_gpt2(GPT2Spec(**shape), torch.Generator().manual_seed(0)).save_pretrained(bare_dir)
    _word_tokenizer(words).save_pretrained(model_dir)
    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat a dog sat on a cat zebra " * 2, encoding="utf-8")
    spec = GPT2Spec(**shape, weights="pretrained", source=str(model_dir))
    inputs = TokenInputs(seq_len=4, sequences=3, batch=3, text=str(text))
    ids = input_ids(spec, 8, inputs, seed=0)
    expected = [1, 2, 3, 4, 1, 5, 6, 7, 3, 4, 6, 2]  # 'zebra' would be [UNK] = 0
    assert ids.tolist() == [expected[:4], expected[4:8], expected[8:]]
    errors, _ = run_group(build_gpt2(spec, None), spec, 1.0, ("fp32",), inputs, 0, CPU)
    assert errors.p50.notna().all() and set(errors.checkpoint) == {1, 2}
    bare = GPT2Spec(**shape, weights="pretrained", source=str(bare_dir), key="numerics.models[1]")
    with pytest.raises(TextInputError, match=r"numerics\.inputs\.text.*numerics\.models\[1\]"):
        input_ids(bare, 8, inputs, seed=0)
    with pytest.raises(TextInputError, match="fewer than"):
        input_ids(spec, 8, dataclasses.replace(inputs, sequences=10), seed=0)
    default = input_ids(spec, 8, dataclasses.replace(inputs, text=None), seed=0)
    assert default.shape == (3, 4)  # synthetic when no text is configured


def test_each_rounding_source_alone_stays_below_its_bound_and_near_its_typical_term(tiny_model):
    """Every source rounded alone (m10, float64 elsewhere): its worst-case terms bound what it
    does at every add, and its typical terms, weighed by what the source rounds and how the
    branch carries it, lie within 2x of it in the same (2-)norm (sizing every source by the
    branch output instead strays 2.2x); all sources together err about as the sum of their
    parts (first order)."""
    table = sources_table(tiny_model, TINY, 1.0, 10, TokenInputs(16, 2, 2), 0, CPU)
    assert set(table.source) == {"all", *SOURCES}
    silent = table[table.measured == 0]  # only the MLP's sources, before the first MLP
    assert set(silent.source) == {"fc", "gelu", "mlp_proj"} and set(silent.checkpoint) == {1}
    assert (table.bound >= table.measured).all() and (table.bound_rel >= table.measured_rel).all()
    table = table[table.measured > 0]
    ratio = table.typical_rel_l2 / table.measured_rel_l2
    assert ratio.between(1 / 2, 2).all(), table.assign(ratio=ratio)[
        ["source", "checkpoint", "ratio"]
    ]
    wide = table.pivot_table(index="checkpoint", columns="source", values="measured_rel_l2")
    parts = wide[list(SOURCES)].pow(2).sum(axis=1).pow(0.5)  # independent errors: in quadrature
    assert (wide["all"] / parts).between(0.5, 2).all()


def test_block_copies_are_made_when_asked_for_and_only_the_last_is_kept(tiny_model):
    """A group's stored and reference copies are made block by block as its streams reach them
    (GPT-2 XL's would be 18 GB at once): each equals the copy made directly, and only the last
    block asked for is held."""
    bf16 = Precision.parse("bf16")
    lazy = stored_blocks(tiny_model, bf16, 0.5, CPU)
    reference = lazy.cast(FP64)
    assert len(lazy) == len(reference) == TINY.layers
    for b, layer in enumerate(tiny_model.transformer.h):
        direct = BlockWeights.from_block(layer, bf16, 0.5, CPU)
        for name in BlockWeights._PAIRS:
            for made, wanted in zip(getattr(lazy[b], name), getattr(direct, name), strict=True):
                assert made.dtype == torch.bfloat16 and torch.equal(made, wanted)
            for made, wanted in zip(
                getattr(reference[b], name), getattr(direct.cast(FP64), name), strict=True
            ):
                assert made.dtype == torch.float64 and torch.equal(made, wanted)
        assert lazy._held[0] == b and lazy[b] is lazy[b]  # the held copy, not a new one
    first = lazy[0]
    assert lazy[0] is first and lazy[1] is not first and lazy[0] is not first
    with pytest.raises(IndexError, match="block 3 of 3"):
        lazy[TINY.layers]
    assert [w.heads for w in lazy] == [TINY.heads] * TINY.layers  # iterates to the end
