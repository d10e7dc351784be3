"""Logging for workflow scripts: everything goes to the rule's log file and to stderr, and so
does the traceback of an error that ends the job."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import TracebackType

log = logging.getLogger("transformer_stability")


def _log_uncaught(
    kind: type[BaseException], error: BaseException, traceback: TracebackType | None
) -> None:
    """Exception hook: the job's traceback and error message go to its log file (and, through
    the stream handler, to stderr, where Snakemake shows them), not only to the terminal."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, traceback)
        return
    log.critical("the job failed: %s: %s", kind.__name__, error, exc_info=(kind, error, traceback))


def setup_logging(log_file: str | Path | None, level: int = logging.INFO) -> logging.Logger:
    """Route the package's loggers, Python warnings and uncaught exceptions to `log_file`
    (created if needed) and stderr."""
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
    sys.excepthook = _log_uncaught
    return log
