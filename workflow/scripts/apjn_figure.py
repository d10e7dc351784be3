"""Rule apjn_measured_figure: one plot function of apjn.figures on one table (PDF + PNG)."""

from transformer_stability.apjn import figures
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
plot = getattr(figures, snakemake.params.plot)
save_figure(plot(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png)
