"""Rule counting_training_figure: C3, unconstrained training vs L (PDF + PNG)."""

from transformer_stability.counting.figures import plot_training
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
save_figure(
    plot_training(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png
)
