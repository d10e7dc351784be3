"""Rule apjn_theory_curves_figure: plot theory_curves.csv (PDF + PNG)."""

from transformer_stability.apjn.figures import plot_theory_curves
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
save_figure(
    plot_theory_curves(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png
)
