"""The body every sweep-chunk script shares: log to the rule's log, use the rule's threads and
the configured device, compute the chunk's items, write the chunk table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import torch

from transformer_stability.device import resolve_device
from transformer_stability.logs import setup_logging
from transformer_stability.sweeps import run_chunk
from transformer_stability.tables import Table


def chunk_job(
    snakemake: Any,
    table_of: Callable[[Any, torch.device], pd.DataFrame | Mapping[str, pd.DataFrame]],
    model: type[Table] | Mapping[str, type[Table]],
) -> None:
    """Run `table_of(item, device)` for every item in `snakemake.params.chunk_items` and write the
    chunk table to the job's output, checked against `model`, the model of the table its sweep
    gathers; a rule with several named outputs gets a dict of tables {output name: table} from
    `table_of`, each written to its output, and `model` is a dict by output name too."""
    setup_logging(snakemake.log[0])
    torch.set_num_threads(snakemake.threads)
    device = resolve_device(snakemake.params.device)
    run_chunk(
        snakemake.params.chunk_items,
        lambda item: table_of(item, device),
        dict(snakemake.output.items()) if len(snakemake.output) > 1 else snakemake.output[0],
        str(device),
        model,
    )
