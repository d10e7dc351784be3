"""What one item of each Study N sweep costs (`Sweep.work`): the cluster plan's time requests and
the chunks' balance come from it; no table's value does (code_inputs leaves cost models out of
the jobs' code inputs)."""

from __future__ import annotations

from transformer_stability.numerics.items import SOURCES, AttentionItem, GroupItem, SourcesItem
from transformer_stability.work import Work, transformer_flop


def sources_work(item: SourcesItem) -> Work:
    """The reference and one float64 forward per source (and all together)."""
    layers, width, _ = item.spec.shape()
    forwards = (2 + len(SOURCES)) * item.inputs.sequences
    per_sequence = transformer_flop(layers, width, item.inputs.seq_len)
    what = f"{forwards} float64 forwards of {item.inputs.seq_len} tokens, {item.spec.name}"
    return Work(forwards * per_sequence, what=what)


def attention_work(item: AttentionItem) -> Work:
    """One float32 forward of every sequence."""
    layers, width, _ = item.spec.shape()
    flop = item.inputs.sequences * transformer_flop(layers, width, item.inputs.seq_len)
    return Work(flop, what=f"{item.inputs.sequences} forwards, {item.spec.name}")


def group_work(item: GroupItem) -> Work:
    """The float64 reference and every test format of the group through every block (no
    vocabulary projection; the emulated formats' rounding is elementwise work, not counted)."""
    layers, width, _ = item.spec.shape()
    forwards = (1 + len(item.precisions)) * item.inputs.sequences
    per_sequence = transformer_flop(layers, width, item.inputs.seq_len)
    what = f"{1 + len(item.precisions)} forwards x {item.inputs.sequences} sequences"
    tokens = f"{item.inputs.seq_len} tokens"
    return Work(forwards * per_sequence, what=f"{what} of {tokens}, {item.spec.name}")
