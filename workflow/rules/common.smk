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


# Report labels of each Study N figure: what it shows, and the models and formats it covers.
NUMERICS_FIGURE_LABELS = {
    figure: {
        "figure": code,
        "quantity": quantity,
        "models": ", ".join(NUMERICS_MODELS) if gpt2 else "synthetic",
        "precision": ", ".join(config["numerics"]["precisions"]) if gpt2 else precision,
    }
    for figure, (code, quantity, gpt2, precision) in {
        "errors": ("N1", "relative error vs residual add", True, None),
        "stream": ("N2", "residual-stream size vs residual add", True, None),
        "alpha": ("N3", "output error vs residual scaling", True, None),
        "weights": ("N4", "weight magnitudes per block", True, None),
        "norms": (
            "N5",
            "LayerNorm vs RMSNorm under an outlier",
            False,
            ", ".join(f"m{b}" for b in config["numerics"]["norms"]["mantissa_bits"]),
        ),
        "softmax": (
            "N6",
            "softmax error vs sink mass and offset",
            False,
            f"m{config['numerics']['softmax']['mantissa_bits']}",
        ),
        "lipschitz": ("N7", "attention Lipschitz constant vs length", False, "float64"),
        "recursion": ("N8", "error recursion bound vs measured", True, None),
    }.items()
}


def numerics_params(*keys):
    """The given sections of config['numerics'], as a rule's params."""
    return {key: config["numerics"][key] for key in keys}
