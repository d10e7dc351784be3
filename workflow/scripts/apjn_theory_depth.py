"""Rule apjn_theory_depth: end-to-end APJN vs depth and the asymptotic fits -> tidy CSVs."""

from transformer_stability.apjn.study import ApjnStudy, depth_scaling
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
depth, asymptotics = depth_scaling(ApjnStudy.from_config(snakemake.params.apjn))
for table, path in ((depth, snakemake.output.depth), (asymptotics, snakemake.output.asymptotics)):
    write_table(
        with_provenance(table, seed=snakemake.params.seed, device="cpu", dtype="float64"), path
    )
