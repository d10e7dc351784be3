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

A stack may be handed out in pieces of consecutive blocks (`Blocks`), built when asked for and
freed after, so that memory holds one piece, not the whole model: the forward pass keeps the
state entering each piece, the backward curve pulls the cotangents back piece by piece from the
last (recomputing each piece's forward pass from its saved input), the forward curve pushes the
tangents piece by piece from the first. The arithmetic is the same in any cut: a stack measured
in pieces gives the numbers it gives whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

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


class Blocks(Protocol):
    """A stack of blocks handed out a piece at a time."""

    def __len__(self) -> int: ...

    def pieces(self, start: int = 0) -> list[range]:
        """Consecutive ranges of block indices covering blocks start..len-1."""
        ...

    def piece(self, blocks: range) -> Sequence[Block]:
        """The blocks of one range that `pieces` gave."""
        ...


def piece_ranges(depth: int, size: int, start: int) -> list[range]:
    """Blocks start..depth-1 cut at the multiples of `size`: the pieces of a stack built `size`
    blocks at a time, the first one shortened when it starts inside a piece."""
    if size < 1:
        raise ValueError(f"a piece holds at least one block, not {size}")
    cuts = [start, *range((start // size + 1) * size, depth, size), depth]
    return [range(a, b) for a, b in pairwise(cuts) if a < b]


@dataclass(frozen=True)
class Held:
    """Blocks already in memory, handed out in pieces of `size` blocks (all of them at once
    when `size` is None)."""

    blocks: Sequence[Block]
    size: int | None = None

    def __len__(self) -> int:
        return len(self.blocks)

    def pieces(self, start: int = 0) -> list[range]:
        return piece_ranges(len(self.blocks), self.size or max(len(self.blocks), 1), start)

    def piece(self, blocks: range) -> Sequence[Block]:
        return self.blocks[blocks.start : blocks.stop]


def as_blocks(blocks: Sequence[Block] | Blocks) -> Blocks:
    """A plain sequence of blocks as one piece; a `Blocks` as it is."""
    return blocks if hasattr(blocks, "pieces") else Held(blocks)


@torch.no_grad()
def block_states(blocks: Sequence[Block], x0: torch.Tensor) -> list[torch.Tensor]:
    """[x^0, ..., x^L] for a batch x0 of shape (S, N, d)."""
    states = [x0]
    for block in blocks:
        states.append(block(states[-1]))
    return states


@dataclass(frozen=True)
class ForwardPass:
    """What one forward pass through a stack keeps: the token statistics after every block,
    (S, L+1) each, and the states entering each piece and at the blocks asked for."""

    q: torch.Tensor
    p: torch.Tensor
    states: dict[int, torch.Tensor]


@torch.no_grad()
def forward_pass(blocks: Blocks, x0: torch.Tensor, keep: Sequence[int] = ()) -> ForwardPass:
    """Run x0 (S, N, d) through the stack a piece at a time: (q, p) at every block, x^b at the
    start of every piece and at every b of `keep`, nothing else."""
    x, stats, states = x0, [token_statistics(x0)], {}
    for piece in blocks.pieces():
        states[piece.start] = x
        for b, block in enumerate(blocks.piece(piece), piece.start + 1):
            x = block(x)
            stats.append(token_statistics(x))
            if b in keep:
                states[b] = x
    states[len(blocks)] = x
    q, p = (torch.stack(values, 1) for values in zip(*stats, strict=True))
    return ForwardPass(q, p, states)


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
def _pull_back(
    blocks: Sequence[Block], x: torch.Tensor, u: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pull P cotangents per input u (P, B, N, d), placed at the output of `blocks`, back to
    their input x (B, N, d): |u^b|^2/(N d) entering each block b, shape (P, B, len(blocks)) in
    float64, and the cotangents at the input. The forward pass runs once per input and keeps
    each block's pullback; each pullback then maps all P cotangents at once (vmap)."""
    pulls = []
    for block in blocks:
        x, pull = vjp(block, x)
        pulls.append(pull)
    norms = torch.empty(len(blocks), *u.shape[:2], dtype=torch.float64)
    for b in reversed(range(len(blocks))):
        (u,) = vmap(pulls[b])(u)
        norms[b] = _squared_norm(u).double().cpu()
    return norms.permute(1, 2, 0), u


def backward_apjn(
    blocks: Sequence[Block] | Blocks,
    x0: torch.Tensor,
    probes: torch.Tensor,
    chunk_size: int = 64,
    starts: dict[int, torch.Tensor] | None = None,
) -> torch.Tensor:
    """J^{L,b} for b = 0..L, shape (S, L+1), averaged over the probes (S, P, N, d) placed at
    x^L: the cotangent reaching each x^b is J^{L,b}^T u. The stack is pulled back a piece at a
    time from the last, each piece from `starts` (the states entering the pieces, from
    `forward_pass`; a stack held as one piece needs only x0). Samples are processed in chunks
    of about `chunk_size` sample-probe pairs."""
    blocks = as_blocks(blocks)
    pieces = blocks.pieces()
    starts = {0: x0} if starts is None else starts
    if missing := [p.start for p in pieces if p.start not in starts]:
        raise ValueError(f"no state entering the pieces at blocks {missing}")
    n_samples, n_probes = probes.shape[:2]
    out = torch.ones(n_samples, len(blocks) + 1, dtype=torch.float64)
    u = probes.transpose(0, 1)
    for piece in reversed(pieces):
        piece_blocks, x = blocks.piece(piece), starts[piece.start]
        pulled = torch.empty_like(u)
        for part in _chunks(n_samples, _samples_per_chunk(chunk_size, n_probes)):
            norms, pulled[:, part] = _pull_back(piece_blocks, x[part], u[:, part])
            out[part, piece.start : piece.stop] = norms.mean(0)
        u = pulled
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
    blocks: Sequence[Block] | Blocks,
    x_source: torch.Tensor,
    probes: torch.Tensor,
    chunk_size: int = 64,
    source: int = 0,
) -> torch.Tensor:
    """J^{b0+k, b0} for k = 0..L-b0, shape (S, L-b0+1), where b0 = `source`, x_source = x^{b0}
    and the probes (S, P, N, d) are tangents at x^{b0}. Forward mode carries J v of every probe
    of a sample through the blocks after the source, a piece at a time."""
    blocks = as_blocks(blocks)
    n_samples, n_probes = probes.shape[:2]
    out = torch.ones(n_samples, len(blocks) - source + 1, dtype=torch.float64)
    x, v = x_source, probes.transpose(0, 1)
    for piece in blocks.pieces(source):
        piece_blocks = blocks.piece(piece)
        carried, tangents = torch.empty_like(x), torch.empty_like(v)
        for part in _chunks(n_samples, _samples_per_chunk(chunk_size, n_probes)):
            carried[part], tangents[:, part], norms = push_tangents(
                piece_blocks, x[part], v[:, part]
            )
            out[part, piece.start - source + 1 : piece.stop - source + 1] = norms.mean(0)
        x, v = carried, tangents
    return out


def model_blocks(model: nn.Module) -> list[nn.Module]:
    """The residual blocks of a timm VisionTransformer, in order."""
    return list(model.blocks)
