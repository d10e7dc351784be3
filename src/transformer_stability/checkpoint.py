"""Resumable loops: each finished item of a long loop is kept on disk, so that a rerun after a
kill picks up where the killed run stopped instead of starting over.

A checkpoint is a hidden folder beside the rule's output (`results/apjn/.trainability.csv.ckpt/`)
holding one pickle per finished item and a fingerprint of everything that determines the items:
the rule's parameters, the seed, the device, the dtype, the number of torch threads and the
package's own source code. A checkpoint whose fingerprint differs (a changed config, an edited
package, another device) is discarded, never mixed in. Items are written atomically, so a kill
while writing one loses only that item. The folder is removed once the output is written:
a checkpoint only ever exists for a run that did not finish.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

from transformer_stability.io import atomic_path

log = logging.getLogger(__name__)

T = TypeVar("T")
PACKAGE_ROOT = Path(__file__).resolve().parent
FINGERPRINT_FILE = "fingerprint.json"


def source_digest() -> str:
    """SHA-256 over the package's Python sources: an edited package invalidates checkpoints."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Checkpoint:
    """Finished items of one loop, keyed by name, valid for one fingerprint."""

    def __init__(self, directory: str | Path, fingerprint: dict[str, Any]):
        self.directory = Path(directory)
        self.fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
        self.loaded = 0
        self.computed = 0
        stored = self.directory / FINGERPRINT_FILE
        if self.directory.exists():
            try:
                valid = json.loads(stored.read_text()) == self.fingerprint
            except (OSError, ValueError):
                valid = False
            if not valid:
                log.info("discarding checkpoint %s: made with other settings", self.directory)
                shutil.rmtree(self.directory)
        if not self.directory.exists():
            self.directory.mkdir(parents=True)
            with atomic_path(stored) as tmp:
                tmp.write_text(json.dumps(self.fingerprint, sort_keys=True, indent=1))

    @classmethod
    def beside(cls, output: str | Path, **settings: Any) -> Checkpoint:
        """The checkpoint of the job writing `output`; `settings` are what determine its items
        (the package source and torch's thread count are added here)."""
        output = Path(output)
        fingerprint = {
            **settings,
            "torch_threads": torch.get_num_threads(),
            "source": source_digest(),
        }
        return cls(output.parent / f".{output.name}.ckpt", fingerprint)

    def _path(self, name: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in name)
        return self.directory / f"{safe}.pkl"

    def cached(self, name: str, compute: Callable[[], T]) -> T:
        """The stored result of item `name`, or compute it and store it before returning."""
        path = self._path(name)
        if path.exists():
            with open(path, "rb") as handle:
                value = pickle.load(handle)
            self.loaded += 1
            log.info("checkpoint: %s loaded from %s", name, self.directory)
            return value
        value = compute()
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.computed += 1
        return value

    def clear(self) -> None:
        """Remove the checkpoint (call once the output is safely written)."""
        log.info(
            "checkpoint: %d items resumed, %d computed; removing %s",
            self.loaded,
            self.computed,
            self.directory,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


class NoCheckpoint:
    """Stand-in when no checkpoint is wanted (tests, interactive use): always computes."""

    def cached(self, name: str, compute: Callable[[], T]) -> T:
        return compute()

    def clear(self) -> None:
        pass
