"""Study A measurements: APJN curves of built timm ViTs next to the theory seeded with the
statistics measured in the same models."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from transformer_stability.apjn.agreement import agreement
from transformer_stability.apjn.gram import (
    GRAM_NORMS,
    gram_backward_log_apjn,
    gram_forward_log_apjn,
    propagate_gram,
    token_moments,
)
from transformer_stability.apjn.inputs import (
    bundled_images,
    cifar100_images,
    embed_images,
    equiangular_tokens,
)
from transformer_stability.apjn.items import (
    CurveItem,
    EndToEndItem,
    FiniteNItem,
    ImageSource,
    MeasureSettings,
    Variant,
    WidthItem,
)
from transformer_stability.apjn.kernels import norm_kernel
from transformer_stability.apjn.measure import (
    backward_apjn,
    forward_apjn,
    forward_pass,
    gaussian_probes,
    push_tangents,
)
from transformer_stability.apjn.models import BuiltBlocks, build_embedding
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.tables import FINITE_N_INPUTS, EndToEnd, FiniteN, MeasuredCurves
from transformer_stability.apjn.theory import (
    MeanField,
    backward_log_apjn,
    forward_log_apjn,
    propagate_statistics,
)
from transformer_stability.device import resolve_dtype
from transformer_stability.tables import select

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measurement:
    """Everything measured in one model on one batch of inputs (arrays are per sample)."""

    backward: np.ndarray | None  # (S, L+1): J^{L,b}
    forward: np.ndarray | None  # (S, L+1-b0): J^{b,b0}
    q: np.ndarray  # (S, L+1)
    p: np.ndarray
    mean_field: MeanField
    grams: dict[int, np.ndarray]  # block -> (S, N_tot, N_tot) token Gram matrices, CLS first


def _equiangular(spec: ViTSpec, settings: MeasureSettings) -> torch.Tensor:
    """One equiangular token matrix per sample, each with its own random rotation."""
    generator = torch.Generator().manual_seed(settings.seed)
    return torch.stack(
        [
            equiangular_tokens(spec.n_tokens, spec.width, settings.q0, settings.p0, generator)
            for _ in range(settings.samples)
        ]
    )


def _images(spec: ViTSpec, source: ImageSource, seed: int) -> torch.Tensor:
    if source.source == "cifar100":
        return cifar100_images(source.cifar_root, source.count, spec.img_size, seed)
    return bundled_images(source.count, spec.img_size, seed)


def measure(
    spec: ViTSpec,
    settings: MeasureSettings,
    device: torch.device,
    images: ImageSource | None = None,
    forward_source: int | None = 0,
    backward: bool = True,
) -> Measurement:
    """Feed the inputs into block 0 (equiangular tokens, or the embedded images when an image
    source is given) of the model, built `settings.chunk_blocks` blocks at a time, and estimate
    the requested curves."""
    dtype = resolve_dtype(settings.dtype)
    blocks = BuiltBlocks(spec, settings.seed, settings.chunk_blocks, device, dtype)
    if images is None:
        x0 = _equiangular(spec, settings).to(device, dtype)
    else:
        embedding = build_embedding(spec, settings.seed).to(device, dtype)
        x0 = embed_images(embedding, _images(spec, images, settings.seed).to(device, dtype))
    sources = {0, forward_source or 0}
    run = forward_pass(blocks, x0, keep=sorted(sources))
    generator = torch.Generator().manual_seed(settings.seed + 1)
    back = fwd = None
    if backward:
        probes = gaussian_probes(x0, settings.probes, generator)
        back = backward_apjn(blocks, x0, probes, settings.chunk_size, run.states).numpy()
    if forward_source is not None:
        source = run.states[forward_source]
        probes = gaussian_probes(source, settings.probes, generator)
        fwd = forward_apjn(blocks, source, probes, settings.chunk_size, forward_source).numpy()
    return Measurement(
        backward=back,
        forward=fwd,
        q=run.q.double().cpu().numpy(),
        p=run.p.double().cpu().numpy(),
        mean_field=blocks.mean_field(),
        grams={b: _token_gram(run.states[b]) for b in sources},
    )


def _token_gram(x: torch.Tensor) -> np.ndarray:
    """x x^T / d per sample, in float64: the full-Gram closure's starting point."""
    x = x.double().cpu()
    return (x @ x.transpose(-1, -2) / x.shape[-1]).numpy()


def _gram_theory(
    variant: Variant, m: Measurement, sample: int, b0: int, depth: int
) -> dict[str, dict[str, np.ndarray]]:
    """The full-Gram closure seeded with the sample's Gram matrix at block 0 (backward) and at
    b0 (forward): APJN and (q, p) (CLS excluded) per direction."""
    mf, out = m.mean_field, {}
    for direction, start, to_log_j in (
        ("backward", 0, gram_backward_log_apjn),
        ("forward", b0, gram_forward_log_apjn),
    ):
        gram0 = m.grams[start][sample]
        traj = propagate_gram(variant.norm, variant.alpha, mf, gram0, depth - start)
        log_j = to_log_j(traj, mf)
        q, p = token_moments(traj.gram)
        out[direction] = {"apjn": np.exp(log_j), "q": q, "p": p}
    return out


def _curve_frame(
    ids: dict[str, Any], direction: str, source: int, blocks: np.ndarray, **columns
) -> pd.DataFrame:
    return pd.DataFrame(
        {**ids, "direction": direction, "source_block": source, "block": blocks, **columns}
    )


def _sample_curves(
    variant: Variant, spec: ViTSpec, m: Measurement, sample: int, b0: int, gram: bool
) -> list[pd.DataFrame]:
    """Measured backward and forward curves of one sample with the theory seeded by that
    sample's (q, p): at block 0 for the backward curve, at the source b0 for the forward one;
    the statistics also with the attention self-term (theory.propagate_statistics); and, when
    `gram`, the full-Gram closure seeded with the sample's Gram matrices (else NaN)."""
    kernel, mf, depth = norm_kernel(variant.norm, variant.alpha), m.mean_field, spec.depth
    ids = {**variant.ids(spec), "width": spec.width, "depth": depth}
    if gram and variant.norm in GRAM_NORMS:  # DyT: no closed pair kernel at unequal variances
        full = _gram_theory(variant, m, sample, b0, depth)
    else:
        blank = {"backward": np.full(depth + 1, np.nan), "forward": np.full(depth + 1 - b0, np.nan)}
        full = {d: {"apjn": v, "q": v, "p": v} for d, v in blank.items()}
    frames = []
    for direction, start, to_log_j in (
        ("backward", 0, backward_log_apjn),
        ("forward", b0, forward_log_apjn),
    ):
        plain, with_self = (
            propagate_statistics(
                kernel, mf, m.q[sample, start], m.p[sample, start], depth - start, self_term=s
            )
            for s in (False, True)
        )
        measured = m.backward[sample] if direction == "backward" else m.forward[sample]
        frames.append(
            _curve_frame(
                ids,
                direction,
                depth if direction == "backward" else b0,
                np.arange(start, depth + 1),
                apjn=measured,
                apjn_theory=np.exp(to_log_j(plain, mf)),
                q=m.q[sample, start:],
                p=m.p[sample, start:],
                q_theory=plain.q,
                p_theory=plain.p,
                q_theory_self=with_self.q,
                p_theory_self=with_self.p,
                apjn_theory_gram=full[direction]["apjn"],
                q_theory_gram=full[direction]["q"],
                p_theory_gram=full[direction]["p"],
            )
        )
    return frames


def curve_table(item: CurveItem, device: torch.device) -> pd.DataFrame:
    """Measured curves of one variant on one input kind, every sample, with the theory seeded
    by each sample's statistics beside each point."""
    spec, source = item.spec, item.forward_source
    m = measure(spec, item.settings, device, item.images, source)
    variant = Variant(spec.norm, spec.alpha)
    frames = [
        frame.assign(input=item.input, init_seed=item.settings.seed, sample=sample)
        for sample in range(m.backward.shape[0])
        for frame in _sample_curves(variant, spec, m, sample, source, item.input == "images")
    ]
    log.info("%s: J^{L,0} = %.4g", item.id, m.backward[:, 0].mean())
    return select(pd.concat(frames, ignore_index=True), MeasuredCurves)


def width_table(item: WidthItem, device: torch.device) -> pd.DataFrame:
    """GMFE by depth region of one width-scan model's image curves, both closures."""
    curves = curve_table(item.curve, device)
    return agreement(curves, item.compare_from).assign(width=item.curve.spec.width)


def _end_to_end(
    m: Measurement,
    spec: ViTSpec,
    variant: Variant,
    sweep: str,
    depths: list[int],
    measured: np.ndarray,
) -> pd.DataFrame:
    """J^{L,0} per equiangular sample at each L in `depths` (`measured`, shape (S, depths)),
    with the theory seeded by each sample's measured (q, p) at block 0."""
    kernel, mf = norm_kernel(variant.norm, variant.alpha), m.mean_field
    frames = []
    for sample, (q, p) in enumerate(zip(m.q[:, 0], m.p[:, 0], strict=True)):
        theory = np.exp(forward_log_apjn(propagate_statistics(kernel, mf, q, p, spec.depth), mf))
        frames.append(
            pd.DataFrame(
                {
                    "sweep": sweep,
                    **variant.ids(spec),
                    "width": spec.width,
                    "depth": depths,
                    "sample": sample,
                    "apjn": measured[sample],
                    "apjn_theory": theory[depths],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def end_to_end_table(item: EndToEndItem, device: torch.device) -> pd.DataFrame:
    """J^{L,0} of one model at the item's depths, per equiangular sample, theory beside. At
    every depth it is read off the forward curve from block 0 (the first L blocks of a deeper
    net are an L-block net at init); at the model's own depth alone (a sensitivity point) off
    the backward curve, whose reverse passes cost less than forward mode's, for an estimate
    of the same mean and variance (||J^T u||^2 and ||J v||^2 alike: 2 ||J^T J||_F^2)."""
    depths = list(item.depths)
    final = depths == [item.spec.depth]
    m = measure(
        item.spec, item.settings, device, forward_source=None if final else 0, backward=final
    )
    measured = m.backward[:, :1] if final else m.forward[:, depths]
    variant = Variant(item.spec.norm, item.spec.alpha)
    table = _end_to_end(m, item.spec, variant, item.sweep, depths, measured)
    table["init_seed"] = item.settings.seed
    log.info("%s: J^{L,0} = %.4g", item.id, table["apjn"].iloc[-1])
    return select(table, EndToEnd)


def _finite_n_start(
    item: FiniteNItem, n: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both inputs at n + 1 tokens, (2, n+1, d), and their probes, (P, 2, n+1, d)."""
    d, p0s = item.spec.width, {"identical": item.q0, "generic": item.p0}
    x0 = torch.stack([equiangular_tokens(n + 1, d, item.q0, p0s[k], generator) for k in p0s])
    return x0, gaussian_probes(x0, item.probes, generator).transpose(0, 1)


def finite_n_table(item: FiniteNItem, device: torch.device) -> pd.DataFrame:
    """J^{b,0} of one deep pre-LN initialization for both inputs at every token count, mean over
    probes, with the model's (a, m). The model is built `chunk_blocks` blocks at a time and the
    inputs and tangents are carried from piece to piece, so only one piece is ever in memory."""
    dtype, spec = resolve_dtype(item.dtype), item.spec
    generator = torch.Generator().manual_seed(item.seed)
    states = {n: _finite_n_start(item, n, generator) for n in item.token_counts}
    norms: dict[int, list[torch.Tensor]] = {n: [] for n in item.token_counts}
    blocks = BuiltBlocks(spec, item.seed, item.chunk_blocks, device, dtype)
    for piece in blocks.pieces():
        piece_blocks = blocks.piece(piece)
        for n, (x, v) in states.items():
            x, v, piece_norms = push_tangents(
                piece_blocks, x.to(device, dtype), v.to(device, dtype)
            )
            states[n] = x, v
            norms[n].append(piece_norms)
    mf = blocks.mean_field()
    frames = []
    for n, parts in norms.items():
        start = torch.ones(len(FINITE_N_INPUTS), 1, dtype=torch.float64)
        curves = torch.cat([start, *(part.mean(0) for part in parts)], 1).numpy()
        for kind, curve in zip(FINITE_N_INPUTS, curves, strict=True):
            frames.append(
                pd.DataFrame(
                    {
                        "width": spec.width,
                        "depth": spec.depth,
                        "n_tokens": n,
                        "input": kind,
                        "q0": item.q0,
                        "p0": item.q0 if kind == "identical" else item.p0,
                        "init_seed": item.seed,
                        "a": mf.a,
                        "m": mf.m,
                        "block": np.arange(spec.depth + 1),
                        "apjn": curve,
                    }
                )
            )
    log.info("%s: J^{L,0} = %s", item.id, [f"{f['apjn'].iloc[-1]:.4g}" for f in frames])
    return select(pd.concat(frames, ignore_index=True), FiniteN)
