"""Rule apjn_theory_depth: end-to-end APJN vs depth with its local slopes, the asymptotic fits,
the fitted and closed-form law lines, and pre-LN's local exponent and crossovers per token
count and closure -> tidy CSVs."""

from transformer_stability.apjn.tables import (
    Asymptotics,
    DepthLaws,
    PrelnCrossovers,
    PrelnTokens,
    TheoryDepth,
)
from transformer_stability.apjn.theory_tables import ApjnStudy, depth_scaling
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
settings = snakemake.params.settings
models = {
    "depth": TheoryDepth,
    "asymptotics": Asymptotics,
    "laws": DepthLaws,
    "tokens": PrelnTokens,
    "crossovers": PrelnCrossovers,
}
study = ApjnStudy.from_config(settings["apjn"])
tables = dict(zip(models, depth_scaling(study), strict=True))
for name, table in tables.items():
    write_table(
        with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
        snakemake.output[name],
        models[name],
        settings,
    )
