"""Rule counting_exponents_figure: C5, the table of exponents as a figure and a CSV."""

from transformer_stability.counting.figures import exponent_table, plot_exponent_table
from transformer_stability.io import read_table, save_figure, write_table
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
table = exponent_table(read_table(snakemake.input.rates), read_table(snakemake.input.theory))
write_table(table, snakemake.output.table)
save_figure(plot_exponent_table(table), snakemake.output.pdf, snakemake.output.png)
