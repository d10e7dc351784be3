"""Study N GPT-2 tables (N1-N4, N8) of one configured model."""

from __future__ import annotations

import pandas as pd
import torch

from transformer_stability.checkpoint import Checkpoint
from transformer_stability.numerics.gpt2 import GPT2Spec, build_gpt2
from transformer_stability.numerics.gpt2_runs import RunSettings, run_gpt2


def model_entry(numerics: dict, name: str) -> tuple[GPT2Spec, int]:
    """The configured GPT-2 whose identifier (e.g. 'random-gpt2') is `name`, and its index."""
    for index, entry in enumerate(numerics["models"]):
        spec = GPT2Spec.from_config(entry, key=f"numerics.models[{index}]")
        if spec.name == name:
            return spec, index
    raise KeyError(f"no entry of numerics.models is called {name!r}")


def gpt2_tables(
    numerics: dict,
    name: str,
    seed: int,
    device: torch.device,
    checkpoint: Checkpoint | None = None,
) -> dict[str, pd.DataFrame]:
    """errors, recursion and weights tables of one configured model."""
    spec, index = model_entry(numerics, name)
    model = build_gpt2(spec, torch.Generator().manual_seed(seed + index))
    inputs = numerics["inputs"]
    if inputs["seq_len"] > model.config.n_positions:
        raise ValueError(
            f"config key 'numerics.inputs.seq_len': {inputs['seq_len']} exceeds the "
            f"{model.config.n_positions} positions of {name}"
        )
    settings = RunSettings(
        alphas=tuple(numerics["alphas"]),
        precisions=tuple(numerics["precisions"]),
        seq_len=inputs["seq_len"],
        sequences=inputs["sequences"],
        batch=inputs["batch"],
        seed=seed,
    )
    errors, recursion, weights = run_gpt2(model, spec, settings, device, checkpoint)
    return {"errors": errors, "recursion": recursion, "weights": weights}
