"""C5: the growth exponents of B_min(L), the theory's beside the fitted ones: the exponent
table (exponents.csv) drawn as a figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import PLACEMENT_LABELS
from transformer_stability.counting.tables import Exponents
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_exponent_table(table: pd.DataFrame) -> Figure:
    """C5: the exponent table rendered as a figure."""
    set_style()

    def fmt(value, window=None) -> str:
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            return "—"
        text = f"{value:.2f}".replace("-0.00", "0.00")
        return f"{text}  (L {window})" if isinstance(window, str) and window else text

    cells = [
        [
            PLACEMENT_LABELS[r.placement],
            r.readout,
            fmt(r.predicted),
            fmt(r.lower_bound, r.lower_bound_window),
            fmt(r.construction, r.construction_window),
            fmt(r.training, r.training_window),
            fmt(r.training_bound, r.training_bound_window),
            r.note if isinstance(r.note, str) else "",  # empty notes read back as NaN
        ]
        for r in table.itertuples()
    ]
    fig = new_figure(figsize=(15, 0.32 * len(cells) + 0.8), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    header = [
        "placement",
        "read-out",
        "theory",
        "lower bound (fit)",
        "construction (fit)",
        "training (fit)",
        "lower bound on training's lengths",
        "note",
    ]
    tab = ax.table(cellText=cells, colLabels=header, loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8.5)
    tab.auto_set_column_width(list(range(len(header))))
    tab.scale(1, 1.4)
    ax.set_title(
        "C5: growth exponent of $B_{\\min}(L)$ — theory vs least-squares fits of log B on log L "
        "over the longest lengths (fit window and point count beside each)"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_exponents",
    code="C5",
    study="counting",
    tables={"table": Exponents},
    plot=plot_exponent_table,
    caption="""\
C5. Growth exponent of B_min(L) per normalization placement and read-out: the theory's
prediction next to least-squares slopes of log B_min on log L over the longest lengths (the
last {{ config["counting"]["theory"]["fit_points"] }} finite points; window and point count in
each cell) of the lower bounds, of the verified constructions and of the trained B_min (C4).
Beside the trained exponent, the lower bound fitted over the very same lengths (over a short
window its local slope is what training can match). Bare pre-norm has a wall instead of a rate.
""",
    labels=report_labels("C5", "table of exponents", "none, pre, post (bare and learned)"),
)
