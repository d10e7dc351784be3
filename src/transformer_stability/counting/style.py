"""How Study C's figures name and colour norm placements and read-outs. Only figure modules
import this, so restyling never reruns a measurement."""

from __future__ import annotations

from transformer_stability.counting.names import Placement, Readout

PLACEMENT_LABELS: dict[Placement, str] = {
    "none": "no norm",
    "pre_bare": "pre-norm (bare)",
    "pre_learned": "pre-norm (learned gain)",
    "post_bare": "post-norm (bare)",
    "post_learned": "post-norm (learned gain)",
}
PLACEMENT_COLORS: dict[Placement, str] = {
    "none": "black",
    "pre_bare": "tab:purple",
    "pre_learned": "tab:orange",
    "post_bare": "tab:blue",
    "post_learned": "tab:green",
}
READOUT_COLORS: dict[Readout, str] = {"regression": "tab:red", "classification": "tab:blue"}
PLACEMENT_MARKERS: dict[Placement, str] = {
    "none": "o",
    "pre_bare": "s",
    "pre_learned": "^",
    "post_bare": "D",
    "post_learned": "v",
}
