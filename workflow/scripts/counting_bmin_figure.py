"""Rule counting_bmin_figure: C2, B_min vs L from bounds and constructions (PDF + PNG)."""

from transformer_stability.counting.figures import plot_bmin
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
figure = plot_bmin(read_table(snakemake.input.theory), read_table(snakemake.input.rates))
save_figure(figure, snakemake.output.pdf, snakemake.output.png)
