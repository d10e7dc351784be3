"""The specification of one Study A model, kept free of torch so that theory and plotting jobs
start fast."""

from __future__ import annotations

from dataclasses import dataclass, replace

from transformer_stability.apjn.names import NormName

TIMM_INIT_STD = 0.02
"""timm's trunc-normal std of every Linear weight in a ViT block."""

VIT_B_WIDTH = 768


def resolve_init_std(init_std: str | float, width: int) -> float:
    """The std of every block Linear weight. "vit_b" keeps ViT-B's fan_in * std^2 per layer
    (std 0.02 at width 768, so a = 0.0944 and m = 0.3775 for MLP ratio 4) at any width:
    std = 0.02 sqrt(768 / width); a positive number is used as it is."""
    if init_std == "vit_b":
        return TIMM_INIT_STD * (VIT_B_WIDTH / width) ** 0.5
    if isinstance(init_std, str) or not init_std > 0:
        raise ValueError(f"init_std is 'vit_b' or a positive number, not {init_std!r}")
    return float(init_std)


@dataclass(frozen=True)
class ViTSpec:
    """Everything that defines one model of the study."""

    width: int
    heads: int
    depth: int
    img_size: int
    patch_size: int
    mlp_ratio: float = 4.0
    norm: NormName = "ln"
    alpha: float | None = None
    attn_mult: float = 1.0
    mlp_mult: float = 1.0
    init_std: str | float = TIMM_INIT_STD  # "vit_b" or a std; resolve_init_std
    relu: bool = True
    num_classes: int = 0
    in_chans: int = 3

    @property
    def n_tokens(self) -> int:
        """Patches plus CLS."""
        return (self.img_size // self.patch_size) ** 2 + 1

    def with_(self, **changes) -> ViTSpec:
        return replace(self, **changes)

    def draws(self) -> ViTSpec:
        """The spec of a one-block model that draws the same random weights as any block of
        this one: the norm, α and multipliers are applied after the draws, so models that
        differ only in them share their random weights."""
        return replace(self, depth=1, norm="ln", alpha=None, attn_mult=1.0, mlp_mult=1.0)

    @classmethod
    def from_config(cls, model: dict, **changes) -> ViTSpec:
        """From a config `model` section (width, heads, depth, img_size, patch_size, mlp_ratio,
        init_std where the section has it, else timm's) plus any other fields."""
        keys = ("width", "heads", "depth", "img_size", "patch_size", "mlp_ratio")
        init_std = model.get("init_std", TIMM_INIT_STD)
        return cls(**{key: model[key] for key in keys}, init_std=init_std, **changes)
