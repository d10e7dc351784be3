"""Study N GPT-2 tables (N1-N4, N8, N9), one item at a time: the errors and recursion tables of
one (model, α, storage group), the weights and attention-sink tables of one model."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
import torch
from transformers import GPT2LMHeadModel

from transformer_stability.numerics.gpt2 import build_gpt2
from transformer_stability.numerics.gpt2_runs import (
    attention_table,
    run_group,
    sources_table,
    weights_table,
)
from transformer_stability.numerics.items import (
    AttentionItem,
    GroupItem,
    SourcesItem,
    WeightsItem,
)
from transformer_stability.numerics.spec import GPT2Spec


@lru_cache(maxsize=1)
def gpt2_model(spec: GPT2Spec, seed: int) -> GPT2LMHeadModel:
    """The model of `spec`, random weights drawn from `seed` (an item's `model_seed`). Cached:
    the items of one model in one chunk job build it once."""
    return build_gpt2(spec, torch.Generator().manual_seed(seed))


def group_tables(item: GroupItem, device: torch.device) -> dict[str, pd.DataFrame]:
    """errors and recursion tables of one (model, α, storage group)."""
    model = gpt2_model(item.spec, item.model_seed)
    if item.inputs.seq_len > model.config.n_positions:
        raise ValueError(
            f"config key 'numerics.inputs.seq_len': {item.inputs.seq_len} exceeds the "
            f"{model.config.n_positions} positions of {item.spec.name}"
        )
    errors, recursion = run_group(
        model, item.spec, item.alpha, item.precisions, item.inputs, item.seed, device
    )
    return {"errors": errors, "recursion": recursion}


def sources_rows(item: SourcesItem, device: torch.device) -> pd.DataFrame:
    """The recursion per rounding source of one model."""
    model = gpt2_model(item.spec, item.model_seed)
    return sources_table(model, item.spec, item.alpha, item.bits, item.inputs, item.seed, device)


def weights_rows(item: WeightsItem, device: torch.device) -> pd.DataFrame:
    """ω_OV, ω_UD, ω_KQ per block of one model (computed on the CPU: a few norms)."""
    return weights_table(gpt2_model(item.spec, item.model_seed), item.spec)


def attention_rows(item: AttentionItem, device: torch.device) -> pd.DataFrame:
    """The sink statistics of one model's attention rows on its input."""
    model = gpt2_model(item.spec, item.model_seed)
    return attention_table(model, item.spec, item.inputs, item.seed, device)
