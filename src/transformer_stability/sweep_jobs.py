"""The body every sweep-chunk script shares: log to the rule's log, use the rule's threads and
the configured device, compute the chunk's items, write the chunk table; and, for a sweep
trained in segments, the body of a segment job and its checkpoints."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from transformer_stability.cpu_numerics import pin_cpu_numerics
from transformer_stability.device import resolve_device
from transformer_stability.logs import setup_logging
from transformer_stability.sweeps import run_chunk
from transformer_stability.tables import Table


def chunk_job(
    snakemake: Any,
    table_of: Callable[[Any, torch.device], pd.DataFrame | Mapping[str, pd.DataFrame]],
    model: type[Table] | Mapping[str, type[Table]],
    trains: bool = False,
) -> None:
    """Run `table_of(item, device)` for every item in `snakemake.params.chunk_items` and write the
    chunk table to the job's output, checked against `model`, the model of the table its sweep
    gathers; a rule with several named outputs gets a dict of tables {output name: table} from
    `table_of`, each written to its output, and `model` is a dict by output name too. A job
    that `trains` computes with the CPU code paths every host shares (cpu_numerics.py)."""
    setup_logging(snakemake.log[0])
    if trains:
        pin_cpu_numerics()
    torch.set_num_threads(snakemake.threads)
    device = resolve_device(snakemake.params.device)
    run_chunk(
        snakemake.params.chunk_items,
        lambda item: table_of(item, device),
        dict(snakemake.output.items()) if len(snakemake.output) > 1 else snakemake.output[0],
        str(device),
        model,
    )


def save_checkpoint(states: Mapping[str, Any], path: str | Path) -> None:
    """Write the chunk's states {item id: state} atomically: a killed job leaves none."""
    path = Path(path)
    part = path.with_name(f".{path.name}.part")
    torch.save(dict(states), part)
    os.replace(part, path)


def load_checkpoint(paths: Sequence[str]) -> dict[str, Any]:
    """The states {item id: state} a job resumes from, on the CPU ({} for a first segment:
    `paths` empty)."""
    return {k: v for path in paths for k, v in torch.load(path, map_location="cpu").items()}


def segment_job(snakemake: Any, advance: Callable[[Any, torch.device, int, Any], Any]) -> None:
    """Run `advance(item, device, segment, state)` (state None for the first segment) for every
    item of the chunk and write the states it returns to the job's checkpoint. Segments are
    trainings, computed with the CPU code paths every host shares (cpu_numerics.py)."""
    setup_logging(snakemake.log[0])
    pin_cpu_numerics()
    torch.set_num_threads(snakemake.threads)
    device = resolve_device(snakemake.params.device)
    resumed = load_checkpoint(snakemake.input.resume)
    segment = snakemake.params.segment
    states = {
        item.id: advance(item, device, segment, resumed.get(item.id))
        for item in snakemake.params.chunk_items
    }
    save_checkpoint(states, snakemake.output[0])
