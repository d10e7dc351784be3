"""Many ViTs of one architecture trained as one tensor program.

A small ViT's training step on a CPU costs about the same for one model as for a few dozen when
their parameters are stacked on a leading run axis and the forward is vmapped over it: the
per-op overhead is paid once. The loss is a sum over runs and AdamW is elementwise, so this is
exactly R independent trainings (each with its own weights, α₀, init and learning rate).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap


def decayed_parameters(model: nn.Module) -> set[str]:
    """The parameters AdamW decays in the authors' recipe: weight matrices (and the patch
    kernel), not α, γ, β, biases, nor the position embedding and CLS token (timm's
    no_weight_decay)."""
    skip = set(getattr(model, "no_weight_decay", lambda: set())())
    return {name for name, p in model.named_parameters() if p.ndim >= 2 and name not in skip}


class StackedModels:
    """R models of one architecture as stacked parameters (R, ...) and one vmapped forward."""

    def __init__(self, models: Sequence[nn.Module]) -> None:
        self.params, self.buffers = stack_module_state(list(models))
        self.base = copy.deepcopy(models[0]).to("meta")
        self.decayed = decayed_parameters(models[0])

    @property
    def runs(self) -> int:
        return next(iter(self.params.values())).shape[0]

    def _one(self, params, buffers, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.base, (params, buffers), (x,))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (R, B, classes) of every model on the same batch x (B, ...)."""
        return vmap(self._one, in_dims=(0, 0, None))(self.params, self.buffers, x)


class BatchedAdamW:
    """AdamW (as torch.optim.AdamW) over stacked parameters with one learning rate per run;
    weight decay only on the parameters named in `decayed`."""

    def __init__(
        self,
        params: dict[str, torch.Tensor],
        decayed: set[str],
        weight_decay: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params, self.decayed = params, decayed
        self.weight_decay, self.betas, self.eps = weight_decay, betas, eps
        self.m = {name: torch.zeros_like(p) for name, p in params.items()}
        self.v = {name: torch.zeros_like(p) for name, p in params.items()}
        self.t = 0

    @torch.no_grad()
    def step(self, lr: torch.Tensor) -> None:
        """One update with rate lr[r] for run r, from the gradients in .grad (then cleared)."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for name, p in self.params.items():
            rate = lr.reshape((-1,) + (1,) * (p.dim() - 1)).to(p.dtype)
            if name in self.decayed:
                p.mul_(1 - rate * self.weight_decay)
            m, v = self.m[name], self.v[name]
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            p.sub_(rate / c1 * m / ((v / c2).sqrt() + self.eps))
            p.grad = None


def warmup_constant(step: int, warmup: int) -> float:
    """Multiplier of the peak rate at a step: linear warm-up over `warmup` steps, then 1."""
    return min(1.0, (step + 1) / max(1, warmup))
