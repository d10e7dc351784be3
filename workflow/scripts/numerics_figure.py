"""Rule numerics_figure: one plot function of numerics.figures on one table (PDF + PNG)."""

from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging
from transformer_stability.numerics import figures

setup_logging(snakemake.log[0])
plot = getattr(figures, snakemake.params.plot)
save_figure(plot(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png)
