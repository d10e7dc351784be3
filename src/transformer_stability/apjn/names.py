"""Study A's norm names, stated once: the norm of every block is pre-LN or a saturating map
(Derf, DyT) with a scalar alpha_0. Torch-free."""

from __future__ import annotations

from typing import Literal

NormName = Literal["ln", "derf", "dyt"]
NORMS: tuple[NormName, ...] = ("ln", "derf", "dyt")
SATURATING: tuple[NormName, ...] = ("derf", "dyt")  # the maps that take an alpha_0
