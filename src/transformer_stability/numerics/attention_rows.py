"""The softmax evaluation on a model's own attention rows (claim N.3 on a trained model).

N6 measures the evaluation error and its bound on synthetic rows whose sink mass is set by hand.
Here the rows are a GPT-2's: its logits q·k/√d_head, recomputed in float64 from the float32
queries and keys the model's forward produced, are evaluated shifted (as every implementation
does) in each format, and the error's 1-norm is set beside its bound and the row's tail mass
1 - p_max. Only a row's causal entries (query t sees t + 1 keys) enter it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from transformers import GPT2LMHeadModel

from transformer_stability.numerics import softmax
from transformer_stability.numerics.lowp import Format


def attention_logits(model: GPT2LMHeadModel, ids: torch.Tensor) -> list[torch.Tensor]:
    """Per block, the (sequences, heads, T, T) logits of every head (causal mask not applied),
    in float64 from the queries and keys of the model's own float32 forward on `ids`."""
    qkv: list[torch.Tensor] = []
    blocks = model.transformer.h
    hooks = [b.attn.c_attn.register_forward_hook(lambda m, a, out: qkv.append(out)) for b in blocks]
    try:
        with torch.no_grad():
            model.transformer(input_ids=ids)
    finally:
        for hook in hooks:
            hook.remove()
    logits = []
    for block, found in zip(blocks, qkv, strict=True):
        attn = block.attn
        q, k, _ = found.to(torch.float64).split(model.config.n_embd, dim=-1)
        q, k = (t.view(*ids.shape, attn.num_heads, -1).transpose(1, 2) for t in (q, k))
        logits.append(q @ k.transpose(-1, -2) * attn.scaling)  # as the config asks
    return logits


def row_evaluation(
    logits: Sequence[torch.Tensor], formats: Sequence[Format], first_row: int
) -> pd.DataFrame:
    """Per format, block, head, sequence and query t >= `first_row`: the row's tail mass (summed
    from the non-max entries, so no cancellation near p_max = 1), the 1-norm of its shifted
    evaluation's error and that norm's bound."""
    frames = []
    for block, scores in enumerate(logits):
        sequences, heads, length, _ = scores.shape
        for query in range(first_row, length):
            z = scores[..., query, : query + 1]
            p = torch.softmax(z, dim=-1)
            tail = p.scatter(-1, p.argmax(dim=-1, keepdim=True), 0.0).sum(dim=-1)
            cells = {
                "block": block,
                "query": query,
                "sequence": np.repeat(np.arange(sequences), heads),
                "head": np.tile(np.arange(heads), sequences),
                "tail_mass": tail.reshape(-1).numpy(),
            }
            for fmt in formats:
                error = (softmax.softmax_lowp(z, fmt, shifted=True) - p).abs().sum(dim=-1)
                bound = softmax.softmax_error_bound(z, fmt, shifted=True).sum(dim=-1)
                labels = {"format": fmt.name, "mantissa_bits": fmt.bits}
                values = {"measured": error.reshape(-1).numpy(), "bound": bound.reshape(-1).numpy()}
                frames.append(pd.DataFrame(cells | labels | values))
    return pd.concat(frames, ignore_index=True)
