"""Rule counting_references: the predicted power laws that C2 draws over the theory, anchored
at the constructions."""

from transformer_stability.counting.derived_tables import reference_slopes
from transformer_stability.counting.tables import BminTheory, ReferenceSlopes
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import derived_settings

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.theory])
table = reference_slopes(read_table(snakemake.input.theory, BminTheory))
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
    snakemake.output[0],
    ReferenceSlopes,
    settings,
)
