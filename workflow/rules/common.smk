# Config validation and the list of figure targets, shared by every study module.
from snakemake.exceptions import WorkflowError

from transformer_stability.config import (
    ConfigError,
    load_schema,
    numerics_model_name,
    validate_config,
)

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
        "results/figures/apjn_permsym.pdf",
        "results/figures/apjn_images.pdf",
        "results/figures/apjn_gmfe.pdf",
        "results/figures/apjn_depth_scaling.pdf",
        "results/figures/apjn_sensitivity.pdf",
        "results/figures/apjn_token_stats.pdf",
        "results/figures/apjn_trainability.pdf",
    ],
    "numerics": [
        f"results/figures/numerics_{figure}.pdf"
        for figure in (
            "errors",
            "stream",
            "alpha",
            "weights",
            "norms",
            "softmax",
            "lipschitz",
            "recursion",
        )
    ],
    "counting": [
        "results/figures/counting_geometry.pdf",
        "results/figures/counting_bmin.pdf",
        "results/figures/counting_training.pdf",
        "results/figures/counting_constrained.pdf",
        "results/figures/counting_exponents.pdf",
    ],
}


def figure_targets():
    """Every figure of the studies switched on in config['studies']."""
    return [path for study in config["studies"] for path in STUDY_FIGURES[study]]


# Study A rules take only the parts of config['apjn'] they read, so that changing, say, the
# training schedule does not rerun the APJN measurements.
APJN_MODEL_KEYS = ("model", "attn_mult", "mlp_mult", "input")


def apjn_params(*keys):
    """The given sections of config['apjn'], as a rule's params."""
    return {key: config["apjn"][key] for key in keys}


# Study N: one heavy GPT-2 job per configured model; each figure reads one table.
NUMERICS_MODELS = [
    numerics_model_name(m["weights"], m["size"]) for m in config["numerics"]["models"]
]
NUMERICS_FIGURE_DATA = {
    "errors": "results/numerics/gpt2_errors.csv",
    "stream": "results/numerics/gpt2_errors.csv",
    "alpha": "results/numerics/gpt2_errors.csv",
    "weights": "results/numerics/gpt2_weights.csv",
    "norms": "results/numerics/norms.csv",
    "softmax": "results/numerics/softmax.csv",
    "lipschitz": "results/numerics/lipschitz.csv",
    "recursion": "results/numerics/gpt2_recursion.csv",
}


def numerics_params(*keys):
    """The given sections of config['numerics'], as a rule's params."""
    return {key: config["numerics"][key] for key in keys}
