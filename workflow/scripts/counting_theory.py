"""Rule counting_theory: lower bounds, verified constructions and C1 geometry -> tidy CSVs."""

from transformer_stability.counting.study import CountingStudy, geometry_table, theory_table
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
study = CountingStudy.from_config(snakemake.params.counting, snakemake.params.seed)
for table, path in (
    (theory_table(study), snakemake.output.theory),
    (geometry_table(study), snakemake.output.geometry),
):
    write_table(
        with_provenance(table, seed=snakemake.params.seed, device="cpu", dtype="float64"), path
    )
