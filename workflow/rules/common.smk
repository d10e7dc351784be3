# Config validation and the list of figure targets, shared by every study module.
from snakemake.exceptions import WorkflowError

from transformer_stability.config import ConfigError, load_schema, validate_config

try:
    validate_config(
        config, load_schema(f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
    )
except ConfigError as error:
    raise WorkflowError(str(error)) from None

# Figure targets per study; `rule all` builds those of the studies in config['studies'].
STUDY_FIGURES = {
    "apjn": [
        "results/figures/apjn_theory_curves.pdf",
        "results/figures/apjn_depth_scaling.pdf",
    ],
}


def figure_targets():
    """Every figure of the studies switched on in config['studies']."""
    return [path for study in config["studies"] for path in STUDY_FIGURES[study]]
