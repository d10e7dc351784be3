"""Study A measurements: APJN curves of built timm ViTs next to the theory seeded with the
statistics measured in the same models."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from transformer_stability.apjn.agreement import region_gmfe
from transformer_stability.apjn.inputs import (
    bundled_images,
    cifar100_images,
    embed_images,
    equiangular_tokens,
)
from transformer_stability.apjn.kernels import norm_kernel
from transformer_stability.apjn.measure import (
    backward_apjn,
    block_states,
    forward_apjn,
    gaussian_probes,
    model_blocks,
    token_statistics,
)
from transformer_stability.apjn.models import build_vit, mean_field_from_model
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.study import ID_COLUMNS, Variant, base_spec, variant_ids
from transformer_stability.apjn.theory import (
    MeanField,
    backward_log_apjn,
    forward_log_apjn,
    propagate_statistics,
)
from transformer_stability.checkpoint import Checkpoint, NoCheckpoint
from transformer_stability.device import resolve_device, resolve_dtype

log = logging.getLogger(__name__)

MEASURED_COLUMNS = [*ID_COLUMNS, "width", "depth", "input", "sample", "direction", "source_block",
                    "block", "apjn", "apjn_theory", "q", "p", "q_theory", "p_theory"]  # fmt: skip
AGREEMENT_COLUMNS = ["norm", "alpha", "input", "sample", "region", "gmfe", "direction"]
END_TO_END_COLUMNS = ["sweep", *ID_COLUMNS, "width", "depth", "sample", "apjn",
                      "apjn_theory"]  # fmt: skip


@dataclass(frozen=True)
class Measurement:
    """Everything measured in one model on one batch of inputs (arrays are per sample)."""

    backward: np.ndarray | None  # (S, L+1): J^{L,b}
    forward: np.ndarray | None  # (S, L+1-b0): J^{b,b0}
    q: np.ndarray  # (S, L+1)
    p: np.ndarray
    mean_field: MeanField


@dataclass(frozen=True)
class Runner:
    """Shared measurement settings: device, dtype, probes, seed."""

    q0: float
    p0: float
    samples: int
    probes: int
    chunk_size: int
    device: torch.device
    dtype: torch.dtype
    seed: int
    images: dict[str, Any] | None

    @classmethod
    def from_config(cls, apjn: dict[str, Any], device: str, seed: int) -> Runner:
        measure = apjn["measure"]
        return cls(
            q0=apjn["input"]["q0"],
            p0=apjn["input"]["p0"],
            samples=measure["samples"],
            probes=measure["probes"],
            chunk_size=measure["chunk_size"],
            device=resolve_device(device),
            dtype=resolve_dtype(measure["dtype"]),
            seed=seed,
            images=apjn.get("images"),
        )

    def equiangular(self, spec: ViTSpec) -> torch.Tensor:
        """One equiangular token matrix per sample, each with its own random rotation."""
        generator = torch.Generator().manual_seed(self.seed)
        return torch.stack(
            [
                equiangular_tokens(spec.n_tokens, spec.width, self.q0, self.p0, generator)
                for _ in range(self.samples)
            ]
        )

    def images_batch(self, spec: ViTSpec) -> torch.Tensor:
        count, size = self.images["count"], spec.img_size
        if self.images["source"] == "cifar100":
            return cifar100_images(self.images["cifar_root"], count, size, self.seed)
        return bundled_images(count, size, self.seed)

    def measure(
        self, spec: ViTSpec, input_kind: str, forward_source: int | None, backward: bool = True
    ) -> Measurement:
        """Build the model, feed the inputs into block 0, estimate the requested curves."""
        model = build_vit(spec, self.seed).to(self.device, self.dtype)
        if input_kind == "equiangular":
            x0 = self.equiangular(spec).to(self.device, self.dtype)
        else:
            x0 = embed_images(model, self.images_batch(spec).to(self.device, self.dtype))
        blocks = model_blocks(model)
        states = block_states(blocks, x0)
        stats = [token_statistics(s) for s in states]
        generator = torch.Generator().manual_seed(self.seed + 1)
        back = fwd = None
        if backward:
            probes = gaussian_probes(states[-1], self.probes, generator)
            back = backward_apjn(blocks, x0, probes, self.chunk_size).numpy()
        if forward_source is not None:
            source = states[forward_source]
            probes = gaussian_probes(source, self.probes, generator)
            fwd = forward_apjn(blocks[forward_source:], source, probes, self.chunk_size).numpy()
        return Measurement(
            backward=back,
            forward=fwd,
            q=torch.stack([q for q, _ in stats], 1).double().cpu().numpy(),
            p=torch.stack([p for _, p in stats], 1).double().cpu().numpy(),
            mean_field=mean_field_from_model(model),
        )


def _curve_frame(
    ids: dict[str, Any], direction: str, source: int, blocks: np.ndarray, **columns
) -> pd.DataFrame:
    return pd.DataFrame(
        {**ids, "direction": direction, "source_block": source, "block": blocks, **columns}
    )


def _sample_curves(
    variant: Variant, spec: ViTSpec, m: Measurement, sample: int, b0: int
) -> list[pd.DataFrame]:
    """Measured backward and forward curves of one sample with the theory seeded by that
    sample's (q, p): at block 0 for the backward curve, at the source b0 for the forward one."""
    kernel, mf, depth = norm_kernel(variant.norm, variant.alpha), m.mean_field, spec.depth
    back = propagate_statistics(kernel, mf, m.q[sample, 0], m.p[sample, 0], depth)
    fwd = propagate_statistics(kernel, mf, m.q[sample, b0], m.p[sample, b0], depth - b0)
    ids = {**variant_ids(variant, spec), "width": spec.width, "depth": depth}
    return [
        _curve_frame(
            ids,
            "backward",
            depth,
            np.arange(depth + 1),
            apjn=m.backward[sample],
            apjn_theory=np.exp(backward_log_apjn(back, mf)),
            q=m.q[sample],
            p=m.p[sample],
            q_theory=back.q,
            p_theory=back.p,
        ),
        _curve_frame(
            ids,
            "forward",
            b0,
            np.arange(b0, depth + 1),
            apjn=m.forward[sample],
            apjn_theory=np.exp(forward_log_apjn(fwd, mf)),
            q=m.q[sample, b0:],
            p=m.p[sample, b0:],
            q_theory=fwd.q,
            p_theory=fwd.p,
        ),
    ]


def _variant_curves(
    runner: Runner, spec: ViTSpec, variant: Variant, kind: str, source: int
) -> pd.DataFrame:
    """Measured curves of one variant on one input kind, every sample, theory beside."""
    model_spec = spec.with_(norm=variant.norm, alpha=variant.alpha)
    measurement = runner.measure(model_spec, kind, source)
    frames = [
        frame.assign(input=kind, sample=sample)
        for sample in range(measurement.backward.shape[0])
        for frame in _sample_curves(variant, model_spec, measurement, sample, source)
    ]
    log.info(
        "%s on %s input: J^{L,0} = %.4g", variant.label, kind, measurement.backward[:, 0].mean()
    )
    return pd.concat(frames, ignore_index=True)


def measured_curves(
    apjn: dict[str, Any], device: str, seed: int, checkpoint: Checkpoint | None = None
) -> pd.DataFrame:
    """Every variant on equiangular input (forward from block 0) and on images (forward from
    images.forward_source_block), per sample, with the seeded theory beside each point.
    Each (variant, input) measurement is one checkpoint item."""
    runner, spec = Runner.from_config(apjn, device, seed), base_spec(apjn)
    checkpoint = checkpoint or NoCheckpoint()
    variants = [Variant(v["norm"], v.get("alpha")) for v in apjn["variants"]]
    inputs = {"equiangular": 0, "images": apjn["images"]["forward_source_block"]}
    jobs = [(v, kind) for v in variants for kind in inputs]
    frames = [
        checkpoint.cached(
            f"{i}-{variant.label}-{kind}",
            partial(_variant_curves, runner, spec, variant, kind, inputs[kind]),
        )
        for i, (variant, kind) in enumerate(tqdm(jobs, desc="APJN curves", mininterval=5.0))
    ]
    return pd.concat(frames, ignore_index=True)[MEASURED_COLUMNS]


def agreement(curves: pd.DataFrame) -> pd.DataFrame:
    """GMFE of measured vs theory per (model, input, sample, direction) and depth region; the
    source point, equal to 1 on both sides by definition, is left out."""
    rows = []
    keys = ["norm", "alpha", "attn_mult", "mlp_mult", "input", "sample", "direction"]
    for key, group in curves.groupby(keys, dropna=False):
        group = group[group["block"] != group["source_block"]]
        ids = dict(zip(keys, key, strict=True))
        for region, value in region_gmfe(
            group["block"].to_numpy(), group["apjn"].to_numpy(), group["apjn_theory"].to_numpy()
        ).items():
            rows.append({**ids, "region": region, "gmfe": value})
    return pd.DataFrame(rows)[AGREEMENT_COLUMNS]


def _end_to_end(
    m: Measurement, spec: ViTSpec, variant: Variant, sweep: str, depths: list[int]
) -> pd.DataFrame:
    """J^{L,0} per equiangular sample at each L in `depths`, read off the forward curve from
    block 0 (the first L blocks of a deeper net are an L-block net at init), with the theory
    seeded by each sample's measured (q, p) at block 0."""
    kernel, mf = norm_kernel(variant.norm, variant.alpha), m.mean_field
    frames = []
    for sample, (q, p) in enumerate(zip(m.q[:, 0], m.p[:, 0], strict=True)):
        theory = np.exp(forward_log_apjn(propagate_statistics(kernel, mf, q, p, spec.depth), mf))
        frames.append(
            pd.DataFrame(
                {
                    "sweep": sweep,
                    **variant_ids(variant, spec),
                    "width": spec.width,
                    "depth": depths,
                    "sample": sample,
                    "apjn": m.forward[sample, depths],
                    "apjn_theory": theory[depths],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _sweep_runner(apjn: dict[str, Any], device: str, seed: int) -> Runner:
    """End-to-end sweeps need only J^{L,0}: fewer samples (measure.sweep_samples) suffice."""
    runner = Runner.from_config(apjn, device, seed)
    return replace(runner, samples=apjn["measure"]["sweep_samples"])


def _forward_only(runner: Runner, spec: ViTSpec) -> Measurement:
    return runner.measure(spec, "equiangular", forward_source=0, backward=False)


def _end_to_end_job(
    runner: Runner, model: ViTSpec, variant: Variant, sweep: str, depths: list[int]
) -> pd.DataFrame:
    return _end_to_end(_forward_only(runner, model), model, variant, sweep, depths)


def sensitivity(
    apjn: dict[str, Any], device: str, seed: int, checkpoint: Checkpoint | None = None
) -> pd.DataFrame:
    """J^{L,0} vs alpha_0 (Derf, DyT) and vs attn_mult / mlp_mult (pre-LN, Derf); each model
    is one checkpoint item."""
    runner, spec = _sweep_runner(apjn, device, seed), base_spec(apjn)
    checkpoint = checkpoint or NoCheckpoint()
    cfg = apjn["sensitivity"]
    jobs: list[tuple[str, ViTSpec, Variant]] = []
    for norm in ("derf", "dyt"):
        for alpha in cfg["alphas"]:
            jobs.append(("alpha", spec.with_(norm=norm, alpha=alpha), Variant(norm, alpha)))
    for variant in (Variant("ln"), Variant("derf", cfg["mult_alpha"])):
        for sweep in ("attn_mult", "mlp_mult"):
            for mult in cfg["mults"]:
                mults = {"attn_mult": 1.0, "mlp_mult": 1.0, sweep: mult}
                model = spec.with_(norm=variant.norm, alpha=variant.alpha, **mults)
                jobs.append((sweep, model, variant))
    frames = [
        checkpoint.cached(
            f"{i}-{sweep}-{variant.label}",
            partial(_end_to_end_job, runner, model, variant, sweep, [model.depth]),
        )
        for i, (sweep, model, variant) in enumerate(tqdm(jobs, desc="sensitivity", mininterval=5.0))
    ]
    return pd.concat(frames, ignore_index=True)[END_TO_END_COLUMNS]


def depth_points(
    apjn: dict[str, Any], device: str, seed: int, checkpoint: Checkpoint | None = None
) -> pd.DataFrame:
    """Measured end-to-end J^{L,0} for L = 1..max_depth from one model of depth max_depth per
    variant (forward curve from block 0); each variant is one checkpoint item."""
    runner, spec = _sweep_runner(apjn, device, seed), base_spec(apjn)
    checkpoint = checkpoint or NoCheckpoint()
    max_depth = apjn["depth_scaling"]["max_depth"]
    depths = list(range(1, max_depth + 1))
    frames = []
    for i, v in enumerate(tqdm(apjn["variants"], desc="depth scaling", mininterval=5.0)):
        variant = Variant(v["norm"], v.get("alpha"))
        model = spec.with_(norm=variant.norm, alpha=variant.alpha, depth=max_depth)
        frames.append(
            checkpoint.cached(
                f"{i}-{variant.label}",
                partial(_end_to_end_job, runner, model, variant, "depth", depths),
            )
        )
    return pd.concat(frames, ignore_index=True)[END_TO_END_COLUMNS]
