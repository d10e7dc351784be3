"""Hutchinson estimates of the APJN of a stack of blocks, at every block at once.

J^{b,b0} = ||d x^b / d x^{b0}||_F^2 / (N_tot d), with x^0 the input of block 0 and x^b the output
of block b-1. For a Gaussian probe u, E||J^T u||^2 = E||J v||^2 = ||J||_F^2, so
- one reverse pass per probe gives the backward curve J^{L,b} at every b (the cotangent
  J^{L,b}^T u reaching every block output as it is pulled back block by block), and
- one forward-mode pass per probe gives the forward curve J^{b,b0} at every b >= b0 (the tangent
  carried through the blocks is J^{b,b0} v at each block).
The probes of a sample share its forward pass: the primal runs once, the P tangents or
cotangents are mapped through each block together (torch.func.vmap), which saves the P - 1
repeated forward passes; samples are processed in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import jvp, vjp, vmap

from transformer_stability.forward_mode import quiet_forward_mode

Block = Callable[[torch.Tensor], torch.Tensor]


def gaussian_probes(like: torch.Tensor, n_probes: int, generator: torch.Generator) -> torch.Tensor:
    """(S, P, N, d) standard normal probes for a batch `like` of shape (S, N, d), drawn on the
    CPU from `generator` (identical on every device) and moved to like's device and dtype."""
    shape = (like.shape[0], n_probes, *like.shape[1:])
    probes = torch.randn(shape, generator=generator, dtype=torch.float64)
    return probes.to(device=like.device, dtype=like.dtype)


@torch.no_grad()
def block_states(blocks: Sequence[Block], x0: torch.Tensor) -> list[torch.Tensor]:
    """[x^0, ..., x^L] for a batch x0 of shape (S, N, d)."""
    states = [x0]
    for block in blocks:
        states.append(block(states[-1]))
    return states


def token_statistics(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample q = mean_i |x_i|^2/d and p = mean_{i != j} x_i.x_j/d over tokens 1.. (the CLS
    slot 0 excluded) for x of shape (S, N_tot, d)."""
    tokens = x[:, 1:, :]
    n, d = tokens.shape[1], tokens.shape[2]
    self_overlap = tokens.pow(2).sum(dim=(1, 2)) / d
    total_overlap = tokens.sum(dim=1).pow(2).sum(dim=-1) / d
    return self_overlap / n, (total_overlap - self_overlap) / (n * (n - 1))


def _per_sample_mean(values: torch.Tensor, n_samples: int) -> torch.Tensor:
    """(S*P, ...) -> (S, ...) averaging the P probes of each sample."""
    return values.reshape(n_samples, -1, *values.shape[1:]).mean(dim=1)


def _stack_probes(x: torch.Tensor, probes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (S, N, d) and probes (S, P, N, d) -> (S*P, N, d) each, sample-major, so that row
    i pairs sample i // P with its own probe."""
    n_probes = probes.shape[1]
    return x.repeat_interleave(n_probes, dim=0), probes.reshape(-1, *probes.shape[2:])


def _chunks(total: int, size: int) -> list[slice]:
    return [slice(i, min(i + size, total)) for i in range(0, total, size)]


def _squared_norm(x: torch.Tensor) -> torch.Tensor:
    """|x|^2 / (N d) over the last two axes (tokens, features)."""
    return x.pow(2).sum(dim=(-2, -1)) / (x.shape[-2] * x.shape[-1])


def _samples_per_chunk(chunk_size: int, n_probes: int) -> int:
    """Samples whose probes fill about `chunk_size` sample-probe pairs (at least one)."""
    return max(1, chunk_size // n_probes)


@torch.no_grad()
def _pull_back(blocks: Sequence[Block], x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """|J^{L,b}^T u|^2/(N d) for b = 0..L-1, shape (P, B, L) in float64, for inputs x (B, N, d)
    and P cotangents per input u (P, B, N, d) at x^L. The forward pass runs once per input and
    keeps each block's pullback; each pullback then maps all P cotangents at once (vmap)."""
    pulls = []
    for block in blocks:
        x, pull = vjp(block, x)
        pulls.append(pull)
    norms = torch.empty(len(blocks), *u.shape[:2], dtype=torch.float64)
    for b in reversed(range(len(blocks))):
        (u,) = vmap(pulls[b])(u)
        norms[b] = _squared_norm(u).double().cpu()
    return norms.permute(1, 2, 0)


def backward_apjn(
    blocks: Sequence[Block], x0: torch.Tensor, probes: torch.Tensor, chunk_size: int = 64
) -> torch.Tensor:
    """J^{L,b} for b = 0..L, shape (S, L+1), averaged over the probes (S, P, N, d) placed at
    x^L: the cotangent reaching each x^b is J^{L,b}^T u. Samples are processed in chunks of
    about `chunk_size` sample-probe pairs."""
    n_samples, n_probes = probes.shape[:2]
    out = torch.ones(n_samples, len(blocks) + 1, dtype=torch.float64)
    for part in _chunks(n_samples, _samples_per_chunk(chunk_size, n_probes)):
        out[part, :-1] = _pull_back(blocks, x0[part], probes[part].transpose(0, 1)).mean(0)
    return out  # J^{L,L}: d x^L / d x^L is the identity, exactly 1


def backward_apjn_per_pair(
    blocks: Sequence[Block], x0: torch.Tensor, probes: torch.Tensor
) -> torch.Tensor:
    """The naive baseline: one forward + VJP per source block b (O(L^2) block evaluations).
    Same probes, same estimator, same numbers as `backward_apjn`."""
    n_samples = probes.shape[0]
    flat_x0, flat_u = _stack_probes(x0, probes)
    states = block_states(blocks, flat_x0)
    out = torch.ones(flat_u.shape[0], len(blocks) + 1, dtype=torch.float64)
    for b in range(len(blocks)):
        with torch.enable_grad():
            source = states[b].detach().requires_grad_(True)
            x = source
            for block in blocks[b:]:
                x = block(x)
            (cotangent,) = torch.autograd.grad(x, source, grad_outputs=flat_u)
        out[:, b] = _squared_norm(cotangent).double().cpu()
    return _per_sample_mean(out, n_samples)


@torch.no_grad()
def push_tangents(
    blocks: Sequence[Block], x: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Carry inputs x (B, N, d) and P tangents per input v (P, B, N, d) through `blocks` in
    forward mode, the primal computed once for all P tangents (vmap over them): the outputs,
    their tangents, and |tangent|^2/(N d) after each block, shape (P, B, len(blocks)) in
    float64. A deep stack can be pushed in pieces, each piece's outputs feeding the next."""

    def carry(tangent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        primal, norms = x, []
        for block in blocks:
            primal, tangent = jvp(block, (primal,), (tangent,))
            norms.append(_squared_norm(tangent))
        return primal, tangent, torch.stack(norms, dim=-1)

    with quiet_forward_mode():
        primal, tangent, norms = vmap(carry, out_dims=(None, 0, 0))(v)
    return primal, tangent, norms.double().cpu()


def forward_apjn(
    blocks: Sequence[Block],
    x_source: torch.Tensor,
    probes: torch.Tensor,
    chunk_size: int = 64,
) -> torch.Tensor:
    """J^{b0+k, b0} for k = 0..len(blocks), shape (S, len(blocks)+1), where `blocks` are the
    blocks after the source b0 and x_source = x^{b0}; probes (S, P, N, d) are tangents at x^{b0}.
    One forward-mode pass per sample carries J v of all its probes through every block."""
    n_samples, n_probes = probes.shape[:2]
    out = torch.ones(n_samples, len(blocks) + 1, dtype=torch.float64)
    for part in _chunks(n_samples, _samples_per_chunk(chunk_size, n_probes)):
        norms = push_tangents(blocks, x_source[part], probes[part].transpose(0, 1))[2]
        out[part, 1:] = norms.mean(0)
    return out


def model_blocks(model: nn.Module) -> list[nn.Module]:
    """The residual blocks of a timm VisionTransformer, in order."""
    return list(model.blocks)
