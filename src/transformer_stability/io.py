"""Atomic writes: an interrupted job never leaves a half-written table or figure behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
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


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a tidy table as CSV or Parquet (by suffix), atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        elif path.suffix == ".csv":
            table.to_csv(tmp, index=False)
        else:
            raise ValueError(f"unsupported table format {path.suffix!r} (use .csv or .parquet)")


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def save_figure(fig: Figure, *paths: str | Path, png_dpi: int = 200) -> None:
    """Save `fig` once per path (format from the suffix: .pdf, .png, ...), each atomically."""
    for path in map(Path, paths):
        kwargs = {"dpi": png_dpi} if path.suffix == ".png" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", **kwargs)
