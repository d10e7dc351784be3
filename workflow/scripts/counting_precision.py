"""Rule counting_precision: the constructions' storage and precision (theory sweep) beside every
trained classifier's, in one table for figure C6 and claim C.5."""

from transformer_stability.counting.derived_tables import precision_table
from transformer_stability.counting.tables import ConstructionPrecision, Precision, Training
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import derived_settings

setup_logging(snakemake.log[0])
inputs = snakemake.input
settings = derived_settings(snakemake.params.settings, [inputs.constructions, inputs.training])
table = precision_table(
    read_table(inputs.constructions, ConstructionPrecision), read_table(inputs.training, Training)
)
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
    snakemake.output[0],
    Precision,
    settings,
)
