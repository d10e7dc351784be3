"""What one item of each Study A sweep costs (cluster_plan.py turns it into a SLURM time
request; a training sweep also cuts its items into segments by it): arithmetic on the model's
forward cost, no measurement."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from transformer_stability.work import TRAIN_FACTOR, Work, transformer_flop, transformer_parameters

FLOAT32_BYTES = 4

if TYPE_CHECKING:
    from transformer_stability.apjn.items import (
        CurveItem,
        EndToEndItem,
        FiniteNItem,
        TrainItem,
        WidthItem,
    )
    from transformer_stability.apjn.spec import ViTSpec


def forward_flop(spec: ViTSpec) -> float:
    """FLOP of one forward pass of one image through the blocks (the patch embedding and the
    head add under 1 % at ViT-B's shape)."""
    return transformer_flop(spec.depth, spec.width, spec.n_tokens, spec.mlp_ratio)


def _model_bytes(spec: ViTSpec, blocks: int) -> float:
    """`blocks` blocks of the model in float32."""
    return FLOAT32_BYTES * transformer_parameters(blocks, spec.width, spec.mlp_ratio)


def _probe_work(spec: ViTSpec, passes: int, what: str) -> Work:
    """`passes` probe passes (a Jacobian-vector product each) through the whole model, held
    whole."""
    flop = passes * TRAIN_FACTOR * forward_flop(spec)
    return Work(
        flop, what=f"{what}, depth {spec.depth}", model_bytes=_model_bytes(spec, spec.depth)
    )


def curve_work(item: CurveItem) -> Work:
    """Hutchinson probes of every sample through the whole model, backward and forward."""
    probes = item.settings.probes
    samples = item.images.count if item.images else item.settings.samples
    what = f"2 directions x {probes} probes x {samples} samples"
    return _probe_work(item.spec, 2 * probes * samples, what)


def width_work(item: WidthItem) -> Work:
    """The curve measurement of the item's model, at its width."""
    work = curve_work(item.curve)
    return replace(work, what=f"{work.what}, width {item.curve.spec.width}")


def end_to_end_work(item: EndToEndItem) -> Work:
    """Forward-mode probes of every sample through the deepest depth measured."""
    probes, samples = item.settings.probes, item.settings.samples
    what = f"forward mode, {probes} probes x {samples} samples"
    return _probe_work(item.spec, probes * samples, what)


def finite_n_work(item: FiniteNItem) -> Work:
    """Forward-mode probes of both inputs at every token count through the whole model."""
    spec = item.spec
    flop = sum(
        2
        * item.probes
        * TRAIN_FACTOR
        * transformer_flop(spec.depth, spec.width, n + 1, spec.mlp_ratio)
        for n in item.token_counts
    )
    what = f"2 inputs x {item.probes} probes, N = {item.token_counts}"
    return Work(flop, what=what, model_bytes=_model_bytes(spec, item.chunk_blocks))


def train_work(item: TrainItem) -> Work:
    """Every run's training steps (the init measurement and the test pass add under 1 %)."""
    runs, steps, batch = len(item.runs), item.schedule.steps, item.schedule.batch_size
    flop = runs * steps * batch * TRAIN_FACTOR * forward_flop(item.spec)
    what = f"{runs} run(s) x {steps} steps x batch {batch}, depth {item.spec.depth}"
    return Work(flop, what=what)
