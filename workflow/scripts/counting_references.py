"""Rule counting_references: the predicted power laws that C2 draws over the theory, anchored
at the constructions."""

from transformer_stability.counting.derived_tables import reference_slopes
from transformer_stability.counting.tables import BminTheory, ReferenceSlopes
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return reference_slopes(tables["theory"])


table_job(snakemake, compute, ReferenceSlopes, {"theory": BminTheory})
