"""The GPT-2 residual-scaling experiment: test formats against a float64 reference.

One run is one storage group at one α (a Study N item): the test formats that store the same
numbers share one float64 reference. For each precision the embedded input is computed once in
float32, brought into the test format and handed identically to the test run and to the float64
reference, which holds the very numbers the test format stores (upcast exactly). Both runs
advance block by block, so the error at every residual add is measured without keeping the
whole stream in memory.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from transformers import GPT2LMHeadModel

from transformer_stability.numerics.gpt2 import (
    BlockWeights,
    ResidualAdd,
    embed,
    residual_stream,
    stored_blocks,
)
from transformer_stability.numerics.inputs import input_ids
from transformer_stability.numerics.items import TokenInputs
from transformer_stability.numerics.metrics import (
    ERROR_METRICS,
    activation_lipschitz,
    layer_norm_statistics,
    quantiles,
    sink_statistics,
    stream_sizes,
    token_errors,
    weight_magnitudes,
)
from transformer_stability.numerics.recursion import (
    BlockConstants,
    Roundoffs,
    recursion_table,
    typical_step,
)
from transformer_stability.numerics.rounding import SOURCES, Arithmetic, Precision, SourceRounding
from transformer_stability.numerics.source_gains import source_gains
from transformer_stability.numerics.spec import GPT2Spec
from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Gpt2Weights,
    RecursionSources,
)
from transformer_stability.tables import select

log = logging.getLogger(__name__)
REFERENCE = Precision.parse("fp64")


def weights_table(model: GPT2LMHeadModel, spec: GPT2Spec) -> pd.DataFrame:
    """ω_OV, ω_UD, ω_KQ per block (α = 1, float32 weights), long format."""
    rows = []
    for block in stored_blocks(model, Precision.parse("fp32"), 1.0, torch.device("cpu")):
        rows.append(weight_magnitudes(block))
    table = pd.DataFrame(rows).rename_axis("block").reset_index()
    table = table.melt(id_vars="block", var_name="quantity", value_name="value")
    return select(table.assign(weights=spec.weights, model=spec.name), Gpt2Weights)


def attention_table(
    model: GPT2LMHeadModel, spec: GPT2Spec, inputs: TokenInputs, seed: int, device: torch.device
) -> pd.DataFrame:
    """Sink statistics (metrics.sink_statistics) of every head's attention rows of the second
    half of each sequence, on the model's input, float32 at α = 1: quantiles and mean over the
    rows of all sequences, per block and head. The probabilities are read from Hugging Face's
    eager attention as each block computes them, so no more than one block's are held."""
    ids = input_ids(spec, model.config.vocab_size, inputs, seed)
    found: dict[tuple[int, int, str], list[np.ndarray]] = defaultdict(list)

    def keeper(block: int):
        def keep(module, args, output) -> None:
            for name, values in sink_statistics(output[1], ids.shape[1] // 2).items():
                for head, row in enumerate(values.cpu().numpy()):
                    found[(block, head, name)].append(row)

        return keep

    model = model.to(device)
    hooks = [b.attn.register_forward_hook(keeper(k)) for k, b in enumerate(model.transformer.h)]
    try:
        with torch.no_grad():
            for batch in ids.split(inputs.batch):
                model.transformer(input_ids=batch.to(device))
    finally:
        for hook in hooks:
            hook.remove()
    rows = []
    for (block, head, name), parts in found.items():
        values = np.concatenate(parts)
        row = {"block": block, "head": head, "statistic": name, **quantiles(values)}
        rows.append(row | {"mean": float(values.mean())})
    table = pd.DataFrame(rows).assign(weights=spec.weights, model=spec.name)
    return select(table, AttentionSinks)


class _Accumulator:
    """Per-checkpoint token errors, stream sizes and the recursion's inputs, over batches."""

    def __init__(self) -> None:
        self.values: dict[tuple[int, str, str], list[np.ndarray]] = defaultdict(list)
        self.maxima: dict[tuple[int, str, str], float] = defaultdict(float)

    def add(self, key: tuple[int, str], name: str, values: torch.Tensor) -> None:
        self.values[(*key, name)].append(values.flatten().cpu().numpy())

    def worst(self, key: tuple[int, str], name: str, value: torch.Tensor) -> None:
        self.maxima[(*key, name)] = max(self.maxima[(*key, name)], float(value.max()))

    def quantile_rows(self) -> list[dict]:
        return [
            {"checkpoint": k, "kind": kind, "metric": name, **quantiles(np.concatenate(v))}
            for (k, kind, name), v in self.values.items()
        ]


def _reference_statistics(
    ref: ResidualAdd, previous: torch.Tensor, block: BlockWeights, generator: torch.Generator
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Stream sizes (N2) and the recursions' per-token inputs (their maxima over tokens are
    kept), each rounding source's gain to the branch output among them: they depend on the
    float64 reference alone, so one computation serves every format of a group."""
    gain = (block.ln_1 if ref.kind == "attn" else block.ln_2)[0]
    norm_l2 = ref.stream.norm(dim=-1)
    branch_l2 = (ref.stream - previous).norm(dim=-1)
    statistics = layer_norm_statistics(previous, gain, block.eps)
    worst = {
        **statistics,
        "stream_linf": ref.stream.abs().amax(dim=-1),
        "stream_l2": norm_l2,
        "inv_stream_linf": 1 / ref.stream.abs().amax(dim=-1),
        "inv_stream_l2": 1 / norm_l2,
        "normed_linf": ref.normed.abs().amax(dim=-1),
        "gain_l2": statistics["ln_lipschitz_l2"] * branch_l2 / ref.normed.norm(dim=-1),
    }
    gains = source_gains(ref.kind, ref.normed, block, generator)
    worst |= {f"gain_{source}": gain for source, gain in gains.items()}
    return stream_sizes(ref.stream), worst


def _observe(
    acc: _Accumulator,
    ref: ResidualAdd,
    test: ResidualAdd,
    sizes: dict[str, torch.Tensor],
    worst: dict[str, torch.Tensor],
) -> None:
    key = (ref.index, ref.kind)
    errors = token_errors(test.stream, ref.stream)
    for name in ERROR_METRICS:
        acc.add(key, name, errors[name])
    for name, values in sizes.items():
        acc.add(key, name, values)
    acc.worst(key, "measured", errors["abs_linf"])
    acc.worst(key, "measured_rel", errors["rel_linf"])
    delta = test.stream.to(torch.float64) - ref.stream
    acc.worst(key, "measured_rel_l2", delta.norm(dim=-1) * worst["inv_stream_l2"])
    for name, values in worst.items():
        acc.worst(key, name, values)


def _run_group(
    model: GPT2LMHeadModel,
    ids: torch.Tensor,
    precisions: list[Arithmetic],
    alpha: float,
    batch_size: int,
    device: torch.device,
    constants: list[BlockConstants],
    dims: dict,
    seed: int,
) -> dict[str, _Accumulator]:
    """Test runs that store the same numbers (one storage dtype) share one float64 reference,
    and one copy of the stored weights (a format's weights depend on its storage dtype only),
    made block by block as the streams, which run in step, reach it.
    Each format's typical estimate runs beside them, token by token, on source gains drawn
    from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    storage = precisions[0]
    stored = stored_blocks(model, storage, alpha, device)
    tests = [stored] * len(precisions)
    ref_blocks = stored.cast(REFERENCE)
    accs = {p.name: _Accumulator() for p in precisions}
    eps = {p.name: Roundoffs.of(p) for p in precisions}
    with torch.no_grad():
        for batch in ids.split(batch_size):
            h0 = storage.store(embed(model, batch.to(device)).float())
            previous = h0.to(torch.float64)
            typical = dict.fromkeys(accs, 0.0)
            streams = [residual_stream(b, h0, p) for b, p in zip(tests, precisions, strict=True)]
            for ref, *outs in zip(
                residual_stream(ref_blocks, previous, REFERENCE), *streams, strict=True
            ):
                block = ref_blocks[ref.block]
                sizes, worst = _reference_statistics(ref, previous, block, generator)
                c = constants[ref.block]
                for precision, test in zip(precisions, outs, strict=True):
                    name = precision.name
                    typical[name] = typical_step(typical[name], c, ref.kind, eps[name], dims, worst)
                    own = worst | {"typical_rel_l2": typical[name] * worst["inv_stream_l2"]}
                    _observe(accs[name], ref, test, sizes, own)
                previous = ref.stream
    return accs


def _group_tables(
    accs: dict[str, _Accumulator],
    group: list[Arithmetic],
    alpha: float,
    constants: list[BlockConstants],
    dims: dict,
) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    errors, recursion = [], []
    for precision in group:
        acc = accs[precision.name]
        labels = {"precision": precision.name, "alpha": alpha}
        errors.append(pd.DataFrame(acc.quantile_rows()).assign(**labels))
        maxima = pd.Series(acc.maxima).unstack()
        maxima = maxima.rename_axis(["checkpoint", "kind"]).reset_index()
        table = recursion_table(maxima, constants, precision, dims)
        recursion.append(table.assign(**labels))
    return errors, recursion


def run_group(
    model: GPT2LMHeadModel,
    spec: GPT2Spec,
    alpha: float,
    precisions: Sequence[str],
    inputs: TokenInputs,
    seed: int,
    device: torch.device,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(errors, recursion) tables of one storage group at one α: every format of `precisions`
    (all held in one storage dtype) against one float64 reference, on token ids from `seed`."""
    group = [Precision.parse(name) for name in precisions]
    if len({p.storage for p in group}) != 1:
        raise ValueError(f"precisions {list(precisions)} do not share one storage format")
    errors, recursion = _run_tables(model, spec, alpha, group, inputs, seed, device)
    log.info("%s alpha=%g %s done", spec.name, alpha, "+".join(precisions))
    ids_columns = {"weights": spec.weights, "model": spec.name}
    return (
        select(pd.concat(errors, ignore_index=True).assign(**ids_columns), Gpt2Errors),
        select(pd.concat(recursion, ignore_index=True).assign(**ids_columns), Gpt2Recursion),
    )


def sources_table(
    model: GPT2LMHeadModel,
    spec: GPT2Spec,
    alpha: float,
    bits: int,
    inputs: TokenInputs,
    seed: int,
    device: torch.device,
) -> pd.DataFrame:
    """The recursion per rounding source: for every source alone (and all together), in
    float64 with that source's outputs rounded to `bits` bits, the measured error against its
    own terms of the worst-case bound and of the typical estimate, at every add."""
    group = [SourceRounding(source, bits) for source in ("all", *SOURCES)]
    _, recursion = _run_tables(model, spec, alpha, group, inputs, seed, device)
    table = pd.concat(recursion, ignore_index=True).rename(columns={"precision": "source"})
    log.info("%s alpha=%g sources at m%d done", spec.name, alpha, bits)
    return select(
        table.assign(weights=spec.weights, model=spec.name, mantissa_bits=bits), RecursionSources
    )


def _run_tables(
    model: GPT2LMHeadModel,
    spec: GPT2Spec,
    alpha: float,
    group: list[Arithmetic],
    inputs: TokenInputs,
    seed: int,
    device: torch.device,
) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """Errors and recursion tables, one per member of `group` (one storage dtype)."""
    ids = input_ids(spec, model.config.vocab_size, inputs, seed)
    # the reference's weights: the numbers the group stores, α included
    constants = [
        BlockConstants.of(block.cast(REFERENCE))
        for block in stored_blocks(model, group[0], alpha, torch.device("cpu"))
    ]
    model = model.to(device)
    dims = {
        "width": model.config.n_embd,
        "seq_len": inputs.seq_len,
        "act_lipschitz": activation_lipschitz(model.transformer.h[0].mlp.act),
    }
    accs = _run_group(model, ids, group, alpha, inputs.batch, device, constants, dims, seed)
    return _group_tables(accs, group, alpha, constants, dims)
