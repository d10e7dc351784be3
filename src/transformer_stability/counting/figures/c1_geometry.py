"""C1: where each explicit construction puts the output at Q as the count grows (a line or an
arc of the sphere): the geometry its read-out has to separate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.counting.figures._common import PLACEMENTS
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import PLACEMENT_LABELS
from transformer_stability.counting.tables import Geometry
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_geometry(geometry: pd.DataFrame) -> Figure:
    """C1: psi(z(c, 0)) of each construction on its best 2-plane, coloured by c."""
    set_style()
    fig = new_figure(figsize=(15, 6.2), layout="constrained")
    axes = fig.subplots(2, len(PLACEMENTS))
    length = int(geometry["L"].iloc[0])
    scatter = None
    for row, readout in enumerate(("regression", "classification")):
        for col, placement in enumerate(PLACEMENTS):
            ax = axes[row, col]
            part = geometry[(geometry["placement"] == placement) & (geometry["readout"] == readout)]
            if part.empty:
                ax.text(
                    0.5,
                    0.5,
                    "no construction\n(past the pre-norm wall)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                )
            else:
                ax.plot(part["x"], part["y"], color="0.7", lw=0.8, zorder=1)
                scatter = ax.scatter(
                    part["x"], part["y"], c=part["c"], cmap="viridis", s=14, zorder=2
                )
                ax.plot([0], [0], "k+", ms=8)
                ax.set_aspect("equal", adjustable="datalim")
            ax.set_title(f"{PLACEMENT_LABELS[placement]}\n{readout}", fontsize=9)
            ax.tick_params(labelsize=7)
    if scatter is not None:
        fig.colorbar(scatter, ax=axes, label="count c (m = 0)", shrink=0.8)
    fig.suptitle(
        f"C1: output at Q of the explicit constructions, c = 0..{length}, on its best 2-plane "
        "through the origin (+)"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_geometry",
    code="C1",
    study="counting",
    tables={"geometry": Geometry},
    plot=plot_geometry,
    caption="""\
C1. Output at the query token Q of the explicit constructions of Study C (d =
{{ config["counting"]["theory"]["widths"][0] }}, L =
{{ config["counting"]["geometry_length"] }}), for c = 0..L and m = 0, projected on the best
2-plane through the origin (+), coloured by the count c. Top: regression constructions. Without
a norm or with pre-norm the outputs lie on a line; with bare post-norm they lie on an arc of the
sphere of radius sqrt(d) (the direction of an affine line in c, read by a cosine). With a
learned gain the construction puts gain and read-out on one coordinate (u ⊙ gamma along one
axis), so gamma ⊙ N(z) + beta is the projection of that arc on the axis: a line. Bottom:
classification constructions,
whose outputs are read by one head row per count (nearest-direction head on the arc or line,
barycentric head for pre-norm). The setting is a reconstruction from the seed paper's abstract.
""",
    labels=report_labels("C1", "representation geometry", "none, pre, post (bare and learned)"),
)
