"""Rule apjn_sensitivity_ratios: measured/theory J^{L,0} at every point of the sensitivity
sweeps, with a bootstrap interval over initializations and samples."""

from transformer_stability.apjn.agreement import sensitivity_ratios
from transformer_stability.apjn.tables import EndToEnd, SensitivityRatios
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, columns_of

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.table])
measured = read_table(snakemake.input.table, EndToEnd)
provenance = measured[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
table = sensitivity_ratios(measured, seed=settings["seed"])
write_table(table.assign(**provenance), snakemake.output[0], SensitivityRatios, settings)
