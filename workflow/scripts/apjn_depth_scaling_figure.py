"""Rule apjn_depth_scaling_figure: plot theory_depth.csv with its fits (PDF + PNG)."""

from transformer_stability.apjn.figures import plot_depth_scaling
from transformer_stability.io import read_table, save_figure
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
figure = plot_depth_scaling(
    read_table(snakemake.input.depth),
    read_table(snakemake.input.asymptotics),
    read_table(snakemake.input.measured),
)
save_figure(figure, snakemake.output.pdf, snakemake.output.png)
