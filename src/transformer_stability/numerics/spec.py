"""Which GPT-2 a Study N item runs, kept free of torch so that the workflow can enumerate the
items without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

GPT2_VOCAB = 50257
GPT2_POSITIONS = 1024
# (layers, width, heads) of the released GPT-2 family, shared by config validation (config.py)
# and the model builder
GPT2_SIZES = {
    "gpt2": (12, 768, 12),
    "gpt2-medium": (24, 1024, 16),
    "gpt2-large": (36, 1280, 20),
    "gpt2-xl": (48, 1600, 25),
}


def numerics_model_name(weights: str, size: str) -> str:
    """How tables and file names call a Study N model, e.g. 'random-gpt2'."""
    return f"{weights}-{size}"


@dataclass(frozen=True)
class GPT2Spec:
    """Which GPT-2 to build: a named size or an explicit shape, random or pretrained weights."""

    size: str = "gpt2"
    weights: str = "random"
    source: str | None = None  # hub id or local directory, for pretrained weights
    layers: int | None = None
    width: int | None = None
    heads: int | None = None
    vocab: int = GPT2_VOCAB
    positions: int = GPT2_POSITIONS
    # config key, for error messages only: its list position is no part of the model's identity
    # (not in repr, so a job's params do not change when the models are reordered)
    key: str = field(default="numerics.models[0]", repr=False, compare=False)

    @property
    def name(self) -> str:
        """Identifier used in tables and file names, e.g. 'random-gpt2'."""
        return numerics_model_name(self.weights, self.size)

    def shape(self) -> tuple[int, int, int]:
        if self.size in GPT2_SIZES:
            return GPT2_SIZES[self.size]
        if None in (self.layers, self.width, self.heads):
            raise ValueError(
                f"config key '{self.key}.size': {self.size!r} is not a GPT-2 size "
                f"({', '.join(GPT2_SIZES)}); a custom size needs layers, width and heads"
            )
        return self.layers, self.width, self.heads

    @classmethod
    def from_config(cls, entry: dict, key: str) -> GPT2Spec:
        return cls(**entry, key=key)


def pretrained_source(source: str | None, size: str) -> tuple[str, Path | None]:
    """Where pretrained weights come from: (what to load, the local directory or None for a hub
    id). `source` defaults to the size's hub id; a path-like source or an existing directory is
    local."""
    source = source or size
    local = Path(source).expanduser()
    looks_local = source.startswith(("/", ".", "~")) or local.exists()
    return source, (local if looks_local else None)
