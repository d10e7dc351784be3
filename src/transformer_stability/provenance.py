"""What every results table records about how it was made: seed, device, dtype, versions."""

from __future__ import annotations

import platform
from importlib import metadata

import pandas as pd

_PACKAGES = ("transformer-stability", "numpy", "scipy", "pandas", "torch", "timm", "transformers")


def package_versions() -> str:
    """Installed versions of the packages that can change a number, as 'name=version;...'."""
    found = [f"python={platform.python_version()}"]
    for name in _PACKAGES:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ";".join(found)


def with_provenance(table: pd.DataFrame, *, seed: int, device: str, dtype: str) -> pd.DataFrame:
    """Append the provenance columns (constant per table) after the study's own columns.

    A table whose rows carry their own `seed` (one training run per seed) keeps it: those are
    the seeds the rows were made with, derived from the base seed `seed`.
    """
    out = table.copy()
    if "seed" not in out:
        out["seed"] = seed
    out["device"] = device
    out["dtype"] = dtype
    out["versions"] = package_versions()
    return out
