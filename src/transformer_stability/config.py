"""Validate the pipeline config against its JSON schema before any job runs.

The config is checked against the schema with the schema's defaults filled in (as Snakemake's
`validate` does), and every violation is listed in our words instead of only the first. Errors
name the offending key as a dotted path (``apjn.variants[1].alpha``) and, for enums,
the allowed values, so a typo in a preset stops the run with one readable message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError, validators
from snakemake.exceptions import WorkflowError


class ConfigError(ValueError):
    """The config does not satisfy the schema or a cross-key constraint."""


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _describe(error: ValidationError) -> str:
    key = _key(error.absolute_path)
    if error.validator == "enum":
        return f"config key '{key}': {error.instance!r} is not allowed; allowed values: " + (
            ", ".join(repr(v) for v in error.validator_value)
        )
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"config key '{key}': {error.message}; allowed keys: {', '.join(allowed)}"
    if error.validator == "not":
        return f"config key '{key}': ln takes no alpha (only derf and dyt do)"
    return f"config key '{key}': {error.message}"


def may_use_gpu(device: str) -> bool:
    """Whether jobs may run on a GPU: `cuda`, or `auto` on a machine with an NVIDIA driver
    (read without importing torch, so that planning a run stays fast)."""
    return device == "cuda" or (device == "auto" and Path("/dev/nvidiactl").exists())


def load_schema(path: str | Path) -> dict[str, Any]:
    """The schema, read with libyaml where it is installed: it is a thousand lines, which
    pure-Python YAML took half a second to read at every Snakemake start."""
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _fill_defaults(validator, properties, instance, schema) -> Iterator[ValidationError]:
    """The `properties` keyword, first setting each absent property that has a default to a
    copy of it (jsonschema's documented way to fill defaults while validating)."""
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if "default" in subschema:
                instance.setdefault(name, copy.deepcopy(subschema["default"]))
    check = Draft202012Validator.VALIDATORS["properties"]
    yield from check(validator, properties, instance, schema)


_DefaultsValidator = validators.extend(Draft202012Validator, {"properties": _fill_defaults})


def validate_config(
    config: dict[str, Any],
    schema_path: str | Path,
    checks: Iterable[Callable[[dict[str, Any]], list[str]]] = (),
) -> dict[str, Any]:
    """Fill defaults into `config` in place and check it against the schema, then against
    `checks` (constraints between keys, which a JSON schema cannot express readably: each
    returns its messages, naming the key); raise ConfigError listing every problem. Returns
    the same dict for convenience."""
    errors = _DefaultsValidator(load_schema(schema_path)).iter_errors(config)
    messages = [_describe(e) for e in sorted(errors, key=lambda e: list(e.absolute_path))]
    if messages:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    messages = [message for check in checks for message in check(config)]
    if messages:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    return config


def check_yaml(path: str | Path) -> None:
    """Stop with the file and line of a YAML syntax error: Snakemake's own loader says only that
    a config file is "not valid JSON or YAML". (It reads `--configfile` files before the
    Snakefile runs, so this can check only the files the Snakefile names itself.)"""
    try:
        with open(path, encoding="utf-8") as handle:
            yaml.safe_load(handle)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        raise WorkflowError(f"{where}: not valid YAML: {error.problem}") from error
