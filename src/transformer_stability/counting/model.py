"""The one-layer counting model of docs/counting.md, batched over runs.

Every trainable parameter is a vector. Parameters carry a leading run axis R so that many
independent models (different L, B, seed) are evaluated and trained in one tensor program: the
loss is a sum over runs, so gradients (and Adam, which is elementwise) never mix runs.

Shapes: e_q, e_a, e_b, u, gamma, beta: (R, d); b0: (R, 1); head_w: (R, K, d); head_b: (R, K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch

from transformer_stability.counting.names import Attention, Placement, Readout


@dataclass(frozen=True)
class ModelSpec:
    """What is fixed about a model: placement, attention, read-out, width, max length L."""

    placement: Placement
    readout: Readout
    d: int
    length: int
    attention: Attention = "softmax"

    @property
    def tau(self) -> float:
        return math.sqrt(self.d)

    @property
    def n_classes(self) -> int:
        return self.length + 1

    @property
    def pre(self) -> bool:
        return self.placement.startswith("pre")

    @property
    def post(self) -> bool:
        return self.placement.startswith("post")

    @property
    def learned(self) -> bool:
        return self.placement.endswith("learned")


@dataclass
class Params:
    """Stacked parameters of R runs; gamma/beta only for learned norms, the head only for
    classification (None otherwise)."""

    e_q: torch.Tensor
    e_a: torch.Tensor
    e_b: torch.Tensor
    u: torch.Tensor | None = None
    b0: torch.Tensor | None = None
    gamma: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    head_w: torch.Tensor | None = None
    head_b: torch.Tensor | None = None

    def tensors(self) -> dict[str, torch.Tensor]:
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def map(self, fn) -> Params:
        return replace(self, **{k: fn(v) for k, v in self.tensors().items()})

    @property
    def runs(self) -> int:
        return self.e_q.shape[0]

    def vector_norms(self) -> dict[str, torch.Tensor]:
        """2-norm of every trainable vector, (R, ...) per kind; head rows include their bias."""
        out = {}
        for name, value in self.tensors().items():
            if name == "head_w":
                out[name] = torch.sqrt((value**2).sum(-1) + self.head_b**2)
            elif name != "head_b":
                out[name] = value.norm(dim=-1)
        return out

    def max_vector_norm(self) -> torch.Tensor:
        """Largest trainable-vector norm of each run, (R,)."""
        return torch.stack(
            [n.reshape(self.runs, -1).amax(1) for n in self.vector_norms().values()]
        ).amax(0)


def layer_norm(x: torch.Tensor) -> torch.Tensor:
    """N(x) = sqrt(d) P x / |P x| with P = I - 11^T/d (LayerNorm with eps = 0)."""
    centred = x - x.mean(-1, keepdim=True)
    return math.sqrt(x.shape[-1]) * centred / centred.norm(dim=-1, keepdim=True)


def _affine_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """gamma ⊙ N(x) + beta, with gamma/beta (R, d) broadcast over the middle axes of x."""
    shape = (gamma.shape[0],) + (1,) * (x.dim() - 2) + (gamma.shape[-1],)
    return gamma.reshape(shape) * layer_norm(x) + beta.reshape(shape)


def pre_map(spec: ModelSpec, p: Params, x: torch.Tensor) -> torch.Tensor:
    """phi: the map applied to every token before attention."""
    if spec.placement == "pre_bare":
        return layer_norm(x)
    if spec.placement == "pre_learned":
        return _affine_norm(x, p.gamma, p.beta)
    return x


def post_map(spec: ModelSpec, p: Params, z: torch.Tensor) -> torch.Tensor:
    """psi: the map applied to the attention output at Q."""
    if spec.placement == "post_bare":
        return layer_norm(z)
    if spec.placement == "post_learned":
        return _affine_norm(z, p.gamma, p.beta)
    return z


def logit_margins(logits: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """True-class logit minus the largest other logit at every grid point, (R, G): positive
    exactly where the argmax is right."""
    true = logits.gather(-1, c.expand(logits.shape[0], -1)[..., None])[..., 0]
    others = logits.scatter(-1, c.expand(logits.shape[0], -1)[..., None], -math.inf)
    return true - others.amax(-1)


def readout(spec: ModelSpec, p: Params, h: torch.Tensor) -> torch.Tensor:
    """Regression: y (R, G). Classification: logits (R, G, L+1)."""
    if spec.readout == "regression":
        return torch.einsum("rgd,rd->rg", h, p.u) + p.b0
    return torch.einsum("rgd,rkd->rgk", h, p.head_w) + p.head_b[:, None, :]


def _scores(spec: ModelSpec, phi_q: torch.Tensor, phi_x: torch.Tensor) -> torch.Tensor:
    return (phi_q * phi_x).sum(-1) / spec.tau


def grid_representation(
    spec: ModelSpec, p: Params, c: torch.Tensor, m: torch.Tensor
) -> torch.Tensor:
    """psi(z) at Q for every grid point (c a's, m b's), (R, G, d), by multiplicities: the output
    of a position-free layer depends on the input only through (c, m)."""
    phi = pre_map(spec, p, torch.stack([p.e_q, p.e_a, p.e_b], 1))  # (R, 3, d)
    phi_q, phi_a, phi_b = phi[:, 0], phi[:, 1], phi[:, 2]
    s = _scores(spec, phi_q[:, None, :], phi)  # (R, 3)
    cc, mm = c.to(phi.dtype)[None, :, None], m.to(phi.dtype)[None, :, None]
    if spec.attention == "softmax":
        w = torch.exp(s - s.amax(1, keepdim=True))[:, None, :, None]  # (R, 1, 3, 1)
        num = w[:, :, 0] * phi_q[:, None] + cc * w[:, :, 1] * phi_a[:, None]
        num = num + mm * w[:, :, 2] * phi_b[:, None]
        mixed = num / (w[:, :, 0] + cc * w[:, :, 1] + mm * w[:, :, 2])
    else:
        s3 = s[:, None, :, None]
        mixed = s3[:, :, 0] * phi_q[:, None] + cc * s3[:, :, 1] * phi_a[:, None]
        mixed = mixed + mm * s3[:, :, 2] * phi_b[:, None]
    return post_map(spec, p, p.e_q[:, None, :] + mixed)


def grid_forward(spec: ModelSpec, p: Params, c: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """The model's output on grid points: (R, G) predictions or (R, G, L+1) logits."""
    return readout(spec, p, grid_representation(spec, p, c, m))


def sequence_forward(
    spec: ModelSpec, p: Params, tokens: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Ordinary forward pass on token sequences x_1..x_n (0 = a, 1 = b), padded: tokens and
    mask are (R, N, n_max); Q is prepended. Output as grid_forward, (R, N[, L+1])."""
    emb = torch.stack([p.e_a, p.e_b], 1)  # (R, 2, d)
    x = torch.gather(emb, 1, tokens.reshape(p.runs, -1, 1).expand(-1, -1, emb.shape[-1]))
    x = x.reshape(*tokens.shape, -1)  # (R, N, n, d)
    seq = torch.cat([p.e_q[:, None, None, :].expand(-1, x.shape[1], 1, -1), x], 2)
    keep = torch.cat([torch.ones_like(mask[..., :1]), mask], -1)
    phi = pre_map(spec, p, seq)
    s = _scores(spec, phi[:, :, :1], phi)  # (R, N, n+1)
    if spec.attention == "softmax":
        a = torch.softmax(s.masked_fill(~keep, -math.inf), -1)
    else:
        a = s * keep
    z = seq[:, :, 0] + (a[..., None] * phi).sum(2)
    return readout(spec, p, post_map(spec, p, z))
