"""The body every derived-table script shares: one measured table in, tables computed from it
out, each carrying the input's provenance (device, dtype, seed, versions) and the settings of
the input and of the rule, so a derived table is traceable like the table it comes from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, Table, columns_of

Derive = Callable[[pd.DataFrame, Mapping[str, Any]], Mapping[str, pd.DataFrame]]


def derived_job(
    snakemake: Any, source: type[Table], derive: Derive, models: Mapping[str, type[Table]]
) -> None:
    """Read the rule's input `table` (checked against `source`), call `derive(table,
    settings)` for {output name: table}, and write each to the output of that name, checked
    against `models[name]`."""
    setup_logging(snakemake.log[0])
    path = snakemake.input.table
    settings = derived_settings(snakemake.params.settings, [path])
    table = read_table(path, source)
    provenance = table[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
    for name, frame in derive(table, settings).items():
        output = getattr(snakemake.output, name)
        write_table(frame.assign(**provenance), output, models[name], settings)
