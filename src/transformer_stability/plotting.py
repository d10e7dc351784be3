"""Shared figure machinery: Agg backend, one seaborn theme, and
the declaration every figure of the registry (`registry.py`) is made of."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


@dataclass(frozen=True)
class FigureSpec:
    """One paper figure, declared once: the registry, `rule all`, the plot rule, the report and
    the README follow from it.

    `tables` maps each keyword argument of `plot` to the table it is drawn from (the output of
    a data rule); `caption` is reST with Jinja fields over the run's `config`; `labels` gives
    the report labels of the figure for a config.
    """

    name: str  # results/figures/<name>.pdf and .png
    code: str  # the paper-figure code, e.g. "A3"
    study: str  # apjn | numerics | counting
    tables: Mapping[str, str]
    plot: Callable[..., Figure]
    caption: str
    labels: Callable[[dict[str, Any]], dict[str, str]]

    @property
    def pdf(self) -> str:
        return f"results/figures/{self.name}.pdf"


def seaborn() -> ModuleType:
    """seaborn, imported where a figure is drawn: it loads scipy.stats (about 1 s), which every
    Snakemake invocation and job would otherwise pay for when it imports the registry."""
    import seaborn as sns

    return sns


def set_style() -> None:
    seaborn().set_theme(context="paper", style="ticks", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3})
