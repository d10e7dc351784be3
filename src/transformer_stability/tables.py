"""The shared layer of the tidy tables under results/: the base of every study's table model, the
provenance columns every table ends with, a sweep's chunk table, and pandera's failure cases
turned into short lines. Knows no study: each study states its tables in its own `tables` module
(one pandera DataFrameModel per table) and `registry.py` finds them by path.

A model states its columns in order with their dtype, range, allowed values, whether NaN is
allowed (`nullable`) and whether +-inf is (`metadata=INF`; refused otherwise), and, as its
Config metadata, its path below results/ and the rule that rebuilds it. Ranges are loose on
purpose: only what holds by construction; NaN or inf wherever the computation can produce it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

ITEM_COLUMN = "item"  # a chunk table's first column: the item of each row (sweeps.py)
INF = {"inf": True}  # Field metadata of a float column that may hold +-inf
MAX_PROBLEMS = 8


class TableError(ValueError):
    """A table does not match its model: the message names the file, what is wrong and the
    rule that rebuilds it."""


class Table(pa.DataFrameModel):
    """Base of every table model (checked through `table_schema`: exactly the declared columns,
    in order, then the provenance). Subclasses set `Config.metadata = {"path": ..., "rule":
    ...}` and, where the config fixes the row count without ambiguity, override `rows`."""

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int | None:
        """The row count `config` implies; None where it does not fix one."""
        return None


class Provenance(pa.DataFrameModel):
    """What every table records about how it was made (provenance.py), after its own columns;
    a table whose rows carry their own `seed` declares it among its columns."""

    seed: Series[int] = pa.Field(description="the base seed (or the row's own training seed)")
    device: Series[str] = pa.Field(description="the device that computed the rows")
    dtype: Series[str] = pa.Field(description="the floating-point format of the computation")
    versions: Series[str] = pa.Field(description="python and package versions, 'name=v;...'")


class Chunk(pa.DataFrameModel):
    """The column a sweep's chunk table holds before its gathered table's columns."""

    item: Series[str] = pa.Field(description="the sweep item of the row")


def below_results(path: str | Path) -> str | None:
    """The path below the last `results/` folder ("apjn/agreement.csv"), as a model states
    it; None for a path outside results/."""
    parts = Path(path).parts
    for k in reversed(range(len(parts))):
        if parts[k] == "results":
            return "/".join(parts[k + 1 :])
    return None


def meta(model: type[Table]) -> dict[str, str]:
    """The model's {"path": ..., "rule": ...}."""
    return model.__config__.metadata or {}


def result(model: type[Table]) -> str:
    """The model's table as rules, figures and claims name it: results/<its path>. The path
    is written once, on the model."""
    return f"results/{meta(model)['path']}"


def columns_of(model: type[Table]) -> list[str]:
    """The model's own columns in order (without the provenance columns appended to them)."""
    return list(model.to_schema().columns)


def select(frame: pd.DataFrame, model: type[Table]) -> pd.DataFrame:
    """The model's own columns of `frame`, in the model's order."""
    return frame[columns_of(model)]


def _finite(series: pd.Series) -> pd.Series:
    return ~np.isinf(series)


def _filled(series: pd.Series) -> pd.Series:
    return series != ""


def _column(column: pa.Column) -> pa.Column:
    """A model column as checked: a float column takes any real dtype (an integer-valued float
    column reads back as int64) and refuses +-inf unless marked INF; a text column that must
    be present refuses the empty text (written as an empty field, read back as NaN)."""
    checks = list(column.checks)
    kind = str(column.dtype)
    if kind == "float64" and not (column.metadata or {}).get("inf"):
        checks.append(pa.Check(_finite, name="finite", error="infinite values"))
    elif kind.startswith("str") and not column.nullable:
        checks.append(pa.Check(_filled, name="not_empty", error="empty text"))
    checked = column.set_checks(checks)
    checked.coerce = kind == "float64"  # a copy for the check only: tables are written as is
    return checked


@cache
def table_schema(model: type[Table], chunk: bool = False) -> pa.DataFrameSchema:
    """The schema a table of `model` is checked against: its columns, then the provenance
    columns it does not declare; for a sweep's chunk table (`chunk`), the item column first."""
    own = dict(model.to_schema().columns)
    columns = {
        **(dict(Chunk.to_schema().columns) if chunk else {}),
        **own,
        **{n: c for n, c in Provenance.to_schema().columns.items() if n not in own},
    }
    return pa.DataFrameSchema(
        {name: _column(column) for name, column in columns.items()},
        strict=True,
        ordered=True,
        name=model.__name__,
    )


def read_dtypes(model: type[Table], chunk: bool = False) -> dict[str, type]:
    """What a reader passes to pandas: text columns stay text (a number-like text such as '1'
    would otherwise be read as a number)."""
    columns = table_schema(model, chunk).columns
    return {name: str for name, c in columns.items() if str(c.dtype).startswith("str")}


# --- problems --------------------------------------------------------------------------------


def _rows_text(index: np.ndarray, offset: int | None) -> str:
    """'3 rows, first at row 93 (line 95 of the file)'."""
    first = int(index[0])
    where = f"row {first}" + (f" (line {first + offset} of the file)" if offset else "")
    return f"{len(index)} row{'s' if len(index) > 1 else ''}, first at {where}"


def _plural(word: str, names: list[str]) -> str:
    return f"{word}{'s' if len(names) > 1 else ''} {names}"


def _column_problems(cases: pd.DataFrame, schema: pa.DataFrameSchema) -> list[str]:
    """Missing, unexpected and misordered columns: reported alone, the rest would be noise."""
    wanted = list(schema.columns)
    missing = cases.loc[cases["check"] == "column_in_dataframe", "failure_case"].tolist()
    extra = cases.loc[cases["check"] == "column_in_schema", "failure_case"].tolist()
    text = []
    if missing:
        text.append(f"missing {_plural('column', missing)}")
    if extra:
        text.append(f"unexpected {_plural('column', extra)}")
    if text:
        return [" and ".join(text) + f" (expected {wanted})"]
    if (cases["check"] == "column_ordered").any():
        return [f"columns out of order, expected {wanted}"]
    return []


_CHECK_TEXTS = {
    "greater_than_or_equal_to": lambda s: f"values < {s['min_value']:g}",
    "greater_than": lambda s: f"values <= {s['min_value']:g}",
    "less_than_or_equal_to": lambda s: f"values > {s['max_value']:g}",
    "less_than": lambda s: f"values >= {s['max_value']:g}",
    "in_range": lambda s: f"values outside [{s['min_value']:g}, {s['max_value']:g}]",
    "isin": lambda s: f"values not one of {list(s['allowed_values'])}",
}


def _check_text(check: str, column: pa.Column) -> str:
    """What a failed check means, e.g. 'values < 0' for greater_than_or_equal_to(0)."""
    for known in column.checks:
        if check in (known.error, known.name):
            if known.name in _CHECK_TEXTS:
                return _CHECK_TEXTS[known.name](known.statistics)
            return known.error or known.name
    return f"values failing {check}"


def _dtype_problem(series: pd.Series, column: pa.Column, offset: int | None) -> str:
    """A column of the wrong dtype; for an integer column, a missing value (which makes pandas
    read integers as floats) is the problem to report."""
    missing = np.flatnonzero(series.isna().to_numpy())
    if str(column.dtype).startswith("int") and len(missing):
        where = _rows_text(missing, offset)
        return f"column '{series.name}' has missing values (empty or NaN): {where}"
    return f"column '{series.name}' should hold {column.dtype}, found {series.dtype}"


def table_problems(
    table: pd.DataFrame, schema: pa.DataFrameSchema, line_offset: int | None = None
) -> list[str]:
    """Everything in `table` that `schema` refuses, one short line per column and check: what
    is wrong, an offending value, how many rows and the first (as a file line with
    `line_offset`, 2 for a CSV with a header). Empty: the table is valid."""
    try:
        schema.validate(table, lazy=True)
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
    else:
        return []
    structural = _column_problems(cases, schema)
    if structural:
        return structural
    typed = cases["check"].str.startswith(("dtype(", "coerce_dtype("))
    problems = [
        _dtype_problem(table[column], schema.columns[column], line_offset)
        for column in cases.loc[typed, "column"].unique()
    ]
    valued = cases[~typed & ~cases["column"].isin(cases.loc[typed, "column"])]
    for (column, check), group in valued.groupby(["column", "check"], sort=False):
        located = group.dropna(subset="index").sort_values("index")
        rows = located["index"].astype(int).to_numpy()
        where = _rows_text(rows, line_offset) if len(rows) else "the whole column"
        if check == "not_nullable":
            problems.append(f"column '{column}' has missing values (empty or NaN): {where}")
            continue
        value = (located if len(rows) else group)["failure_case"].iloc[0]
        value = value.item() if isinstance(value, np.generic) else value
        what = _check_text(check, schema.columns[column])
        problems.append(f"column '{column}' has {what} (e.g. {value!r}): {where}")
    return problems


__all__ = [
    "INF",
    "ITEM_COLUMN",
    "MAX_PROBLEMS",
    "Chunk",
    "Provenance",
    "Table",
    "TableError",
    "below_results",
    "columns_of",
    "meta",
    "read_dtypes",
    "select",
    "table_problems",
    "table_schema",
]
