"""Study N's sweep as items: the `numerics` config section parsed once into frozen dataclasses.
Torch-free, so that the workflow can enumerate items without importing torch.

A GPT-2 item is one (model, α, storage group): every test format of `numerics.precisions` that
stores the same numbers (fp32 and the emulated m<bits>, or bf16, ...) shares one float64
reference run, so a group is the natural unit of work. A weights item is one model's weight
magnitudes. Every item carries exactly the settings its job reads, so Snakemake reruns a job
when, and only when, one of them changes.

Seeds follow identity, never list position: the random model's seed is derived from the base
seed and the model's name (`model_seed`), so every item of a model builds the identical model
and adding or reordering models changes nobody else's numbers; the token ids use the base seed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any

from transformer_stability.numerics.spec import (
    HELDOUT_TEXT,
    MODELS_DIR,
    SINK_DIR,
    SINK_IDS,
    SINK_MODEL,
    GPT2Spec,
    sink_spec,
)

# storage format of a test format: the dtype its tensors are held in (m<bits> keeps float32)
_STORAGE = {"fp64": "fp64", "fp32": "fp32", "bf16": "bf16", "fp16": "fp16"}
# m<bits>, optionally k<block>: rounded accumulation in blocks of that many inner-product terms
_EMULATED = re.compile(r"m(\d+)(?:k(\d+))?")
# explicit mantissa bits of the torch formats (rounding.Precision builds on these)
FORMAT_MANTISSA_BITS = {"fp64": 52, "fp32": 23, "bf16": 7, "fp16": 10}
# the operation types of a GPT-2 block whose outputs a test format rounds: each matmul family,
# the softmax, LayerNorm, GELU and the residual add (numerics/gpt2.py names them)
SOURCES = (
    "qkv",
    "scores",
    "softmax",
    "mix",
    "attn_proj",
    "fc",
    "gelu",
    "mlp_proj",
    "layernorm",
    "add",
)


def format_unit_roundoff(precision: str) -> float:
    """u = 2^-(bits+1) of a test format by name, e.g. 2^-8 for bf16, m7 and m7k32."""
    match = _EMULATED.fullmatch(precision)
    bits = int(match.group(1)) if match else FORMAT_MANTISSA_BITS[precision]
    return 2.0 ** -(bits + 1)


def storage_format(precision: str) -> str:
    """'fp32' for fp32 and every m<bits>[k<block>], else the format itself (matches
    Precision.storage)."""
    if precision in _STORAGE:
        return _STORAGE[precision]
    if _EMULATED.fullmatch(precision):
        return "fp32"
    raise ValueError(f"unknown precision {precision!r}")


def model_seed(seed: int, name: str) -> int:
    """The seed of model `name` (e.g. 'random-gpt2') under base seed `seed`: the first 4 bytes of
    sha256('<seed>/<name>'), stable across Python versions and machines."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class TokenInputs:
    """The input: `sequences` sequences of `seq_len` token ids, `batch` per forward; uniform
    synthetic ids, windows of the text file `text`, or the first sequences (cut to `seq_len`)
    of the file `ids` of token id sequences, one per line (numerics/inputs.py)."""

    seq_len: int
    sequences: int
    batch: int
    text: str | None = None
    ids: str | None = None


class ModelItem:
    """What every item of one GPT-2 model shares: the model's seed, derived from the base seed
    and the model's name (so every item of the model has its weights), and its provenance."""

    spec: GPT2Spec
    seed: int  # base seed

    @property
    def model_seed(self) -> int:
        return model_seed(self.seed, self.spec.name)

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.seed, "dtype": "float64"}


@dataclass(frozen=True)
class GroupItem(ModelItem):
    """The test formats of one storage group against one float64 reference, for one model at
    one residual scaling α."""

    spec: GPT2Spec
    alpha: float
    precisions: tuple[str, ...]  # in config order; all share one storage format
    inputs: TokenInputs
    seed: int  # base seed: the token ids; the model's seed is derived from it and the name

    @property
    def storage(self) -> str:
        return storage_format(self.precisions[0])

    @property
    def id(self) -> str:
        return f"{self.spec.name}_a{self.alpha:g}_{self.storage}"


@dataclass(frozen=True)
class WeightsItem(ModelItem):
    """The weight magnitudes ω_OV, ω_UD, ω_KQ per block of one model (α = 1, float32)."""

    spec: GPT2Spec
    seed: int  # base seed, as in GroupItem

    @property
    def id(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class SourcesItem(ModelItem):
    """One model's recursion per rounding source (N8) at one α: every source alone, rounded to
    `bits` bits in float64 arithmetic, against the float64 reference."""

    spec: GPT2Spec
    alpha: float
    bits: int
    inputs: TokenInputs  # one batch: all sequences at once
    seed: int  # base seed, as in GroupItem

    @property
    def id(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class AttentionItem(ModelItem):
    """One model's attention rows (float32, α = 1) on its input: their sink statistics."""

    spec: GPT2Spec
    inputs: TokenInputs
    seed: int  # base seed, as in GroupItem

    @property
    def id(self) -> str:
        return self.spec.name


def configured_specs(numerics: dict[str, Any]) -> list[GPT2Spec]:
    """The models of `numerics.models`."""
    return [
        GPT2Spec.from_config(entry, key=f"numerics.models[{index}]")
        for index, entry in enumerate(numerics["models"])
    ]


def model_specs(numerics: dict[str, Any]) -> list[GPT2Spec]:
    """The models the GPT-2 sweeps run: the configured ones, then N.9's sink model."""
    return [*configured_specs(numerics), sink_spec(numerics["sinks"])]


def model_inputs(spec: GPT2Spec, inputs: TokenInputs, sinks: dict[str, Any]) -> TokenInputs:
    """A model's input: the sink model reads its own held-out task sequences (BOS first; as
    many tokens as `inputs` asks, up to all of them, each cut to at most `inputs.seq_len`), a
    text-trained model the held-out text in its own tokens (natural text it never saw), every
    other model the configured input."""
    if spec.name == SINK_MODEL:
        seq_len = min(inputs.seq_len, sinks["task"]["seq_len"])
        per_sequence = inputs.seq_len // seq_len
        sequences = min(sinks["sequences"], inputs.sequences * per_sequence)
        batch = min(sequences, inputs.batch * per_sequence)
        return TokenInputs(seq_len, sequences, batch, ids=SINK_IDS)
    return replace(inputs, text=HELDOUT_TEXT) if spec.weights == "trained" else inputs


def _token_inputs(numerics: dict[str, Any]) -> TokenInputs:
    cfg = numerics["inputs"]
    return TokenInputs(cfg["seq_len"], cfg["sequences"], cfg["batch"], cfg["text"])


def storage_groups(precisions: list[str]) -> list[tuple[str, ...]]:
    """The test formats grouped by storage format, groups in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for name in precisions:
        groups.setdefault(storage_format(name), []).append(name)
    return [tuple(group) for group in groups.values()]


def group_items(numerics: dict[str, Any], seed: int) -> list[GroupItem]:
    """Every (model, α, storage group), in the order of the gathered tables."""
    inputs = _token_inputs(numerics)
    return [
        GroupItem(spec, alpha, group, model_inputs(spec, inputs, numerics["sinks"]), seed)
        for spec in model_specs(numerics)
        for alpha in numerics["alphas"]
        for group in storage_groups(numerics["precisions"])
    ]


def sources_items(numerics: dict[str, Any], seed: int) -> list[SourcesItem]:
    cfg, text = numerics["sources"], numerics["inputs"]["text"]
    inputs = TokenInputs(cfg["seq_len"], cfg["sequences"], cfg["sequences"], text)
    return [
        SourcesItem(
            spec,
            cfg["alpha"],
            cfg["mantissa_bits"],
            model_inputs(spec, inputs, numerics["sinks"]),
            seed,
        )
        for spec in model_specs(numerics)
    ]


def weights_items(numerics: dict[str, Any], seed: int) -> list[WeightsItem]:
    return [WeightsItem(spec, seed) for spec in model_specs(numerics)]


def attention_items(numerics: dict[str, Any], seed: int) -> list[AttentionItem]:
    inputs = _token_inputs(numerics)
    return [
        AttentionItem(spec, model_inputs(spec, inputs, numerics["sinks"]), seed)
        for spec in model_specs(numerics)
    ]


def trained_models(numerics: dict[str, Any]) -> list[str]:
    """The pipeline's trained models: the text-trained ones where the config has any, and
    the sink model with its held-out sequences."""
    trained = any(entry["weights"] == "trained" for entry in numerics["models"])
    return [*([MODELS_DIR] if trained else []), SINK_DIR]


def outside_files(numerics: dict[str, Any]) -> list[str]:
    """The files the GPT-2 runs read: the text file they tokenize, if any (else synthetic
    tokens), and the pipeline's trained models with their held-out text, if any."""
    text = [numerics["inputs"]["text"]] if numerics["inputs"]["text"] is not None else []
    trained = trained_models(numerics)
    return [*text, *trained, *([HELDOUT_TEXT] if MODELS_DIR in trained else [])]


# The synthetic bound experiments (rule numerics_bounds, one job each).
BOUND_EXPERIMENTS = ("norms", "softmax", "lipschitz")
