"""Many ViTs of one architecture trained as one tensor program.

A small ViT's training step on a CPU costs about the same for one model as for a few dozen when
their parameters are stacked on a leading run axis and the forward is vmapped over it: the
per-op overhead is paid once. The loss is a sum over runs and AdamW is elementwise, so this is
exactly R independent trainings (each with its own weights, α₀, init, learning rate and batches).

The parameters live in one flat buffer (R, P), a run per row, so that the optimizer touches a
few large tensors instead of looping over every parameter of every block: at width 64 and a
batch of 8 five-token images there are ten times more weights than activations, and a loop of
elementwise ops over them costs as much as the forward and backward together.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, vmap

from transformer_stability.apjn.spec import ViTSpec


def decayed_parameters(model: nn.Module) -> set[str]:
    """The parameters AdamW decays in the authors' recipe: weight matrices (and the patch
    kernel), not α, γ, β, biases, nor the position embedding and CLS token (timm's
    no_weight_decay)."""
    skip = set(getattr(model, "no_weight_decay", lambda: set())())
    return {name for name, p in model.named_parameters() if p.ndim >= 2 and name not in skip}


Forward = Callable[[dict[str, torch.Tensor], torch.Tensor], torch.Tensor]
"""The outputs (R, B, ...) of R stacked models from their parameters (R, ...) by name and their
inputs (R, B, ...)."""


class StackedModels:
    """R models of one architecture as one flat parameter buffer `flat` (R, P), a run per row,
    and one forward over all of them: `forward` where given (vit_logits for the ViTs), else
    the models' own forward vmapped over the runs. The decayed parameters fill columns
    [0, decayed) of every row, so AdamW's two parameter groups are two contiguous slices of
    each row; the forward sees the parameters as views of the buffer (one split: backward
    writes the gradient in one copy)."""

    def __init__(self, models: Sequence[nn.Module], forward: Forward | None = None) -> None:
        self.forward = forward
        decay = decayed_parameters(models[0])
        named = [dict(model.named_parameters()) for model in models]
        self.names = sorted(named[0], key=lambda name: name not in decay)  # stable sort
        self.shapes = [named[0][name].shape for name in self.names]
        self.decayed = sum(named[0][name].numel() for name in self.names if name in decay)
        rows = [torch.cat([p[name].detach().reshape(-1) for name in self.names]) for p in named]
        self.flat = torch.stack(rows).requires_grad_(True)
        self.buffers = {
            name: torch.stack([dict(model.named_buffers())[name] for model in models])
            for name, _ in models[0].named_buffers()
        }
        self.base = copy.deepcopy(models[0]).to("meta")

    @property
    def runs(self) -> int:
        return self.flat.shape[0]

    def params(self) -> dict[str, torch.Tensor]:
        """Every parameter as a (R, ...) view of the flat buffer."""
        parts = self.flat.split([math.prod(shape) for shape in self.shapes], dim=1)
        return {
            name: part.view(self.runs, *shape)
            for name, shape, part in zip(self.names, self.shapes, parts, strict=True)
        }

    def _one(self, params, buffers, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.base, (params, buffers), (x,))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (R, B, classes) of every model on its own batch, x (R, B, ...)."""
        if self.forward is not None:
            return self.forward(self.params(), x)
        return vmap(self._one)(self.params(), self.buffers, x)


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """x (R, ..., in) @ weight (R, out, in)^T + bias (R, out), one batched product per run."""
    runs, width = x.shape[0], x.shape[-1]
    out = torch.baddbmm(bias[:, None], x.reshape(runs, -1, width), weight.transpose(1, 2))
    return out.view(*x.shape[:-1], weight.shape[1])


def _norm(x: torch.Tensor, params: dict[str, torch.Tensor], name: str, kind: str) -> torch.Tensor:
    """The norm `name` of every run on x (R, ..., d): LayerNorm (timm's eps 1e-6) or the
    saturating map gamma * f(alpha x) + beta (models.SaturatingNorm)."""
    lead = (x.shape[0],) + (1,) * (x.dim() - 2)
    weight, bias = (params[f"{name}.{p}"].view(*lead, -1) for p in ("weight", "bias"))
    if kind == "ln":
        return torch.addcmul(bias, nn.functional.layer_norm(x, x.shape[-1:], eps=1e-6), weight)
    z = params[f"{name}.alpha"].view(*lead, 1) * x
    return torch.addcmul(bias, torch.tanh(z) if kind == "dyt" else torch.erf(z), weight)


def vit_logits(params: dict[str, torch.Tensor], x: torch.Tensor, spec: ViTSpec) -> torch.Tensor:
    """The logits (R, B, classes) of R stacked ViTs of `spec`'s architecture (models.build_vit:
    patch embedding, class token, learned positions, pre-norm blocks with non-fused attention,
    final norm, head on the class token) on their images x (R, B, C, H, W): timm's forward
    written with every product batched over the runs, a training step 15-35 % cheaper than
    vmapping timm's modules (bench/RESULTS.md; the same numbers to float32 rounding)."""
    runs, batch, channels, size = x.shape[:4]
    patch, grid = spec.patch_size, size // spec.patch_size
    kernel = params["patch_embed.proj.weight"]
    width = kernel.shape[1]
    patches = x.reshape(runs, batch, channels, grid, patch, grid, patch)
    patches = patches.permute(0, 1, 3, 5, 2, 4, 6).reshape(runs, batch, grid * grid, -1)
    tokens = _linear(patches, kernel.reshape(runs, width, -1), params["patch_embed.proj.bias"])
    cls = params["cls_token"].view(runs, 1, 1, width).expand(runs, batch, 1, width)
    h = torch.cat([cls, tokens], 2) + params["pos_embed"].view(runs, 1, -1, width)
    n, heads = h.shape[2], spec.heads
    for b in range(spec.depth):
        p = f"blocks.{b}."
        qkv = _linear(_norm(h, params, p + "norm1", spec.norm), params[p + "attn.qkv.weight"],
                      params[p + "attn.qkv.bias"])  # fmt: skip
        q, k, v = qkv.view(runs, batch, n, 3, heads, -1).permute(3, 0, 1, 4, 2, 5).unbind(0)
        attn = torch.softmax((q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1), dim=-1)
        mixed = (attn @ v).transpose(2, 3).reshape(runs, batch, n, width)
        h = h + _linear(mixed, params[p + "attn.proj.weight"], params[p + "attn.proj.bias"])
        hidden = _linear(_norm(h, params, p + "norm2", spec.norm), params[p + "mlp.fc1.weight"],
                         params[p + "mlp.fc1.bias"])  # fmt: skip
        hidden = nn.functional.relu(hidden) if spec.relu else nn.functional.gelu(hidden)
        h = h + _linear(hidden, params[p + "mlp.fc2.weight"], params[p + "mlp.fc2.bias"])
    return _linear(_norm(h[:, :, 0], params, "norm", spec.norm), params["head.weight"],
                   params["head.bias"])  # fmt: skip


class BatchedAdamW:
    """AdamW (torch.optim.AdamW's update, betas (0.9, 0.999), eps 1e-8) over the rows of a flat
    (R, P) buffer, with peak rate `peaks[r]` for run r and weight decay on columns [0, decayed)
    only: a handful of elementwise ops over the whole buffer per step, the rates broadcast as a
    column (every run takes every step, so the bias corrections are shared)."""

    BETAS, EPS = (0.9, 0.999), 1e-8

    def __init__(
        self, flat: torch.Tensor, decayed: int, peaks: Sequence[float], weight_decay: float
    ) -> None:
        self.flat, self.decayed, self.weight_decay = flat, decayed, weight_decay
        self.m = torch.zeros_like(flat)
        self.v = torch.zeros_like(flat)
        self.steps = torch.zeros((), dtype=torch.long)
        self.peaks = torch.tensor(peaks, dtype=flat.dtype, device=flat.device).unsqueeze(1)

    @torch.no_grad()
    def step(self, scale: float) -> None:
        """One update at rate peaks[r] * scale for run r, from the gradients in flat.grad (then
        cleared)."""
        (beta1, beta2), grad = self.BETAS, self.flat.grad
        self.steps += 1
        t = int(self.steps)
        rate = self.peaks * scale
        self.flat[:, : self.decayed].mul_(1 - rate * self.weight_decay)
        self.m.lerp_(grad, 1 - beta1)
        self.v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = self.v.sqrt().div_(math.sqrt(1 - beta2**t)).add_(self.EPS)
        self.flat.addcdiv_(self.m * (rate / (1 - beta1**t)), denom, value=-1.0)
        self.flat.grad = None

    def state(self) -> dict[str, torch.Tensor]:
        """The moments and step count (with the parameters, all a resumed run needs)."""
        return {"m": self.m, "v": self.v, "steps": self.steps}

    def load(self, state: dict[str, torch.Tensor]) -> None:
        for name, tensor in self.state().items():
            tensor.copy_(state[name])


def warmup_constant(step: int, warmup: int) -> float:
    """Multiplier of the peak rate at a step: linear warm-up over `warmup` steps, then 1."""
    return min(1.0, (step + 1) / max(1, warmup))
