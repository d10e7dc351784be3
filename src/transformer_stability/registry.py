"""Every paper figure of the pipeline, by name, and every tidy table, by its path below results/.
Each is declared once, in its study (a figure beside its plot function in the study's figures
module, a table as a model in the study's tables module); `rule all`, the plot rule, the report,
the gather and figure jobs, the tests, the README and docs/tables.md follow this registry."""

from __future__ import annotations

from pathlib import Path

from transformer_stability.apjn import tables as _apjn_tables
from transformer_stability.apjn.figures import FIGURES as _APJN
from transformer_stability.counting import tables as _counting_tables
from transformer_stability.counting.figures import FIGURES as _COUNTING
from transformer_stability.numerics import tables as _numerics_tables
from transformer_stability.numerics.figures import FIGURES as _NUMERICS
from transformer_stability.plotting import FigureSpec
from transformer_stability.tables import Table, below_results, meta

FIGURES: dict[str, FigureSpec] = {f.name: f for f in (*_APJN, *_NUMERICS, *_COUNTING)}
STUDIES = ("apjn", "numerics", "counting")
TABLES: dict[str, type[Table]] = {
    meta(model)["path"]: model
    for study in (_apjn_tables, _numerics_tables, _counting_tables)
    for model in study.TABLES
}


def table_model(path: str | Path) -> type[Table] | None:
    """The model of the table at `path`, found by its path below the last `results/` folder
    (.csv or .parquet); None for a path without one (a sweep's chunk table among them)."""
    below = below_results(Path(path).with_suffix(".csv"))
    return None if below is None else TABLES.get(below)


def study_figures(study: str) -> list[FigureSpec]:
    """The figures of one study, in declaration order."""
    return [figure for figure in FIGURES.values() if figure.study == study]
