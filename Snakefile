# Replication pipeline for three theory papers on transformer stability.
# Thin on purpose: config + validation + rule modules; logic lives in src/transformer_stability.
from snakemake.utils import min_version

min_version("9.0")


configfile: f"{workflow.basedir}/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/apjn.smk"
include: "workflow/rules/numerics.smk"
include: "workflow/rules/counting.smk"


rule all:
    default_target: True
    input:
        figure_targets(),
