"""What a table depends on in the configuration, and the record of it beside the table.

Each data rule declares once, in its study, the config keys its outputs depend on (dotted paths
such as `"counting.theory.widths"`); `config_slice` cuts that slice out of the resolved config,
shaped like the config. The slice is the rule's `settings` parameter, so Snakemake reruns the
rule when one of those keys changes, and it is all the rule's code may read: a key left out of
the declaration is missing, not silently read. Every table records the slice that made it in a
sidecar `<table>.settings.json` (with a short hash), so that a figure is captioned from the
configuration of its own tables, not from whatever run came last. The sidecar of a table also
records how many rows were written (a sweep's chunk tables and the claims, made under no
settings of their own, record only that), so that a table cut short at a row boundary, which
still parses, is refused when read.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

Settings = dict[str, Any]
HASH_LENGTH = 12


class SettingsError(ValueError):
    """Settings cannot be read, or tables made under different settings are used together."""


def config_slice(config: Mapping[str, Any], keys: Iterable[str]) -> Settings:
    """A copy of the part of `config` at the dotted key paths `keys`, nested as in the config
    (a key inside a section that is in `keys` adds nothing)."""
    out: Settings = {}
    for key in sorted(set(keys)):
        if any(covers([other], key) for other in keys if other != key):
            continue
        *parents, leaf = key.split(".")
        source, target = config, out
        for part in parents:
            source, target = source[part], target.setdefault(part, {})
        target[leaf] = copy.deepcopy(source[leaf])
    return out


def leaves(settings: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf: a value that is not a mapping (a list is a leaf)."""
    for key, value in settings.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            yield from leaves(value, path)
        else:
            yield path, value


def covers(keys: Iterable[str], leaf: str) -> bool:
    """Whether a slice of `keys` holds the config key `leaf` (itself or a section above it)."""
    return any(leaf == key or leaf.startswith(f"{key}.") for key in keys)


def settings_hash(settings: Mapping[str, Any]) -> str:
    """A short hash of the settings, the same for the same values whatever the key order."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH]


def merge_settings(named: Mapping[str, Mapping[str, Any]]) -> Settings:
    """One slice from several (by the name of the table that recorded each), refusing a key on
    which two of them disagree: those tables were made under different configurations."""
    merged: Settings = {}
    origin: dict[str, str] = {}
    for name, settings in named.items():
        for key, value in leaves(settings):
            if key in origin and (first := value_at(merged, key)) != value:
                raise SettingsError(
                    f"tables {origin[key]} and {name} were made under different configurations: "
                    f"config key '{key}' is {first!r} in one, {value!r} in the other; "
                    "rerun the workflow for one configuration"
                )
            origin.setdefault(key, name)
            _put(merged, key, value)
    return merged


def value_at(settings: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of `settings` (or of a config); None where it has none."""
    for part in key.split("."):
        if not isinstance(settings, Mapping) or part not in settings:
            return None
        settings = settings[part]
    return settings


def _put(settings: Settings, key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    for part in parents:
        settings = settings.setdefault(part, {})
    settings[leaf] = value


def sidecar(table: str | Path) -> Path:
    """Where the settings of a table are recorded: `results/counting/geometry.settings.json`."""
    table = Path(table)
    return table.with_name(f"{table.stem}.settings.json")


def settings_text(settings: Mapping[str, Any] | None, rows: int | None = None) -> str:
    """The sidecar's content: the settings and their hash (if any), the rows written (if
    given)."""
    record: dict[str, Any] = {} if rows is None else {"rows": rows}
    if settings is not None:
        record |= {"hash": settings_hash(settings), "settings": settings}
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def read_record(table: str | Path) -> dict[str, Any]:
    """The sidecar of `table` (its "settings" and "rows", each where recorded), read and
    checked; SettingsError if it is missing or invalid."""
    path = sidecar(table)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise SettingsError(
            f"table {table} has no settings record {path.name}: it was made by an older version "
            f"of the workflow; rebuild it with `snakemake --forcerun {table}`"
        ) from None
    except json.JSONDecodeError as error:
        raise SettingsError(f"settings record {path} is not valid JSON: {error}") from None
    if "settings" in record and record.get("hash") != settings_hash(record["settings"]):
        raise SettingsError(f"settings record {path} does not match its hash: edited by hand?")
    return record


def read_settings(table: str | Path) -> Settings:
    """The settings recorded beside `table`; SettingsError if there is no valid record."""
    record = read_record(table)
    if "settings" not in record:
        raise SettingsError(f"{sidecar(table)} records no settings (only the rows of {table})")
    return record["settings"]


def tables_settings(tables: Mapping[str, str | Path]) -> Settings:
    """The merged settings of the tables (by their path), refused where they disagree."""
    return merge_settings({str(path): read_settings(path) for path in tables.values()})


def derived_settings(own: Mapping[str, Any], tables: Iterable[str | Path]) -> Settings:
    """The settings of a table computed from other tables: its rule's own slice with those the
    input tables record (refused where they disagree)."""
    named = {str(path): read_settings(path) for path in tables}
    return merge_settings({**named, "of the rule's own settings": own})
