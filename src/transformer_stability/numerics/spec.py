"""Which GPT-2 a Study N item runs, kept free of torch so that the workflow can enumerate the
items without importing it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# where the pipeline writes what it trains (numerics/training.py): the tokenizer and the text
# split, and one save_pretrained directory per model of `weights: trained`, read back by the
# pretrained loader like any checkpoint
TRAINED_DIR = "results/numerics/trained"
TOKENIZER_DIR = f"{TRAINED_DIR}/tokenizer"
MODELS_DIR = f"{TRAINED_DIR}/models"
TRAIN_TEXT, HELDOUT_TEXT = f"{TRAINED_DIR}/train.txt", f"{TRAINED_DIR}/heldout.txt"
SINK_MODEL = "trained-backcopy"  # claim N.9's Bigram-Backcopy model (numerics/backcopy.py)
# where the sink experiment saves that model and the held-out sequences it was measured on, so
# that the GPT-2 sweeps run it like every other model (a token id sequence per line)
SINK_DIR = f"{TRAINED_DIR}/backcopy"
SINK_IDS = f"{SINK_DIR}/heldout_ids.txt"
SINK_WEIGHT = 0.5  # a sink head: most of its late rows' weight on the first token (claim N.9)
SINK_TIGHT = 10.0  # the sink-aware softmax bound: within one order of magnitude (claim N.3)
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
    weights: str = "random"  # random, pretrained, or trained by the pipeline
    source: str | None = None  # hub id or local directory, for pretrained (and trained) weights
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
        """The entry's model; a trained model's source is the directory the pipeline wrote."""
        spec = cls(**entry, key=key)
        if spec.weights == "trained":
            return replace(spec, source=trained_source(spec.name))
        return spec


def sink_spec(sinks: Mapping[str, Any]) -> GPT2Spec:
    """The Bigram-Backcopy model of the config's `numerics.sinks`: its vocabulary is the task's
    tokens and BOS, its positions the task's sequence length; saved under SINK_DIR."""
    task = sinks["task"]
    return GPT2Spec(
        size="backcopy",
        weights="trained",
        source=SINK_DIR,
        **sinks["model"],
        vocab=task["vocab"] + 1,
        positions=task["seq_len"],
        key="numerics.sinks.model",
    )


def trained_source(name: str) -> str:
    """The save_pretrained directory of the pipeline's trained model `name`."""
    return f"{MODELS_DIR}/{name}"


def pretrained_source(source: str | None, size: str) -> tuple[str, Path | None]:
    """Where pretrained weights come from: (what to load, the local directory or None for a hub
    id). `source` defaults to the size's hub id; a path-like source or an existing directory is
    local."""
    source = source or size
    local = Path(source).expanduser()
    looks_local = source.startswith(("/", ".", "~", TRAINED_DIR)) or local.exists()
    return source, (local if looks_local else None)
