"""Figure rules that draw one table (apjn_measured_figure, numerics_figure, and the
counting geometry and training figures): one plot function of a study's figures module
(params.study, params.plot) on one table -> PDF + PNG."""

from importlib import import_module

from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
figures = import_module(f"transformer_stability.{snakemake.params.study}.figures")
plot = getattr(figures, snakemake.params.plot)
save_figure(plot(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png)
