"""What one item of each Study N sweep costs (`Sweep.work`): the cluster plan's time and memory
requests and the chunks' balance come from it; no table's value does (code_inputs leaves cost
models out of the jobs' code inputs)."""

from __future__ import annotations

from transformer_stability.numerics.items import (
    SOURCES,
    AttentionItem,
    GroupItem,
    SourcesItem,
    storage_format,
)
from transformer_stability.numerics.spec import GPT2Spec
from transformer_stability.work import (
    Work,
    block_activations,
    transformer_flop,
    transformer_parameters,
)

FLOAT32, FLOAT64 = 4, 8
STORAGE_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}


def _blocks(spec: GPT2Spec) -> float:
    """Parameters of the model's blocks."""
    layers, width, _ = spec.shape()
    return transformer_parameters(layers, width)


def _copies(spec: GPT2Spec, bytes_per_parameter: float) -> float:
    """Block copies made as the streams reach them (gpt2.LazyBlocks): while the streams step
    from one block to the next, two blocks' copies are held."""
    layers, _, _ = spec.shape()
    return bytes_per_parameter * min(2, layers) * _blocks(spec) / layers


def _model_bytes(spec: GPT2Spec) -> float:
    """The built model in float32: its blocks, token and position embeddings."""
    _, width, _ = spec.shape()
    return FLOAT32 * (_blocks(spec) + (spec.vocab + spec.positions) * width)


def _streams_bytes(spec: GPT2Spec, seq_len: int, batch: int, streams: int) -> float:
    """`streams` residual streams of one batch carried block by block in float64, no graph
    kept: each stream's state and a block's few (T, d) intermediates, and one attention's
    scores, weights and mask at a time (h T^2 each)."""
    _, width, heads = spec.shape()
    return FLOAT64 * batch * (4 * streams * seq_len * width + 3 * heads * seq_len**2)


def sources_work(item: SourcesItem) -> Work:
    """The reference and one float64 forward per source (and all together). Memory: the model,
    block copies in float64 twice (the stored numbers and the reference's), and the reference's
    and every source's stream of the one batch."""
    layers, width, _ = item.spec.shape()
    forwards = (2 + len(SOURCES)) * item.inputs.sequences
    per_sequence = transformer_flop(layers, width, item.inputs.seq_len)
    what = f"{forwards} float64 forwards of {item.inputs.seq_len} tokens, {item.spec.name}"
    streams = _streams_bytes(
        item.spec, item.inputs.seq_len, item.inputs.sequences, 2 + len(SOURCES)
    )
    memory = _model_bytes(item.spec) + _copies(item.spec, 2 * FLOAT64) + streams
    return Work(forwards * per_sequence, what=what, memory_bytes=memory)


def attention_work(item: AttentionItem) -> Work:
    """One float32 forward of every sequence. Memory: the model and one batch's activations."""
    layers, width, heads = item.spec.shape()
    flop = item.inputs.sequences * transformer_flop(layers, width, item.inputs.seq_len)
    activations = block_activations(item.inputs.seq_len, width, heads) * item.inputs.batch
    memory = _model_bytes(item.spec) + FLOAT32 * activations
    return Work(
        flop, what=f"{item.inputs.sequences} forwards, {item.spec.name}", memory_bytes=memory
    )


def group_work(item: GroupItem) -> Work:
    """The float64 reference and every test format of the group through every block (no
    vocabulary projection; the emulated formats' rounding is elementwise work, not counted).
    Memory: the model, block copies in the group's storage format and in float64, and the
    reference's and every format's stream of one batch."""
    layers, width, _ = item.spec.shape()
    forwards = (1 + len(item.precisions)) * item.inputs.sequences
    per_sequence = transformer_flop(layers, width, item.inputs.seq_len)
    what = f"{1 + len(item.precisions)} forwards x {item.inputs.sequences} sequences"
    tokens = f"{item.inputs.seq_len} tokens"
    stored = STORAGE_BYTES[storage_format(item.precisions[0])]
    streams = _streams_bytes(
        item.spec, item.inputs.seq_len, item.inputs.batch, 1 + len(item.precisions)
    )
    memory = _model_bytes(item.spec) + _copies(item.spec, stored + FLOAT64) + streams
    return Work(
        forwards * per_sequence, what=f"{what} of {tokens}, {item.spec.name}", memory_bytes=memory
    )
