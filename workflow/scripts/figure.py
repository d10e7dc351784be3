"""Rule figure: draw one registered figure from its tables (PDF + PNG). The figure is the
`FIGURE` of its own module (`params.module`), which names its tables' models and its plot
function; the job imports that module alone, not the registry of every study. The settings
its tables record are recorded beside it once it is drawn, for its caption and report labels;
tables made under different configurations are refused (one caption could describe only one)."""

import importlib
from pathlib import Path

from transformer_stability.logs import setup_logging
from transformer_stability.plotting import draw_figure

setup_logging(snakemake.log[0])
figure = importlib.import_module(snakemake.params.module).FIGURE
draw_figure(figure, snakemake.input, Path(snakemake.output.pdf), Path(snakemake.output.png))
