"""Rule counting_precision: the constructions' storage and precision (theory sweep) beside every
trained classifier's, in one table for figure C6 and claim C.5."""

from transformer_stability.counting.derived_tables import precision_table
from transformer_stability.counting.tables import ConstructionPrecision, Precision, Training
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return precision_table(tables["constructions"], tables["training"])


table_job(
    snakemake, compute, Precision, {"constructions": ConstructionPrecision, "training": Training}
)
