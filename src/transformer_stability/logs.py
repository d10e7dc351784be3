"""Logging for workflow scripts: everything goes to the rule's log file and to stderr."""

from __future__ import annotations

import logging
from pathlib import Path


def setup_logging(log_file: str | Path | None, level: int = logging.INFO) -> logging.Logger:
    """Route the package's loggers to `log_file` (created if needed) and stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w"))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger("transformer_stability")
