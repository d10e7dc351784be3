"""Shared figure machinery: Agg backend, one house style, and
the declaration every figure of the registry (`registry.py`) is made of.

matplotlib is imported where a figure is drawn, not when a figure is declared: every Snakemake
invocation and most jobs import the registry (its declarations) and draw nothing."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, StrictUndefined

from transformer_stability.io import read_table, save_figure, write_settings
from transformer_stability.settings import Settings, read_settings, sidecar, tables_settings
from transformer_stability.tables import Table, meta, result

if TYPE_CHECKING:
    from matplotlib.figure import Figure

os.environ.setdefault("MPLBACKEND", "Agg")  # files only, whoever imports pyplot first


@dataclass(frozen=True)
class FigureSpec:
    """One paper figure, declared once: the registry, `rule all`, the plot rule, the report and
    the README follow from it.

    `tables` maps each keyword argument of `plot` to the model of the table it is drawn from
    (the output of a data rule); `caption` is reST with Jinja fields over `config`, and
    `labels` gives the report labels of the figure for a `config`: both are given the settings
    the figure's own tables record (`figure_settings`), never the config of whatever run came
    last. The caption ends with the tables' paths and rules, from their models (`template`).
    """

    name: str  # results/figures/<name>.pdf and .png
    code: str  # the paper-figure code, e.g. "A3"
    study: str  # apjn | numerics | counting
    tables: Mapping[str, type[Table]]
    plot: Callable[..., Figure]
    caption: str
    labels: Callable[[dict[str, Any]], dict[str, str]]

    @property
    def pdf(self) -> str:
        return f"results/figures/{self.name}.pdf"

    @property
    def log(self) -> str:
        """The log of the job that draws it (kept when the job fails and its files are not)."""
        return f"results/logs/figures/{self.name}.log"

    @property
    def inputs(self) -> dict[str, str]:
        """The path of each table, by the keyword argument of `plot` it is given to."""
        return {name: result(model) for name, model in self.tables.items()}

    @property
    def template(self) -> str:
        """The caption, then where its data come from."""
        sources = dict.fromkeys(
            f"{result(m)} (rule {meta(m)['rule']})" for m in self.tables.values()
        )
        return f"{self.caption.rstrip()}\nData: {', '.join(sources)}.\n"

    def render_caption(self, settings: Settings) -> str:
        """The caption for these settings; a field they do not hold is an error, not a blank."""
        return render_caption(self.template, settings)


def natural_order(code: str) -> tuple[Any, ...]:
    """Sort key of a figure code that reads its numbers as numbers: A1, A1-theory, A2, A10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", code))


FIGURE_SPACE = "\u2007"  # as wide as a digit, and collated before every digit


def listed_code(code: str) -> str:
    """A figure code as the report lists it, a one-digit number after a figure space (A 1,
    A 1-theory, A 2, A10): Snakemake's report sorts labels as plain strings (`localeCompare`),
    which lists A10 before A2."""
    return re.sub(r"^([A-Za-z]+)(\d)(?!\d)", rf"\g<1>{FIGURE_SPACE}\g<2>", code)


def figures_in(package: str) -> tuple[FigureSpec, ...]:
    """The figures of a study's figures `package`: the `FIGURE` of each of its modules (one
    module per figure; modules named with a leading underscore hold shared helpers), in the
    natural order of their codes. The package's `__init__` imports none of them, so that a
    figure's code input (`code_inputs.module_closure`) is its own module and the helpers it uses:
    editing one plot redraws one figure."""
    root = importlib.import_module(package)
    names = [m.name for m in pkgutil.iter_modules(root.__path__) if not m.name.startswith("_")]
    modules = [importlib.import_module(f"{package}.{name}") for name in names]
    missing = [
        m.__name__ for m in modules if not isinstance(getattr(m, "FIGURE", None), FigureSpec)
    ]
    if missing:
        raise TypeError(f"figure modules without a FIGURE declaration: {', '.join(missing)}")
    return tuple(sorted((m.FIGURE for m in modules), key=lambda f: natural_order(f.code)))


def render_caption(caption: str, settings: Settings) -> str:
    """A caption template (reST with Jinja fields over `config`) rendered for `settings`."""
    template = Environment(undefined=StrictUndefined).from_string(caption)
    return template.render(config=settings).strip()


def figure_settings(figure: FigureSpec, inputs: Mapping[str, str | Path]) -> Settings:
    """The settings the figure's tables record (its job's `inputs`, by name), merged; refused
    (settings.SettingsError naming the tables and the key) where two of them disagree."""
    return tables_settings({name: inputs[name] for name in figure.tables})


def draw_figure(figure: FigureSpec, inputs: Mapping[str, str | Path], pdf: Path, png: Path) -> None:
    """Draw `figure` from its tables (the job's `inputs`, by name) into `pdf` and `png`, and
    record the settings of those tables beside them, last: a drawing that fails leaves no
    record behind (an older one goes first, as Snakemake removes the older figure), so no
    settings ever describe a figure that is not there."""
    sidecar(pdf).unlink(missing_ok=True)
    settings = figure_settings(figure, inputs)
    # a caption or label field the tables do not record fails here, not when the report is built
    figure.render_caption(settings)
    figure.labels(settings)
    tables = {name: read_table(inputs[name], model) for name, model in figure.tables.items()}
    save_figure(figure.plot(**tables), pdf, png)
    write_settings(pdf, settings)


@dataclass(frozen=True)
class ReportCaption:
    """A figure's caption as its report entry shows it: rendered when the report is built,
    from the settings the figure job recorded beside the figure (those of the tables it was
    drawn from; workflow/report/figure.rst calls `render` with the job's outputs). It is the
    figure job's parameter so that the caption template can reach it; as a parameter it shows
    only this short text, and Snakemake keeps no record of it (not a builtin)."""

    caption: str  # the FigureSpec's template (a job's parameters are pickled: no FigureSpec)

    def render(self, outputs: Mapping[str, str | Path]) -> str:
        return render_caption(self.caption, read_settings(outputs["pdf"]))

    def __str__(self) -> str:
        return "rendered from the settings of its tables"


def seaborn() -> ModuleType:
    """seaborn, for the one figure that draws with it (A3's strip plot): it loads scipy.stats
    (about 1 s), which no other figure job need pay for."""
    import seaborn as sns

    return sns


# The house style: seaborn's "paper" context at font scale 1.1 with its "ticks" style and
# "deep" colours, written out as matplotlib settings so that a figure job need not import
# seaborn to look like one; light grid lines on every axes.
_INK = "0.15"
STYLE: dict[str, Any] = {
    "figure.dpi": 100,
    "font.size": 10.56,
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "sans-serif"],
    "text.color": _INK,
    "axes.edgecolor": _INK,
    "axes.labelcolor": _INK,
    "axes.labelsize": 10.56,
    "axes.titlesize": 10.56,
    "axes.linewidth": 1.0,
    "axes.axisbelow": True,
    "axes.grid": True,
    "grid.color": "0.8",
    "grid.alpha": 0.3,
    "legend.fontsize": 9.68,
    "legend.title_fontsize": 10.56,
    "lines.linewidth": 1.2,
    "lines.markersize": 4.8,
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "white",
    "patch.force_edgecolor": True,
    "patch.linewidth": 0.8,
    **{
        f"{axis}tick.{key}": value
        for axis in "xy"
        for key, value in {
            "color": _INK,
            "labelsize": 9.68,
            "major.size": 4.8,
            "major.width": 1.0,
            "minor.size": 3.2,
            "minor.width": 0.8,
        }.items()
    },
}
DEEP_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3")
DEEP_COLORS += ("#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")


def set_style() -> None:
    import matplotlib
    from cycler import cycler

    matplotlib.rcParams.update(STYLE)
    matplotlib.rcParams["axes.prop_cycle"] = cycler(color=DEEP_COLORS)


def sequential_colors(count: int, name: str = "viridis") -> list[tuple[float, ...]]:
    """`count` colours spread over a sequential colormap, its two ends left out (the palest is
    too light to read on white)."""
    import numpy as np
    from matplotlib import colormaps

    return [colormaps[name](x) for x in np.linspace(0, 1, count + 2)[1:-1]]


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib Figure (not registered with pyplot, so nothing keeps it alive)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def matplotlib_ticker() -> ModuleType:
    """matplotlib.ticker, imported where a figure is drawn."""
    import matplotlib.ticker

    return matplotlib.ticker


def legend_line(**kwargs: Any):
    """A legend entry drawn as a line with `kwargs` (colour, style, marker, label)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **kwargs)


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **kwargs: Any):
    """(figure, axes) as pyplot.subplots gives them, on a constrained-layout `new_figure`."""
    fig = new_figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, **kwargs)
