"""What one item of each Study A sweep costs (cluster_plan.py turns it into a SLURM time
request; a training sweep also cuts its items into segments by it): arithmetic on the model's
forward cost, no measurement."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from transformer_stability.work import (
    TRAIN_FACTOR,
    Work,
    block_activations,
    dtype_bytes,
    transformer_flop,
    transformer_parameters,
)

FLOAT32_BYTES = 4
ADAMW_COPIES = 5
"""Copies of every parameter a training holds: the weights, their gradient, AdamW's two moments
and the initialization kept for its J^{L,0} measurement."""

if TYPE_CHECKING:
    from transformer_stability.apjn.items import (
        CurveItem,
        EndToEndItem,
        FiniteNItem,
        MeasureSettings,
        WidthItem,
    )
    from transformer_stability.apjn.spec import ViTSpec
    from transformer_stability.apjn.train_items import TrainItem


def forward_flop(spec: ViTSpec) -> float:
    """FLOP of one forward pass of one image through the blocks (the patch embedding and the
    head add under 1 % at ViT-B's shape)."""
    return transformer_flop(spec.depth, spec.width, spec.n_tokens, spec.mlp_ratio)


def _piece_bytes(spec: ViTSpec, chunk_blocks: int, dtype: str) -> float:
    """One piece of a model built chunk_blocks blocks at a time, in `dtype`, and the block
    being built beside it (in float32 on the host)."""
    piece = transformer_parameters(min(chunk_blocks, spec.depth), spec.width, spec.mlp_ratio)
    built = transformer_parameters(1, spec.width, spec.mlp_ratio)
    return dtype_bytes(dtype) * piece + FLOAT32_BYTES * built


def _measured_bytes(spec: ViTSpec, settings: MeasureSettings, samples: int) -> float:
    """Peak of one measurement (apjn/measure.py): one piece (`_piece_bytes`), the residuals its
    backward pass keeps for the samples of one pass, one block's P-wide forward-mode or pullback
    intermediates for them, and the tangents or cotangents (two copies) and piece-entering
    states of every sample."""
    piece = min(settings.chunk_blocks, spec.depth)
    n, d = spec.n_tokens, spec.width
    block = block_activations(n, d, spec.heads, spec.mlp_ratio)
    per_pass = min(samples, max(1, settings.chunk_size // settings.probes))
    pieces = -(-spec.depth // piece)
    numbers = (
        per_pass * (piece + settings.probes) * block
        + (2 * settings.probes + pieces + 2) * samples * n * d
    )
    held = _piece_bytes(spec, settings.chunk_blocks, settings.dtype)
    return held + dtype_bytes(settings.dtype) * numbers


def _probe_work(spec: ViTSpec, passes: int, what: str, memory: float) -> Work:
    """`passes` probe passes (a Jacobian-vector product each) through the whole model."""
    flop = passes * TRAIN_FACTOR * forward_flop(spec)
    return Work(flop, what=f"{what}, depth {spec.depth}", memory_bytes=memory)


def curve_work(item: CurveItem) -> Work:
    """Hutchinson probes of every sample through the whole model, backward and forward."""
    probes = item.settings.probes
    samples = item.images.count if item.images else item.settings.samples
    what = f"2 directions x {probes} probes x {samples} samples"
    memory = _measured_bytes(item.spec, item.settings, samples)
    return _probe_work(item.spec, 2 * probes * samples, what, memory)


def width_work(item: WidthItem) -> Work:
    """The curve measurement of the item's model, at its width."""
    work = curve_work(item.curve)
    return replace(work, what=f"{work.what}, width {item.curve.spec.width}")


def end_to_end_work(item: EndToEndItem) -> Work:
    """Forward-mode probes of every sample through the deepest depth measured."""
    probes, samples = item.settings.probes, item.settings.samples
    what = f"forward mode, {probes} probes x {samples} samples"
    memory = _measured_bytes(item.spec, item.settings, samples)
    return _probe_work(item.spec, probes * samples, what, memory)


def finite_n_work(item: FiniteNItem) -> Work:
    """Forward-mode probes of both inputs at every token count through the whole model, built
    chunk_blocks blocks at a time (a piece, and the block being built, held)."""
    spec = item.spec
    flop = sum(
        2
        * item.probes
        * TRAIN_FACTOR
        * transformer_flop(spec.depth, spec.width, n + 1, spec.mlp_ratio)
        for n in item.token_counts
    )
    what = f"2 inputs x {item.probes} probes, N = {item.token_counts}"
    memory = _piece_bytes(spec, item.chunk_blocks, item.dtype)
    return Work(flop, what=what, memory_bytes=memory)


def train_work(item: TrainItem) -> Work:
    """Every run's training steps (the init measurement and the test pass add under 1 %). Memory:
    every run's parameters in ADAMW_COPIES copies, the activations of a step's minibatch in every
    block, and the training images (at their stored size)."""
    runs, steps, batch = len(item.runs), item.schedule.steps, item.schedule.batch_size
    spec = item.spec
    flop = runs * steps * batch * TRAIN_FACTOR * forward_flop(spec)
    what = f"{runs} run(s) x {steps} steps x batch {batch}, depth {spec.depth}"
    block = block_activations(spec.n_tokens, spec.width, spec.heads, spec.mlp_ratio)
    numbers = runs * (
        ADAMW_COPIES * transformer_parameters(spec.depth, spec.width, spec.mlp_ratio)
        + batch * spec.depth * block
    )
    return Work(flop, what=what, memory_bytes=FLOAT32_BYTES * numbers + item.data.stored_bytes)
