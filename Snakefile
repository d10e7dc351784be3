# Replication pipeline for three theory papers on transformer stability.
# Thin on purpose: config + validation + rule modules; logic lives in src/transformer_stability.
from snakemake.utils import min_version

from transformer_stability.config import check_yaml
from transformer_stability.registry import SWEEPS

min_version("9.0")
check_yaml(f"{workflow.basedir}/config.yaml")


configfile: f"{workflow.basedir}/config.yaml"


report: "workflow/report/workflow.rst"


# Chunks per sweep (registry.SWEEPS): every sweep item is a job once a chunk holds one item. The
# local default runs a couple of chunks per sweep (a process start with torch costs seconds on a
# laptop); the SLURM profile raises them with `set-scatter` so that every item is its own job.
scattergather:
    **{name: 2 for name in SWEEPS},


include: "workflow/rules/common.smk"
include: "workflow/rules/sweeps.smk"
include: "workflow/rules/apjn.smk"
include: "workflow/rules/numerics.smk"
include: "workflow/rules/counting.smk"
include: "workflow/rules/gather.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"


# the data jobs' settings records, written now that every rule is read (common.smk)
write_settings_records()


onstart:
    preflight()  # the outside inputs of the jobs that will run
    record_config(config)  # results/config.yaml: what `make report` describes


rule all:
    default_target: True
    input:
        [figure.pdf for study in config["studies"] for figure in study_figures(study)],
        "results/claims.csv",
