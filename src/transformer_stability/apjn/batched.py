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
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, vmap


def decayed_parameters(model: nn.Module) -> set[str]:
    """The parameters AdamW decays in the authors' recipe: weight matrices (and the patch
    kernel), not α, γ, β, biases, nor the position embedding and CLS token (timm's
    no_weight_decay)."""
    skip = set(getattr(model, "no_weight_decay", lambda: set())())
    return {name for name, p in model.named_parameters() if p.ndim >= 2 and name not in skip}


class StackedModels:
    """R models of one architecture as one flat parameter buffer `flat` (R, P), a run per row,
    and one vmapped forward. The decayed parameters fill columns [0, decayed) of every row, so
    AdamW's two parameter groups are two contiguous slices of each row; the forward sees the
    parameters as views of the buffer (one split: backward writes the gradient in one copy)."""

    def __init__(self, models: Sequence[nn.Module]) -> None:
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
        return vmap(self._one)(self.params(), self.buffers, x)


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
        denom = (self.v.sqrt() / math.sqrt(1 - beta2**t)).add_(self.EPS)
        self.flat.sub_(self.m * (rate / (1 - beta1**t)) / denom)
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
