"""Rule apjn_agreement: GMFE of measured vs theory curves per sample and depth region, and its
means with bootstrap intervals."""

from transformer_stability.apjn.agreement import agreement, agreement_means
from transformer_stability.apjn.tables import Agreement, AgreementMeans, MeasuredCurves
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, columns_of

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.curves])
curves = read_table(snakemake.input.curves, MeasuredCurves)
provenance = curves[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
compare_from = settings["apjn"]["images"]["compare_from_block"]
table = agreement(curves, compare_from)
write_table(table.assign(**provenance), snakemake.output.table, Agreement, settings)
means = agreement_means(table, curves, compare_from, settings["seed"])
write_table(means.assign(**provenance), snakemake.output.means, AgreementMeans, settings)
