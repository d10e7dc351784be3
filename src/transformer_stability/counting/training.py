"""Full-batch training on the exhaustive grid, many runs at once.

Runs that share L share the grid, so their parameters are stacked on a leading run axis and
trained by one tensor program: the loss is a sum over runs and Adam is elementwise, so this is
exactly R independent trainings (each with its own bound B and seed) at the cost of one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch

from transformer_stability.counting.grid import balanced_weights, extreme_points, grid_points
from transformer_stability.counting.head_fit import fit_heads
from transformer_stability.counting.margins import best_head_margin
from transformer_stability.counting.model import (
    ModelSpec,
    Params,
    grid_forward,
    grid_representation,
    logit_margins,
)
from transformer_stability.counting.polish import polish_runs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Optimizer and schedule shared by every run of a sweep."""

    steps: int = 4000
    lr: float = 0.01
    final_lr_fraction: float = 0.01
    p_start: float = 2.0
    p_end: float = 32.0
    logit_scale: float = 100.0
    final_logit_scale: float = 100.0
    dtype: torch.dtype = torch.float64
    device: str = "cpu"
    edges_only: bool = False  # train on m = 0 and c + m = L (evaluation: the whole grid)
    polish_iterations: int = 0  # regression: SLSQP steps of the minimax polish (polish.py); 0: none
    head_fit: bool = False  # classification: refit each constrained run's head by LP (head_fit.py)


def init_params(spec: ModelSpec, seeds: list[int], dtype: torch.dtype, device: str) -> Params:
    """Independent Gaussian init per run (unit-norm-scale vectors), each from its own seed;
    learned gains start at 1, biases at 0."""
    d, k = spec.d, spec.n_classes
    per_run = []
    for seed in seeds:
        gen = torch.Generator().manual_seed(int(seed))

        def draw(*shape, gen=gen):
            return torch.randn(*shape, generator=gen, dtype=torch.float64) / math.sqrt(d)

        one = {"e_q": draw(d) * math.sqrt(d), "e_a": draw(d) * math.sqrt(d)}
        one["e_b"] = draw(d) * math.sqrt(d)
        if spec.readout == "regression":
            one |= {"u": draw(d), "b0": torch.zeros(1, dtype=torch.float64)}
        else:
            one |= {"head_w": draw(k, d), "head_b": torch.zeros(k, dtype=torch.float64)}
        if spec.learned:
            one |= {
                "gamma": torch.ones(d, dtype=torch.float64),
                "beta": torch.zeros(d, dtype=torch.float64),
            }
        per_run.append(one)
    stacked = {
        name: torch.stack([r[name] for r in per_run]).to(device, dtype) for name in per_run[0]
    }
    return Params(**stacked)


@dataclass
class PackedParams:
    """Every trainable vector of R runs as one zero-padded row of a (R, V, d + 1) buffer: head
    rows (w_k, b_k), b0 as a 1-vector, the rest as d-vectors. Adam and the projection then
    cost a few tensor ops per step instead of a few per kind of vector, which is what a step
    on a small grid costs; padding stays zero (zero gradient, zero Adam update)."""

    buffer: torch.Tensor
    layout: tuple[tuple[str, int], ...]

    @classmethod
    def pack(cls, params: Params) -> PackedParams:
        width = params.e_q.shape[-1] + 1
        blocks, layout = [], []
        for name, value in params.tensors().items():
            if name == "head_b":
                continue
            block = torch.cat([value, params.head_b[..., None]], -1) if name == "head_w" else value
            block = block if block.dim() == 3 else block[:, None, :]
            blocks.append(torch.nn.functional.pad(block, (0, width - block.shape[-1])))
            layout.append((name, block.shape[1]))
        return cls(torch.cat(blocks, 1), tuple(layout))

    def params(self) -> Params:
        """Params whose tensors are views of the buffer (gradients flow into it)."""
        d = self.buffer.shape[-1] - 1
        fields, start = {}, 0
        for name, rows in self.layout:
            block = self.buffer[:, start : start + rows]
            start += rows
            if name == "head_w":
                fields |= {"head_w": block[..., :d], "head_b": block[..., d]}
            else:
                fields[name] = block[:, 0, :1] if name == "b0" else block[:, 0, :d]
        return Params(**fields)

    @torch.no_grad()
    def project_(self, bounds: torch.Tensor) -> None:
        """Rescale, in place, every trainable vector of run r to norm <= bounds[r]."""
        norms = self.buffer.norm(dim=-1, keepdim=True)
        limit = bounds[:, None, None] / norms.clamp_min(torch.finfo(norms.dtype).tiny)
        self.buffer.mul_(torch.clamp(limit, max=1.0))


def project(params: Params, bounds: torch.Tensor) -> Params:
    """Params with every trainable vector of run r rescaled to norm <= bounds[r] (inf: left
    alone); head rows (w_k, b_k) count as one vector, b0 as a 1-vector."""
    packed = PackedParams.pack(params)
    packed.project_(bounds)
    return packed.params()


def p_mean_error(out: torch.Tensor, c: torch.Tensor, w: torch.Tensor, p: float) -> torch.Tensor:
    """Weighted p-mean of |y - c| per run, (R,): (sum_g w_g |y_g - c_g|^p)^(1/p). It tends to
    the largest error (what rounding sees) as p grows; computed relative to the largest
    error so that a large p neither overflows nor underflows."""
    err = (out - c.to(out.dtype)).abs()
    top = err.amax(1, keepdim=True).detach().clamp_min(torch.finfo(err.dtype).tiny)
    return top[:, 0] * ((w * (err / top) ** p).sum(1)) ** (1 / p)


def p_at(step: int, total: int, start: float, end: float) -> float:
    """Exponent of the regression loss at a step: geometric ramp from start (MSE-like, a smooth
    landscape to find the arc) to end (near the largest error, the exactness criterion)."""
    return start * (end / start) ** (step / max(total - 1, 1))


def _loss(
    spec: ModelSpec,
    out: torch.Tensor,
    c: torch.Tensor,
    w: torch.Tensor,
    scale: torch.Tensor,
    p: float,
) -> torch.Tensor:
    """Summed over runs: the count-balanced p-mean error (regression) or the count-balanced
    cross-entropy of logits scaled per run (scale: (R,))."""
    if spec.readout == "regression":
        return p_mean_error(out, c, w, p).sum()
    logp = torch.log_softmax(scale[:, None, None] * out, -1)
    picked = logp.gather(-1, c.expand(out.shape[0], -1)[..., None])[..., 0]
    return -(picked * w).sum()


@dataclass
class _Adam:
    """Adam over a dict of stacked tensors with a per-run learning rate (R,)."""

    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        self.m: dict[str, torch.Tensor] = {}
        self.v: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def step(self, tensors: dict[str, torch.Tensor], lr: torch.Tensor, t: int) -> None:
        for name, p in tensors.items():
            g = p.grad
            m = self.m.setdefault(name, torch.zeros_like(p))
            v = self.v.setdefault(name, torch.zeros_like(p))
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            mhat, vhat = m / (1 - self.b1**t), v / (1 - self.b2**t)
            shape = (-1,) + (1,) * (p.dim() - 1)
            p.sub_(lr.reshape(shape) * mhat / (vhat.sqrt() + self.eps))
            p.grad = None


def logit_scale_at(step: int, total: int, start: float, end: torch.Tensor) -> torch.Tensor:
    """Fixed (never trained) factor on the classification logits at a step, per run: geometric
    ramp from start to end. Bounded vectors leave margins ~ L^-2 between neighbouring counts, so
    cross-entropy at a fixed scale stays blurred over several counts; a low start keeps the
    early landscape smooth and the rising scale then sharpens it toward the max-margin head
    (the argmax, hence exactness and B, is blind to the scale)."""
    return start * (end / start) ** (step / max(total - 1, 1))


def cosine_lr(step: int, total: int, final_fraction: float) -> float:
    """Multiplier of the base rate: cosine decay from 1 to final_fraction."""
    return final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * step / total))


def evaluate(
    spec: ModelSpec, params: Params, c: torch.Tensor, m: torch.Tensor
) -> dict[str, np.ndarray]:
    """Exact-count metrics on the grid points (c, m) per run: accuracy, count-balanced accuracy, the
    smallest count with an error (nan if none), the largest trainable-vector norm, and how
    close to the exactness criterion the run is: the largest |y - c| (regression; exact iff
    < 1/2) or the smallest logit margin, true logit minus the best other (classification;
    exact iff > 0), the other one nan, and the gap to the threshold over the largest output
    (the relative precision the run needs; nan if not exact)."""
    nan = np.full(params.runs, np.nan)
    with torch.no_grad():
        out = grid_forward(spec, params, c, m)
        if spec.readout == "regression":
            error = (out - c.to(out.dtype)).abs()
            correct = error < 0.5
            gap = 0.5 - error.amax(1)
            gaps = {"max_error": error.amax(1).double().cpu().numpy(), "logit_margin": nan}
        else:
            correct = out.argmax(-1) == c
            gap = logit_margins(out, c).amin(1)
            gaps = {"max_error": nan, "logit_margin": gap.double().cpu().numpy()}
        scale = out.abs().reshape(params.runs, -1).amax(1)
        relative = torch.where(gap > 0, gap / scale, torch.nan)
        gaps["relative_margin"] = relative.double().cpu().numpy()
    correct = correct.cpu().numpy()
    cc = c.cpu().numpy()
    per_count = np.stack([correct[:, cc == k].mean(1) for k in range(spec.length + 1)], 1)
    failing = [np.flatnonzero(row < 1) for row in per_count]
    return {
        "accuracy": correct.mean(1),
        "balanced_accuracy": per_count.mean(1),
        "first_failing_count": np.array([f[0] if len(f) else np.nan for f in failing], float),
        "max_vector_norm": params.max_vector_norm().double().cpu().numpy(),
    } | gaps


def float32_accuracy(spec: ModelSpec, params: Params, c: torch.Tensor, m: torch.Tensor):
    """Grid accuracy per run with the parameters rounded to float32 and the forward in float32:
    whether the trained model's margin survives float32."""
    return evaluate(spec, params.map(lambda t: t.to(torch.float32)), c, m)["accuracy"]


def train_runs(
    spec: ModelSpec, bounds: list[float], seeds: list[int], cfg: TrainConfig, progress: bool = False
) -> tuple[dict[str, np.ndarray], Params]:
    """Train len(bounds) runs (run r: bound bounds[r], seed seeds[r]; inf = unconstrained)
    together on the full grid of spec.length (or its edges, cfg.edges_only): projected Adam
    with cosine decay and normalised steps (lr x B: every step moves a vector by the same
    fraction of its allowed norm, so the landscape looks alike at every B; unconstrained runs:
    lr x 1, whatever L); regression minimises an annealed p-mean error, classification a
    cross-entropy with a ramped logit scale; with cfg.polish_iterations, each constrained
    regression run is then polished on its largest error (polish.py; `adam_max_error`: its
    largest error before, NaN where nothing was polished), and with cfg.head_fit each
    constrained classification run's head is refitted by LP (head_fit.py; `adam_logit_margin`:
    its smallest logit margin before). Metrics on the whole grid, in
    cfg.dtype and in float32 (`accuracy_float32`)."""
    points = extreme_points if cfg.edges_only else grid_points
    c_np, m_np = points(spec.length)
    c = torch.from_numpy(c_np).to(cfg.device)
    m = torch.from_numpy(m_np).to(cfg.device)
    w = torch.from_numpy(balanced_weights(c_np, spec.length)).to(cfg.device, cfg.dtype)
    packed = PackedParams.pack(init_params(spec, seeds, cfg.dtype, cfg.device))
    bound = torch.tensor(bounds, dtype=cfg.dtype, device=cfg.device)
    finite = torch.isfinite(bound)
    packed.project_(bound)
    base = torch.where(finite, bound, torch.ones_like(bound))
    # logits are products of two vectors of norm <= B, so margins scale as B^2: end the ramp
    # at final_logit_scale / B^2 to resolve them equally at every bound
    end_scale = cfg.final_logit_scale / torch.where(finite, bound**2, torch.ones_like(bound))
    packed.buffer.requires_grad_(True)
    adam = _Adam()
    steps = range(1, cfg.steps + 1)
    if progress:
        from tqdm import tqdm

        steps = tqdm(steps, desc=f"{spec.readout} L={spec.length} x{len(bounds)}", mininterval=5)
    for t in steps:
        scale = logit_scale_at(t - 1, cfg.steps, cfg.logit_scale, end_scale)
        p = p_at(t - 1, cfg.steps, cfg.p_start, cfg.p_end)
        loss = _loss(spec, grid_forward(spec, packed.params(), c, m), c, w, scale, p)
        loss.backward()
        lr = cfg.lr * cosine_lr(t - 1, cfg.steps, cfg.final_lr_fraction) * base
        adam.step({"buffer": packed.buffer}, lr, t)
        if finite.any():
            packed.project_(bound)
    packed.buffer.requires_grad_(False)
    params = packed.params()
    c, m = (torch.from_numpy(v).to(cfg.device) for v in grid_points(spec.length))
    adam = {key: np.full(len(bounds), np.nan) for key in ("adam_max_error", "adam_logit_margin")}
    regression = spec.readout == "regression"
    if finite.any() and (cfg.polish_iterations if regression else cfg.head_fit):
        before = evaluate(spec, params, c, m)
        key = "max_error" if regression else "logit_margin"
        adam[f"adam_{key}"] = np.where(finite.cpu().numpy(), before[key], np.nan)
        if regression:
            params = polish_runs(spec, params, bound, cfg.polish_iterations)
        else:
            params = fit_heads(spec, params, bound)
    metrics = evaluate(spec, params, c, m) | adam
    return metrics | {"accuracy_float32": float32_accuracy(spec, params, c, m)}, params


def line_head_margin(spec: ModelSpec, params: Params) -> list[float]:
    """Per run: the largest relative logit margin any head reaches on the run's representation
    psi(z(c, 0)), c = 0..L (margins.py; an upper bound for the whole grid)."""
    c = torch.arange(spec.length + 1)
    with torch.no_grad():
        rep = grid_representation(spec, params.map(lambda t: t.double()), c, torch.zeros_like(c))
    return [best_head_margin(r, c.numpy(), spec.n_classes) for r in rep.cpu().numpy()]
