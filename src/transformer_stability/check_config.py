"""Check a preset before a run: `python -m transformer_stability.check_config FILE...`.

Snakemake reads `--configfile` files before the Snakefile runs, so a YAML syntax error in
one gets Snakemake's own message, which names neither the file nor the line. This command
loads `config.yaml` and merges each FILE over it as Snakemake does, then reports the first
syntax error with its file, line and column, or every schema and cross-key problem by key.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config

from transformer_stability.config import ConfigError, check_yaml
from transformer_stability.config_doc import SCHEMA_PATH
from transformer_stability.registry import validate

DEFAULT_CONFIG = SCHEMA_PATH.parents[2] / "config.yaml"


def merged_config(files: list[Path]) -> dict[str, Any]:
    """config.yaml with each file merged over it (nested keys one by one), as Snakemake merges
    `--configfile` files; raises WorkflowError naming the file and line of a syntax error."""
    config: dict[str, Any] = {}
    for path in [DEFAULT_CONFIG, *files]:
        check_yaml(path)
        update_config(config, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return config


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    files = [Path(name) for name in argv]
    try:
        validate(merged_config(files), SCHEMA_PATH)
    except FileNotFoundError as error:
        print(f"no such file: {error.filename}", file=sys.stderr)
        return 1
    except (WorkflowError, ConfigError) as error:
        print(error, file=sys.stderr)
        return 1
    print(f"valid: config.yaml + {' + '.join(map(str, files))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
