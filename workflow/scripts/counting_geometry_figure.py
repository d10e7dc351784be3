"""Rule counting_geometry_figure: C1, representations of the constructions (PDF + PNG)."""

from transformer_stability.counting.figures import plot_geometry
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
save_figure(
    plot_geometry(read_table(snakemake.input[0])), snakemake.output.pdf, snakemake.output.png
)
