"""Identifiers of Study C (placements of the norm, attention kinds, read-outs), torch-free, so
that the items, the rates and the workflow can name them without importing the model."""

from __future__ import annotations

from typing import Literal

Placement = Literal["none", "pre_bare", "pre_learned", "post_bare", "post_learned"]
Attention = Literal["softmax", "linear"]
Readout = Literal["regression", "classification"]

PLACEMENTS: tuple[Placement, ...] = ("none", "pre_bare", "pre_learned", "post_bare", "post_learned")
READOUTS: tuple[Readout, ...] = ("regression", "classification")
