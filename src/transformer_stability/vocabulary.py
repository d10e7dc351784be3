"""Names, labels and colours of everything the figures and the report show, in one place.

Only figure modules and the workflow's report labels import this module; the computing modules
use the bare identifiers (`ln`, `post_learned`, ...), so restyling a figure never reruns a
measurement.
"""

from __future__ import annotations

STUDY_CATEGORIES = {
    "apjn": "Study A: signal propagation",
    "numerics": "Study N: numerics",
    "counting": "Study C: counting",
}

# Study A: the norm of every block (pre-LN, or a saturating map with scalar alpha_0)
NORM_LABELS = {"ln": "pre-LN", "derf": "Derf", "dyt": "DyT"}
NORM_ORDER = {"ln": 0, "derf": 1, "dyt": 2}
NORM_LINESTYLES = {"ln": "-", "derf": "-", "dyt": "--"}
PRE_LN_COLOR = "black"
# each saturating norm on its own colour map, away from the map's palest end (positions in [0, 1])
NORM_CMAPS = {"derf": ("viridis", 0.15, 0.85), "dyt": ("Oranges", 0.5, 0.95)}
NORM_COLORS = {"ln": "black", "derf": "#21918c", "dyt": "#b63c02"}  # one colour per norm


def variant_label(norm: str, alpha: float | None) -> str:
    """'pre-LN', 'Derf α=1.5', ..."""
    name = NORM_LABELS[norm]
    return name if alpha is None else f"{name} α={alpha:g}"


# Study N: residual scaling, weight magnitudes, norms and softmax evaluation modes
NUMERICS_NORM_COLORS = {"layernorm": "tab:red", "rmsnorm": "tab:blue"}
SOFTMAX_MODE_COLORS = {"unshifted": "tab:red", "shifted": "tab:blue", "propagation": "black"}
ALPHA_CMAP = "viridis"  # one colour per residual scaling alpha
OMEGA_LABELS = {
    "omega_ov": "ω_OV = ‖W_O‖∞‖W_V‖∞",
    "omega_ud": "ω_UD = ‖W_fc‖∞‖W_proj‖∞",
    "omega_kq": "ω_KQ",
}

# Study C: where the norm sits, and the read-out
PLACEMENT_LABELS = {
    "none": "no norm",
    "pre_bare": "pre-norm (bare)",
    "pre_learned": "pre-norm (learned gain)",
    "post_bare": "post-norm (bare)",
    "post_learned": "post-norm (learned gain)",
}
PLACEMENT_COLORS = {
    "none": "black",
    "pre_bare": "tab:purple",
    "pre_learned": "tab:orange",
    "post_bare": "tab:blue",
    "post_learned": "tab:green",
}
READOUT_COLORS = {"regression": "tab:red", "classification": "tab:blue"}
