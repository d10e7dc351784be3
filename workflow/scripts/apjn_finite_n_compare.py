"""Rule apjn_finite_n_compare: the finite-N measurement against both closures -> tidy CSV."""

from transformer_stability.apjn.closures import finite_n_comparison
from transformer_stability.apjn.tables import FiniteN, FiniteNCompare
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, columns_of

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.table])
measured = read_table(snakemake.input.table, FiniteN)
provenance = measured[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
table = finite_n_comparison(measured, seed=settings["seed"])
write_table(table.assign(**provenance), snakemake.output[0], FiniteNCompare, settings)
