"""A data rule's settings as one of its input files, so that a changed setting reruns the rule
from the results alone.

Snakemake reruns a job whose parameters changed only while its metadata (`.snakemake/`) is there:
results copied elsewhere (a cluster's back to a laptop), or run under another preset after such
a copy, would otherwise stay as they are under the new configuration. The tables themselves
record the settings that made them (settings.py), so while the workflow is parsed each data job
gets an input `results/settings/<its first output>.json` holding its current settings, whose
modification time says whether its tables are stale:
- now, when a table the job writes exists and records other values for the job's keys (or none):
  an input newer than the outputs, so Snakemake reruns the job and what depends on it;
- the epoch otherwise, so that the file itself never triggers anything (a dry run under another
  preset, then a run under the first again, reruns nothing).
Missing outputs need no trigger: the job runs for them anyway.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from transformer_stability.io import atomic_path
from transformer_stability.settings import (
    Settings,
    SettingsError,
    leaves,
    read_settings,
    settings_text,
    value_at,
)
from transformer_stability.tables import below_results

FOLDER = "results/settings"


def made_under_other_settings(tables: Iterable[str | Path], settings: Settings) -> bool:
    """Whether any of `tables` that exists records values other than `settings` at its keys,
    or no valid settings at all (made by an older workflow, or its record lost)."""
    for table in tables:
        if not Path(table).exists():
            continue
        try:
            recorded = read_settings(table)
        except SettingsError:
            return True
        if any(value_at(recorded, key) != value for key, value in leaves(settings)):
            return True
    return False


def settings_path(output: str | Path) -> str:
    """Where the settings input of the job writing `output` lies."""
    return f"{FOLDER}/{below_results(output) or Path(output).name}.json"


def settings_input(path: str | Path, settings: Settings, stale: bool) -> list[str]:
    """Write `settings` to `path` (only where its text differs) and date it now if `stale`,
    else at the epoch; [the path], for a rule's input. Where results/ is read-only nothing is
    written (and a file that is not there is no input): the run's preflight stops with a clear
    message before any job."""
    path = Path(path)
    text = settings_text(settings)
    try:
        if not path.exists() or path.read_text() != text:
            with atomic_path(path) as part:
                part.write_text(text)
        stamp = time.time() if stale else 0.0
        os.utime(path, (stamp, stamp))
    except PermissionError:
        pass
    return [str(path)] if path.exists() else []


def record_settings(
    path: str | Path, settings: Settings, tables: Iterable[str | Path]
) -> list[str]:
    """The settings record of a job whose `tables` tell whether `settings` changed, written and
    dated (`settings_input`)."""
    return settings_input(path, settings, made_under_other_settings(tables, settings))
