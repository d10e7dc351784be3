"""Rule apjn_theory_curves: mean-field backward/forward APJN curves -> tidy CSV."""

from transformer_stability.apjn.tables import TheoryCurves
from transformer_stability.apjn.theory_tables import ApjnStudy, theory_curves
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
settings = snakemake.params.settings
table = theory_curves(ApjnStudy.from_config(settings["apjn"]))
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
    snakemake.output[0],
    TheoryCurves,
    settings,
)
