"""Render the configuration reference (config/README.md) from the config schema.

The schema is what validation enforces, so writing the reference from it keeps the two from
drifting: every key's path, type, default, allowed values and description come from there.
Regenerate with ``python -m transformer_stability.config_doc > config/README.md``.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from transformer_stability import config

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
COMMAND = "python -m transformer_stability.config_doc > config/README.md"

_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}

_INTRO = f"""\
# Configuration reference

<!-- Generated from workflow/schemas/config.schema.yaml; edit the schema, not this file:
     {COMMAND} -->

`config.yaml` at the top level is the CPU preset and holds every key below at its default;
`config/paper.yaml` overrides a subset for the paper's scale. Snakemake reads `config.yaml`
first and merges each `--configfile FILE` over it (nested keys one by one). The merged config
is validated against `workflow/schemas/config.schema.yaml` before any job runs: an unknown key
or a value outside "allowed" stops the run with a message naming the key. Snakemake reads a
`--configfile` before the workflow starts, so a YAML syntax error in one gets Snakemake's message
without file or line: `.venv/bin/python -m transformer_stability.check_config FILE` names them
and checks the merged config as a run would, without starting one.

This page is generated from that schema's `description` and `default` fields; after editing
the schema, regenerate it with `{COMMAND}` (`tests/test_docs.py` checks that it is current).
A key written `a.b[].c` is key `c` of every item of the list `a.b`.
"""


@dataclass(frozen=True)
class Key:
    """One property of the schema, at its dotted path; `in_list` for the keys of list items,
    which take their values per item (and may have no default)."""

    path: str
    spec: dict[str, Any]
    required: bool
    in_list: bool


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return config.load_schema(path)


def walk(node: dict[str, Any], prefix: str = "", in_list: bool = False) -> Iterator[Key]:
    """Every property under `node`, depth first, in the schema's order."""
    required = set(node.get("required", ()))
    for name, spec in node.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield Key(path, spec, name in required, in_list)
        yield from walk(spec, path, in_list)
        items = spec.get("items", {})
        if "properties" in items:
            yield from walk(items, f"{path}[]", in_list=True)


def _code(text: str) -> str:
    return f"`{text}`"


def _literal(value: Any) -> str:
    dumped = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=math.inf)
    return dumped.removesuffix("...\n").strip()


def _type(spec: dict[str, Any]) -> str:
    if "oneOf" in spec:
        return " or ".join(_type(option) for option in spec["oneOf"])
    kinds = spec.get("type", "any")
    names = [kinds] if isinstance(kinds, str) else kinds
    if names == ["array"]:
        items = spec.get("items", {})
        return "list of objects" if "properties" in items else f"list of {_type(items)}"
    return " or ".join(names)


def _constraints(spec: dict[str, Any]) -> list[str]:
    if "oneOf" in spec:
        return [" or ".join(", ".join(_constraints(option)) for option in spec["oneOf"])]
    out = []
    if "enum" in spec:
        out.append(", ".join(_code(_literal(value)) for value in spec["enum"]))
    out += [f"{sign} {_literal(spec[bound])}" for bound, sign in _BOUNDS.items() if bound in spec]
    if "pattern" in spec:
        out.append(f"matches {_code(spec['pattern'])}")
    if "minItems" in spec:
        count = spec["minItems"]
        out.append(f"at least {count} item{'s' if count > 1 else ''}")
    if spec.get("uniqueItems"):
        out.append("no repeats")
    items = spec.get("items", {})
    if items and "properties" not in items:
        out += [f"each {text}" for text in _constraints(items)]
    return out


def _allowed(key: Key) -> str:
    parts = _constraints(key.spec)
    if key.required:
        parts.append("required")
    if "properties" in key.spec and key.spec.get("additionalProperties") is False:
        parts.append("only the keys below")
    return "; ".join(parts)


def _default(spec: dict[str, Any]) -> str:
    if "properties" in spec or "default" not in spec:
        return ""
    return _code(_literal(spec["default"]))


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().replace("|", "\\|")


def _row(key: Key) -> str:
    cells = [
        _code(key.path),
        _type(key.spec),
        _default(key.spec),
        _allowed(key),
        key.spec.get("description", ""),
    ]
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _table(keys: list[Key]) -> list[str]:
    return [
        "| key | type | default | allowed | description |",
        "| --- | --- | --- | --- | --- |",
    ] + [_row(key) for key in keys]


def render(schema: dict[str, Any]) -> str:
    """The reference page: the top-level scalars, then one section per top-level object."""
    keys = list(walk(schema))
    sections = [name for name, spec in schema["properties"].items() if "properties" in spec]
    lines = [_INTRO, "## Top level", ""]
    lines += _table([key for key in keys if key.path.split(".")[0].split("[")[0] not in sections])
    for name in sections:
        spec = schema["properties"][name]
        lines += ["", f"## `{name}`", "", _cell(spec.get("description", "")), ""]
        lines += _table([key for key in keys if key.path.startswith(f"{name}.")])
    return "\n".join(lines) + "\n"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    sys.stdout.write(render(load_schema(path)))


if __name__ == "__main__":
    main()
