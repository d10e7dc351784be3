"""The body of every data rule that is not a sweep chunk (those are `sweep_jobs`): log to the
rule's log, read the named input tables, compute, and write each output table checked against
its model, with its provenance and the settings that made it. Torch-free, so that a job that
derives a table from tables starts without loading torch.

A table computed here from the config (a theory table) records that it was computed on the CPU
in float64 from the run's base seed; a table derived from one measured table carries that
table's provenance (device, dtype, seed, versions), so it is traceable like the table it comes
from. Its settings are the rule's own slice merged with those its input tables record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from transformer_stability.cpu_numerics import pin_cpu_numerics
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, Table, columns_of

Tables = Mapping[str, pd.DataFrame]
Compute = Callable[[Tables, Mapping[str, Any]], pd.DataFrame | Tables]


def table_job(
    snakemake: Any,
    compute: Compute,
    outputs: type[Table] | Mapping[str, type[Table]],
    inputs: Mapping[str, type[Table]] | None = None,
    carry: str | None = None,
    dtype: str = "float64",
    trains: bool = False,
) -> None:
    """Read the rule's input tables named in `inputs` (each checked against its model), call
    `compute(tables, settings)` and write what it returns: one table to the rule's only output
    where `outputs` is one model, else {output name: table}, each checked against
    `outputs[name]`. With `carry` (an input's name) the outputs carry that input's provenance;
    without, they record a CPU computation in `dtype` from the run's seed. A job that `trains`
    computes with the CPU code paths every host shares (cpu_numerics.py)."""
    setup_logging(snakemake.log[0])
    if trains:
        pin_cpu_numerics()
    paths = {name: getattr(snakemake.input, name) for name in inputs or {}}
    own = snakemake.params.settings
    settings = derived_settings(own, list(paths.values())) if paths else own
    tables = {name: read_table(path, (inputs or {})[name]) for name, path in paths.items()}
    computed = compute(tables, settings)
    if isinstance(outputs, Mapping):
        written = {name: (getattr(snakemake.output, name), outputs[name]) for name in computed}
        frames = dict(computed)
    else:
        written, frames = {0: (snakemake.output[0], outputs)}, {0: computed}
    for name, (path, model) in written.items():
        frame = _with_provenance(frames[name], settings, tables[carry] if carry else None, dtype)
        write_table(frame, path, model, settings)


def _with_provenance(
    frame: pd.DataFrame, settings: Mapping[str, Any], source: pd.DataFrame | None, dtype: str
) -> pd.DataFrame:
    """`frame` with the provenance of `source`, or of a CPU computation in `dtype`."""
    if source is None:
        return with_provenance(frame, seed=settings["seed"], device="cpu", dtype=dtype)
    provenance = source[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
    return frame.assign(**provenance)
