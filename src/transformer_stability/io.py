"""Atomic writes: an interrupted job never leaves a half-written table or figure behind. A table
written or read with its model (a study's `tables` module) is checked against it: a computing bug
fails before anything is written, a truncated or hand-edited table stops the job reading it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from transformer_stability.settings import read_record, settings_text, sidecar
from transformer_stability.tables import (
    MAX_PROBLEMS,
    Table,
    TableError,
    below_results,
    meta,
    read_dtypes,
    table_problems,
    table_schema,
)

if TYPE_CHECKING:  # a table job (most jobs) never needs matplotlib
    from matplotlib.figure import Figure


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


def read_only(paths: Iterable[str | Path]) -> list[str]:
    """The folders that writing `paths` (files to write, or folders to write in) would need
    and this user may not write in: for each, the nearest folder at or above it that exists.
    Checked before a run, so that a read-only results tree is named up front instead of
    surfacing as a PermissionError in the middle of one."""
    blocked = set()
    for path in map(Path, paths):
        folder = path.parent if path.suffix else path
        existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
        if not os.access(existing, os.W_OK | os.X_OK):
            blocked.add(str(existing))
    return sorted(blocked)


def read_only_error(folders: Sequence[str]) -> str:
    """What to tell a user whose outputs would land in the read-only `folders`."""
    shown = ", ".join(folders[:MAX_PROBLEMS]) + (" ..." if len(folders) > MAX_PROBLEMS else "")
    return (
        f"cannot write the outputs: {shown} {'is' if len(folders) == 1 else 'are'} read-only "
        "for this user. Make them writable (e.g. `chmod -R u+w results`) or run in a copy "
        "(`snakemake --directory <writable copy>`)"
    )


def _target(path: Path) -> str:
    """The file as a Snakemake target names it (relative to the working directory)."""
    below = below_results(path)
    return str(path) if below is None else f"results/{below}"


def _what(model: type[Table], chunk: bool) -> str:
    where = f"{model.__name__} in {model.__module__.replace('.', '/')}.py"
    return f"chunk table of {where}" if chunk else where


def _rule(model: type[Table], chunk: bool) -> str:
    return "the chunk rule of its sweep" if chunk else f"rule {meta(model)['rule']}"


def error_text(
    path: Path, model: type[Table], problems: Sequence[str], *, writing: bool, chunk: bool
) -> str:
    """The one message a TableError carries: the file, every problem (at most MAX_PROBLEMS),
    and what to do. Deleting the file alone is not enough: Snakemake does not rebuild a missing
    intermediate table whose consumers are up to date, while `--forcerun` rebuilds it and
    reruns every job that reads it."""
    shown = list(problems[:MAX_PROBLEMS])
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more")
    listed = "\n".join(f"  - {p}" for p in shown)
    rule = _rule(model, chunk)
    if writing:
        return (
            f"refusing to write table {path}: {rule} computed a table that does not match its "
            f"model ({_what(model, chunk)}); nothing was written:\n{listed}"
        )
    return (
        f"table {path} is not valid ({_what(model, chunk)}):\n{listed}\n"
        f"It was truncated, edited by hand or made under another config: rebuild it and "
        f"everything that reads it with `snakemake --forcerun {_target(path)}` (plus "
        f"your usual --configfile/--profile options); {rule} rebuilds it."
    )


def _problems(
    table: pd.DataFrame,
    model: type[Table],
    config: Mapping[str, Any] | None,
    chunk: bool,
    line_offset: int | None = None,
    written: int | None = None,
) -> list[str]:
    """The model's problems with `table`, and its row count against the one `config` implies
    and against the `written` one its sidecar records."""
    expected = None if config is None or chunk else model.rows(config)
    problems = [
        f"{len(table)} rows, {'fewer' if len(table) < count else 'more'} than the {count} {source}"
        for count, source in ((expected, "the config implies"), (written, "written"))
        if count is not None and len(table) != count
    ]
    if len(table) == 0 and expected is None:
        problems.append("no rows (only a header)")
    return problems + table_problems(table, table_schema(model, chunk), line_offset)


def write_settings(
    path: str | Path, settings: Mapping[str, Any] | None, rows: int | None = None
) -> None:
    """Record beside `path` (a table or a figure) the settings that made it and, for a table,
    the rows written, atomically."""
    with atomic_path(sidecar(path)) as tmp:
        tmp.write_text(settings_text(settings, rows))


def write_table(
    table: pd.DataFrame,
    path: str | Path,
    model: type[Table] | None = None,
    settings: Mapping[str, Any] | None = None,
    *,
    chunk: bool = False,
) -> None:
    """Write a tidy table as CSV or Parquet (by suffix), atomically, as it is (nothing coerced).
    With `model`, check it first (with `settings`, the config slice the table was made under,
    also the row count the model derives from it; `chunk`: a sweep's chunk table of `model`,
    with its leading item column): an invalid table raises TableError and nothing is written.
    `settings` and the row count are recorded beside the table (settings.sidecar), written
    before it, so that a table is never there without the record of what made it."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"unsupported table format {path.suffix!r} (use .csv or .parquet)")
    if model is not None:
        problems = _problems(table, model, settings, chunk)
        if problems:
            raise TableError(error_text(path, model, problems, writing=True, chunk=chunk))
    write_settings(path, settings, len(table))
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)


def csv_problems(path: Path) -> list[str]:
    """What a CSV's bytes tell before pandas reads it: an empty file, or a last line without
    its newline (every table is written whole, so that file was cut short)."""
    size = path.stat().st_size
    if size == 0:
        return ["the file is empty (0 bytes)"]
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            return ["the file ends mid-row (no newline after its last line): it was cut short"]
    return []


def _read_csv(path: Path, model: type[Table], chunk: bool) -> tuple[pd.DataFrame, list[str]]:
    """The CSV as pandas reads it (text columns as text), with what its bytes tell."""
    problems = csv_problems(path)
    if problems[:1] == ["the file is empty (0 bytes)"]:
        raise TableError(error_text(path, model, problems, writing=False, chunk=chunk))
    try:
        table = pd.read_csv(path, dtype=read_dtypes(model, chunk))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        reason = " ".join(str(error).split())
        problems.append(f"pandas cannot parse it: {reason}")
        raise TableError(error_text(path, model, problems, writing=False, chunk=chunk)) from None
    if not isinstance(table.index, pd.RangeIndex):  # pandas took surplus fields as an index
        problems.append("its rows have more fields than its header")
        table = table.reset_index(drop=True)
    return table, problems


def read_table(
    path: str | Path,
    model: type[Table] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    chunk: bool = False,
) -> pd.DataFrame:
    """Read a tidy table; with `model`, check it as `write_table` does: a truncated, empty or
    hand-edited table raises TableError, which names the file, every problem and the rule
    that rebuilds it. The row count is checked against `config`, else against the settings
    recorded beside the table, if any, and against the rows recorded when it was written.
    Without a model, the table is read unchecked."""
    path = Path(path)
    record = read_record(path) if model is not None and sidecar(path).exists() else {}
    config = record.get("settings") if config is None else config
    if path.suffix == ".parquet":
        table, problems, offset = pd.read_parquet(path), [], None
    elif model is None:
        return pd.read_csv(path)
    else:
        (table, problems), offset = _read_csv(path, model, chunk), 2
    if model is not None:
        problems += _problems(table, model, config, chunk, offset, record.get("rows"))
        if problems:
            raise TableError(error_text(path, model, problems, writing=False, chunk=chunk))
    return table


def save_figure(fig: Figure, *paths: str | Path, png_dpi: int = 200) -> None:
    """Save `fig` once per path (format from the suffix: .pdf, .png, ...), each atomically.
    The layout is computed for the first file and kept for the others: it is in figure
    fractions, the same at every resolution, and a constrained layout is the slowest part of a
    save."""
    for path in map(Path, paths):
        kwargs = {"dpi": png_dpi} if path.suffix == ".png" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", **kwargs)
        fig.set_layout_engine("none")
