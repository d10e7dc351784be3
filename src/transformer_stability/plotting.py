"""Shared figure machinery: Agg backend, one seaborn theme, and
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
    """seaborn, imported where a figure is drawn: it loads scipy.stats (about 1 s), which every
    Snakemake invocation and job would otherwise pay for when it imports the registry."""
    import seaborn as sns

    return sns


def set_style() -> None:
    import matplotlib

    seaborn().set_theme(context="paper", style="ticks", font_scale=1.1)
    matplotlib.rcParams.update({"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3})


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
