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
from transformer_stability.table_jobs import table_job

OUTPUTS = {
    "depth": TheoryDepth,
    "asymptotics": Asymptotics,
    "laws": DepthLaws,
    "tokens": PrelnTokens,
    "crossovers": PrelnCrossovers,
}


def compute(tables, settings):
    study = ApjnStudy.from_config(settings["apjn"])
    return dict(zip(OUTPUTS, depth_scaling(study), strict=True))


table_job(snakemake, compute, OUTPUTS)
