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
from transformer_stability.numerics.items import TokenInputs
from transformer_stability.numerics.metrics import (
    ERROR_METRICS,
    QUANTILES,
    activation_lipschitz,
    layer_norm_lipschitz,
    quantiles,
    stream_sizes,
    token_errors,
    weight_magnitudes,
)
from transformer_stability.numerics.rounding import Precision
from transformer_stability.numerics.spec import GPT2Spec

log = logging.getLogger(__name__)
REFERENCE = Precision.parse("fp64")
RUN_COLUMNS = ["weights", "model", "precision", "alpha", "checkpoint", "kind"]
ERROR_COLUMNS = [*RUN_COLUMNS, "metric", *QUANTILES]
RECURSION_COLUMNS = [*RUN_COLUMNS, "measured", "bound", "growth", "local"]
WEIGHT_COLUMNS = ["weights", "model", "block", "quantity", "value"]


def token_ids(vocab: int, sequences: int, seq_len: int, seed: int) -> torch.Tensor:
    """Synthetic token ids, uniform over the vocabulary (the offline default input)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(vocab, (sequences, seq_len), generator=generator)


def weights_table(model: GPT2LMHeadModel, spec: GPT2Spec) -> pd.DataFrame:
    """ω_OV, ω_UD, ω_KQ per block (α = 1, float32 weights), long format."""
    rows = []
    for block in stored_blocks(model, Precision.parse("fp32"), 1.0, torch.device("cpu")):
        rows.append(weight_magnitudes(block))
    table = pd.DataFrame(rows).rename_axis("block").reset_index()
    table = table.melt(id_vars="block", var_name="quantity", value_name="value")
    return table.assign(weights=spec.weights, model=spec.name)[WEIGHT_COLUMNS]


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
    ref: ResidualAdd, previous: torch.Tensor, block: BlockWeights
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Stream sizes (N2) and the recursion's per-token inputs: they depend on the float64
    reference alone, so one computation serves every format of a group."""
    gain = (block.ln_1 if ref.kind == "attn" else block.ln_2)[0]
    worst = {
        "ln_lipschitz": layer_norm_lipschitz(previous, gain, block.eps),
        "stream_linf": ref.stream.abs().amax(dim=-1),
        "normed_linf": ref.normed.abs().amax(dim=-1),
    }
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
    for name, values in worst.items():
        acc.worst(key, name, values)


def _run_group(
    model: GPT2LMHeadModel,
    ids: torch.Tensor,
    precisions: list[Precision],
    alpha: float,
    batch_size: int,
    device: torch.device,
) -> dict[str, _Accumulator]:
    """Test runs that store the same numbers (one storage dtype) share one float64 reference."""
    storage = precisions[0]
    tests = [stored_blocks(model, p, alpha, device) for p in precisions]
    ref_blocks = [block.cast(REFERENCE) for block in tests[0]]
    accs = {p.name: _Accumulator() for p in precisions}
    with torch.no_grad():
        for batch in ids.split(batch_size):
            h0 = storage.store(embed(model, batch.to(device)).float())
            previous = h0.to(torch.float64)
            streams = [residual_stream(b, h0, p) for b, p in zip(tests, precisions, strict=True)]
            for ref, *outs in zip(
                residual_stream(ref_blocks, previous, REFERENCE), *streams, strict=True
            ):
                sizes, worst = _reference_statistics(ref, previous, ref_blocks[ref.block])
                for precision, test in zip(precisions, outs, strict=True):
                    _observe(accs[precision.name], ref, test, sizes, worst)
                previous = ref.stream
    return accs


def recursion_bound(
    maxima: pd.DataFrame, omegas: pd.DataFrame, alpha: float, precision: Precision, dims: dict
) -> pd.DataFrame:
    """The first-order error recursion along the residual adds, worst case over tokens.

    e_k = (1 + α·ω_k·Lip_k)·e_{k−1} + r_k with Lip_k the LayerNorm (× activation) Lipschitz
    bound ∝ c/σ(h_{k−1}) and r_k = u‖h_k‖∞ + α·γ_n·ω_k·‖LN(h_{k−1})‖∞, γ_n = n·u, n the
    sublayer's longest inner product. ω_k is ω_OV after attention and ω_UD after the MLP. A
    form r_k ≲ u(‖h‖ + αγ_nω‖LN(h)‖) would count u twice: γ_n already carries it. The
    recursion freezes the attention pattern (no ω_KQ term); see docs/numerics.md.
    """
    u = precision.unit_roundoff
    bound, rows = 0.0, []
    for row in maxima.sort_values("checkpoint").itertuples():
        block = (row.checkpoint - 1) // 2
        attn = row.kind == "attn"
        omega = omegas.loc[block, "omega_ov" if attn else "omega_ud"]
        lipschitz = row.ln_lipschitz * (1.0 if attn else dims["act_lipschitz"])
        inner = max(dims["width"], dims["seq_len"]) if attn else 4 * dims["width"]
        local = u * row.stream_linf + alpha * inner * u * omega * row.normed_linf
        bound = (1 + alpha * omega * lipschitz) * bound + local
        rows.append(
            {
                "checkpoint": row.checkpoint,
                "kind": row.kind,
                "measured": row.measured,
                "bound": bound,
                "growth": 1 + alpha * omega * lipschitz,
                "local": local,
            }
        )
    return pd.DataFrame(rows)


def _group_tables(
    accs: dict[str, _Accumulator], group: list[Precision], alpha: float, omegas, dims: dict
) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    errors, recursion = [], []
    for precision in group:
        acc = accs[precision.name]
        labels = {"precision": precision.name, "alpha": alpha}
        errors.append(pd.DataFrame(acc.quantile_rows()).assign(**labels))
        maxima = pd.Series(acc.maxima).unstack()
        maxima = maxima.rename_axis(["checkpoint", "kind"]).reset_index()
        recursion.append(recursion_bound(maxima, omegas, alpha, precision, dims).assign(**labels))
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
    ids = token_ids(model.config.vocab_size, inputs.sequences, inputs.seq_len, seed)
    weights = weights_table(model, spec)
    omegas = weights.pivot(index="block", columns="quantity", values="value")
    model = model.to(device)
    dims = {
        "width": model.config.n_embd,
        "seq_len": inputs.seq_len,
        "act_lipschitz": activation_lipschitz(model.transformer.h[0].mlp.act),
    }
    accs = _run_group(model, ids, group, alpha, inputs.batch, device)
    errors, recursion = _group_tables(accs, group, alpha, omegas, dims)
    log.info("%s alpha=%g %s done", spec.name, alpha, "+".join(precisions))
    ids_columns = {"weights": spec.weights, "model": spec.name}
    return (
        pd.concat(errors, ignore_index=True).assign(**ids_columns)[ERROR_COLUMNS],
        pd.concat(recursion, ignore_index=True).assign(**ids_columns)[RECURSION_COLUMNS],
    )
