"""Atomic writes: an interrupted job never leaves a half-written table or figure behind; tables
are checked against their schemas (table_schemas.py) when written and when read."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from transformer_stability.table_schemas import (
    TableError,
    check_table,
    csv_problems,
    error_text,
    read_dtypes,
    schema_for,
)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `path`; move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_table(
    table: pd.DataFrame, path: str | Path, config: Mapping[str, Any] | None = None
) -> None:
    """Write a tidy table as CSV or Parquet (by suffix), atomically, after checking it against
    the schema of its path (with `config`, also its row count): an invalid table raises
    TableError and nothing is written."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"unsupported table format {path.suffix!r} (use .csv or .parquet)")
    check_table(table, path, config, writing=True)
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)


def read_table(path: str | Path, config: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Read a tidy table and check it against the schema of its path (with `config`, also its
    row count): a truncated, empty or hand-edited table raises TableError, which names the file
    and the rule that rebuilds it. A path without a schema is read unchecked."""
    path = Path(path)
    schema = schema_for(path)
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
        check_table(table, path, config)
        return table
    if schema is None:
        return pd.read_csv(path)
    problems = csv_problems(path)
    if problems[:1] == ["the file is empty (0 bytes)"]:
        raise TableError(error_text(path, schema, problems, False))
    try:
        table = pd.read_csv(path, dtype=read_dtypes(schema))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        reason = " ".join(str(error).split())
        raise TableError(
            error_text(path, schema, [*problems, f"pandas cannot parse it: {reason}"], False)
        ) from None
    if not isinstance(table.index, pd.RangeIndex):  # pandas took surplus fields as an index
        problems.append("its rows have more fields than its header")
        table = table.reset_index(drop=True)
    check_table(table, path, config, line_offset=2, extra_problems=problems)
    return table


def save_figure(fig: Figure, *paths: str | Path, png_dpi: int = 200) -> None:
    """Save `fig` once per path (format from the suffix: .pdf, .png, ...), each atomically."""
    for path in map(Path, paths):
        kwargs = {"dpi": png_dpi} if path.suffix == ".png" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", **kwargs)
