"""Rule counting_constrained_figure: C4, norm-constrained training over (L, B) (PDF + PNG)."""

from transformer_stability.counting.figures import plot_constrained
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
figure = plot_constrained(
    read_table(snakemake.input.training),
    read_table(snakemake.input.empirical),
    read_table(snakemake.input.theory),
    read_table(snakemake.input.rates),
)
save_figure(figure, snakemake.output.pdf, snakemake.output.png)
