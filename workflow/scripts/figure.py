"""Rule figure: draw one registered figure from its tables (PDF + PNG). The figure's
declaration (transformer_stability/registry.py) names its tables and its plot function. The
settings its tables record are recorded beside it, for its caption and report labels; tables
made under different configurations are refused (one caption could describe only one)."""

from transformer_stability.io import read_table, save_figure, write_settings
from transformer_stability.logs import setup_logging
from transformer_stability.plotting import figure_settings
from transformer_stability.registry import FIGURES, table_model

setup_logging(snakemake.log[0])
figure = FIGURES[snakemake.wildcards.figure]
settings = figure_settings(figure, snakemake.input)
# a caption or label field the tables do not record fails here, not when the report is built
figure.render_caption(settings)
figure.labels(settings)
paths = {name: snakemake.input[name] for name in figure.tables}
tables = {name: read_table(p, table_model(p)) for name, p in paths.items()}
write_settings(snakemake.output.pdf, settings)
save_figure(figure.plot(**tables), snakemake.output.pdf, snakemake.output.png)
