"""Every paper figure of the pipeline, by name. Each is declared once, beside its plot function,
in its study's figures module; `rule all`, the plot rule, the report, the tests and the README
table follow this registry."""

from __future__ import annotations

from transformer_stability.apjn.figures import FIGURES as _APJN
from transformer_stability.counting.figures import FIGURES as _COUNTING
from transformer_stability.numerics.figures import FIGURES as _NUMERICS
from transformer_stability.plotting import FigureSpec

FIGURES: dict[str, FigureSpec] = {f.name: f for f in (*_APJN, *_NUMERICS, *_COUNTING)}
STUDIES = ("apjn", "numerics", "counting")


def study_figures(study: str) -> list[FigureSpec]:
    """The figures of one study, in declaration order."""
    return [figure for figure in FIGURES.values() if figure.study == study]
