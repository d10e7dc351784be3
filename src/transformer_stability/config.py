"""Validate the pipeline config against its JSON schema before any job runs.

Snakemake's own `validate` checks the config and fills in the schema's defaults; when it
fails, every violation is listed in our words instead of its first one in jsonschema's. Errors
name the offending key as a dotted path (``apjn.variants[1].alpha``) and, for enums,
the allowed values, so a typo in a preset stops the run with one readable message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate


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
    with open(path) as handle:
        return yaml.safe_load(handle)


def validate_config(
    config: dict[str, Any],
    schema_path: str | Path,
    checks: Iterable[Callable[[dict[str, Any]], list[str]]] = (),
) -> dict[str, Any]:
    """Fill defaults into `config` in place and check it against the schema, then against
    `checks` (constraints between keys, which a JSON schema cannot express readably: each
    returns its messages, naming the key); raise ConfigError listing every problem. Returns
    the same dict for convenience."""
    try:
        validate(config, str(Path(schema_path).resolve()), set_default=True)
    except WorkflowError:
        validator = Draft202012Validator(load_schema(schema_path))
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
        messages = [_describe(e) for e in errors] or ["the config does not match the schema"]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages)) from None
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
