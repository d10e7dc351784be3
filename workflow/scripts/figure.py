"""Rule figure: draw one registered figure from its tables (PDF + PNG). The figure is the
`FIGURE` of its own module (`params.module`), which names its tables' models and its plot
function; the job imports that module alone, not the registry of every study. The settings
its tables record are recorded beside it, for its caption and report labels; tables made under
different configurations are refused (one caption could describe only one)."""

import importlib

from transformer_stability.io import read_table, save_figure, write_settings
from transformer_stability.logs import setup_logging
from transformer_stability.plotting import figure_settings

setup_logging(snakemake.log[0])
figure = importlib.import_module(snakemake.params.module).FIGURE
settings = figure_settings(figure, snakemake.input)
# a caption or label field the tables do not record fails here, not when the report is built
figure.render_caption(settings)
figure.labels(settings)
tables = {name: read_table(snakemake.input[name], model) for name, model in figure.tables.items()}
write_settings(snakemake.output.pdf, settings)
save_figure(figure.plot(**tables), snakemake.output.pdf, snakemake.output.png)
