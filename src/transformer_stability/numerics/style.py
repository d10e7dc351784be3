"""How Study N's figures name and colour what they show. Only figure modules import this, so
restyling never reruns a measurement."""

from __future__ import annotations

from transformer_stability.numerics.items import SOURCES

NUMERICS_NORM_COLORS = {"layernorm": "tab:red", "rmsnorm": "tab:blue"}
SOFTMAX_MODE_COLORS = {"unshifted": "tab:red", "shifted": "tab:blue", "propagation": "black"}
# the softmax's real torch casts (N6); an emulated m<bits> format is drawn in grey
SOFTMAX_FORMAT_COLORS = {"fp16": "tab:orange", "bf16": "tab:purple"}
ALPHA_CMAP = "viridis"  # one colour per residual scaling alpha
OMEGA_LABELS = {
    "omega_ov": "ω_OV = ‖W_O‖∞‖W_V‖∞",
    "omega_ud": "ω_UD = ‖W_fc‖∞‖W_proj‖∞",
    "omega_kq": "ω_KQ",
}
TAB10 = [
    f"tab:{name}"
    for name in (
        "blue",
        "orange",
        "green",
        "red",
        "purple",
        "brown",
        "pink",
        "gray",
        "olive",
        "cyan",
    )
]
"""matplotlib's tab10 cycle by name, resolved when drawn (a style imports no matplotlib)."""
# one colour per rounding source of N8 (numerics.items.SOURCES), "all" in black
SOURCE_COLORS = {
    "all": "black",
    **dict(zip(SOURCES, TAB10, strict=True)),
}
