"""timm ViTs for the APJN study: norm variants, ReLU MLPs, init multipliers, mean-field constants.

Models are random-init timm `VisionTransformer`s (no hub access), put in eval mode with the
non-fused attention path so forward-mode AD works and results do not depend on the kernel.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import torch
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from transformer_stability.apjn.measure import piece_ranges
from transformer_stability.apjn.names import SATURATING, NormName
from transformer_stability.apjn.spec import TIMM_INIT_STD, ViTSpec, resolve_init_std
from transformer_stability.apjn.theory import MeanField


class SaturatingNorm(nn.Module):
    """gamma * f(alpha x) + beta with f = tanh (DyT) or erf (Derf): an elementwise stand-in for
    LayerNorm. alpha is one scalar per module; gamma = 1 and beta = 0 at init."""

    def __init__(self, width: int, kind: NormName, alpha: float) -> None:
        super().__init__()
        if kind not in SATURATING:
            raise ValueError(f"SaturatingNorm is one of {SATURATING}, not {kind!r}")
        self.kind = kind
        self.alpha = nn.Parameter(torch.tensor(float(alpha)))
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.alpha * x
        f = torch.tanh(z) if self.kind == "dyt" else torch.erf(z)
        return self.weight * f + self.bias

    def extra_repr(self) -> str:
        return f"kind={self.kind}, alpha={self.alpha.item():g}, width={self.weight.numel()}"


def _replace_block_norms(block: nn.Module, spec: ViTSpec) -> None:
    block.norm1 = SaturatingNorm(spec.width, spec.norm, spec.alpha)
    block.norm2 = SaturatingNorm(spec.width, spec.norm, spec.alpha)


def _replace_norms(model: VisionTransformer, spec: ViTSpec) -> None:
    """Swap every block LayerNorm and the final norm for the saturating map (norm_pre stays)."""
    for block in model.blocks:
        _replace_block_norms(block, spec)
    if isinstance(model.norm, nn.LayerNorm):
        model.norm = SaturatingNorm(spec.width, spec.norm, spec.alpha)


@torch.no_grad()
def _scale_init(model: VisionTransformer, spec: ViTSpec) -> None:
    """Every block Linear weight rescaled from timm's std 0.02 to spec.init_std."""
    scale = resolve_init_std(spec.init_std, spec.width) / TIMM_INIT_STD
    for block in model.blocks:
        for linear in (block.attn.qkv, block.attn.proj, block.mlp.fc1, block.mlp.fc2):
            linear.weight.mul_(scale)


def _scaled(param: nn.Parameter, factor: float, rows: slice = slice(None)) -> nn.Parameter:
    """A new parameter: `param` with `rows` multiplied by `factor`."""
    value = param.detach().clone()
    value[rows].mul_(factor)
    return nn.Parameter(value, requires_grad=param.requires_grad)


def _multiply(block: nn.Module, spec: ViTSpec) -> None:
    """attn_mult scales the V rows of qkv (weight and bias) and the out-projection, mlp_mult
    fc1 and fc2 weights: as new parameters, so that weights a block shares are left alone."""
    v_rows = slice(2 * spec.width, None)
    attn, mlp = block.attn, block.mlp
    if spec.attn_mult != 1.0:
        attn.qkv.weight = _scaled(attn.qkv.weight, spec.attn_mult, v_rows)
        attn.qkv.bias = _scaled(attn.qkv.bias, spec.attn_mult, v_rows)
        attn.proj.weight = _scaled(attn.proj.weight, spec.attn_mult)
    if spec.mlp_mult != 1.0:
        mlp.fc1.weight = _scaled(mlp.fc1.weight, spec.mlp_mult)
        mlp.fc2.weight = _scaled(mlp.fc2.weight, spec.mlp_mult)


def build_vit(spec: ViTSpec, seed: int) -> VisionTransformer:
    """A random-init timm ViT for `spec`, in eval mode, seeded explicitly."""
    if spec.norm != "ln" and (spec.alpha is None or spec.alpha <= 0):
        raise ValueError(f"norm {spec.norm!r} needs a positive alpha")
    with torch.random.fork_rng(devices=[]):  # seed the init without touching global state
        torch.manual_seed(seed)
        model = VisionTransformer(
            img_size=spec.img_size,
            patch_size=spec.patch_size,
            in_chans=spec.in_chans,
            num_classes=spec.num_classes,
            embed_dim=spec.width,
            depth=spec.depth,
            num_heads=spec.heads,
            mlp_ratio=spec.mlp_ratio,
            drop_path_rate=0.0,
            act_layer=nn.ReLU if spec.relu else nn.GELU,
        )
    for block in model.blocks:
        block.attn.fused_attn = False
    if spec.norm != "ln":
        _replace_norms(model, spec)
    _scale_init(model, spec)
    for block in model.blocks:
        _multiply(block, spec)
    return model.eval()


@torch.no_grad()
def block_moments(block: nn.Module) -> tuple[float, float]:
    """(a, m) of one block from its weights' second moments, sigma^2 = fan_in * mean(W^2): a =
    sigma_O^2 sigma_V^2 of the attention, m = sigma_1^2 sigma_2^2 of the MLP."""
    d = block.attn.qkv.in_features
    w_v = block.attn.qkv.weight[2 * d :]
    sigma_v = w_v.shape[1] * w_v.pow(2).mean()
    sigma_o = block.attn.proj.in_features * block.attn.proj.weight.pow(2).mean()
    sigma_1 = block.mlp.fc1.in_features * block.mlp.fc1.weight.pow(2).mean()
    sigma_2 = block.mlp.fc2.in_features * block.mlp.fc2.weight.pow(2).mean()
    return float(sigma_o * sigma_v), float(sigma_1 * sigma_2)


def mean_field_of(moments: list[tuple[float, float]], n_tokens: int) -> MeanField:
    """(a, m) averaged over the blocks' `moments`, at N = `n_tokens` (CLS excluded): what the
    theory sees, including multipliers and sampling noise."""
    a, m = (sum(values) / len(moments) for values in zip(*moments, strict=True))
    return MeanField(a=a, m=m, n_tokens=n_tokens)


def mean_field_from_model(model: VisionTransformer) -> MeanField:
    """(a, m) of a built model, averaged over its blocks."""
    n_tokens = model.patch_embed.num_patches + model.num_prefix_tokens - 1
    return mean_field_of([block_moments(block) for block in model.blocks], n_tokens)


def block_seed(seed: int, block: int) -> int:
    """The seed of block `block` of a measured model: one per (initialization, block), so any
    block is built alone with the weights it has in the whole model."""
    return int(np.random.SeedSequence([seed, block]).generate_state(1)[0])


def build_embedding(spec: ViTSpec, seed: int) -> VisionTransformer:
    """The measured model's input side (patch embedding, CLS, positions): a block-free ViT."""
    return build_vit(spec.with_(depth=0), seed)


_DRAWN: OrderedDict[tuple[ViTSpec, int], nn.Module] = OrderedDict()
"""The blocks drawn last (spec.draws(), seed): a few recent ones are kept for measured_block."""


def measured_block(spec: ViTSpec, seed: int, kept: int) -> nn.Module:
    """Block 0 of build_vit(spec at depth 1, seed), bit for bit. Its random weights are drawn
    once per (spec.draws(), seed) while it is among the last `kept` drawn: the models of a
    sweep that differ only in norm, α or multipliers (one initialization of every variant)
    share them, and drawing the weights is most of what building a block costs. The block
    has its own parameters over the shared storage (the multiplied ones are new tensors), so
    moving or casting it leaves the kept block as it is."""
    key = (spec.draws(), seed)
    drawn = _DRAWN.pop(key, None)
    if drawn is None:
        drawn = build_vit(key[0], seed).blocks[0]
    _DRAWN[key] = drawn
    while len(_DRAWN) > kept:
        _DRAWN.popitem(last=False)
    own = {id(p): nn.Parameter(p.detach(), p.requires_grad) for p in drawn.parameters()}
    block = copy.deepcopy(drawn, memo=own)
    if spec.norm != "ln":
        _replace_block_norms(block, spec)
    _multiply(block, spec)
    return block


class BuiltBlocks:
    """The blocks of one measured model (initialization `seed`), built `size` at a time on the
    device, each from its own seed (`block_seed`): memory holds one piece, whatever the depth,
    and the numbers do not depend on `size`. The last piece built is kept, so a model of one
    piece is built once; the (a, m) of every block is recorded as it is first built."""

    def __init__(
        self, spec: ViTSpec, seed: int, size: int, device: torch.device, dtype: torch.dtype
    ) -> None:
        self.spec, self.seed, self.size = spec, seed, size
        self.device, self.dtype = device, dtype
        self.moments: dict[int, tuple[float, float]] = {}
        self._held: tuple[range, list[nn.Module]] = (range(0), [])

    def __len__(self) -> int:
        return self.spec.depth

    def pieces(self, start: int = 0) -> list[range]:
        return piece_ranges(self.spec.depth, self.size, start)

    def piece(self, blocks: range) -> list[nn.Module]:
        held, built = self._held
        if blocks.start in held and blocks.stop <= held.stop:
            return built[blocks.start - held.start : blocks.stop - held.start]
        self._held = (range(0), [])  # free the piece held before building the next
        one = self.spec.with_(depth=1)
        built = []
        for b in blocks:
            block = measured_block(one, block_seed(self.seed, b), kept=self.size)
            self.moments.setdefault(b, block_moments(block))
            built.append(block.to(self.device, self.dtype))
        self._held = (blocks, built)
        return built

    def mean_field(self) -> MeanField:
        """(a, m) over every block, once every block has been built."""
        if len(self.moments) != self.spec.depth:
            raise ValueError(f"{len(self.moments)} of {self.spec.depth} blocks built so far")
        moments = [self.moments[b] for b in range(self.spec.depth)]
        return mean_field_of(moments, self.spec.n_tokens - 1)
