"""Study N as the pipeline sees it: numerical stability of mixed-precision inference
(docs/numerics.md)."""

from transformer_stability.numerics import checks, tables
from transformer_stability.numerics.claims import CLAIMS
from transformer_stability.numerics.costs import attention_work, group_work, sources_work
from transformer_stability.numerics.items import (
    attention_items,
    group_items,
    outside_files,
    sources_items,
    trained_models,
    weights_items,
)
from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Gpt2Training,
    Gpt2Weights,
    Lipschitz,
    Norms,
    RecursionSources,
    SinkEmergence,
    SinkSoftmax,
    SinkTraining,
    Softmax,
)
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study
from transformer_stability.sweeps import Sweep

# the models: their entries, the base seed, and how the trained ones are trained
_MODELS = ("seed", "numerics.models", "numerics.training")
# the sweeps' models: those, and N.9's sink model with its held-out sequences
_SWEPT = (*_MODELS, "numerics.sinks")

SWEEPS = (
    Sweep(
        "numerics_gpt2",
        group_items,
        {"errors": Gpt2Errors, "recursion": Gpt2Recursion},
        settings=("device", *_SWEPT, "numerics.inputs", "numerics.alphas", "numerics.precisions"),
        inputs=outside_files,
        work=group_work,
    ),
    Sweep(
        "numerics_sources",
        sources_items,
        {"table": RecursionSources},
        settings=("device", *_SWEPT, "numerics.inputs.text", "numerics.sources"),
        inputs=outside_files,
        work=sources_work,
    ),
    # a few norms of the weights: on the CPU
    Sweep(
        "numerics_weights",
        weights_items,
        {"table": Gpt2Weights},
        settings=_SWEPT,
        inputs=trained_models,
        gpu=False,
    ),
    Sweep(
        "numerics_attention",
        attention_items,
        {"table": AttentionSinks},
        settings=("device", *_SWEPT, "numerics.inputs"),
        inputs=outside_files,
        work=attention_work,
    ),
)

SETTINGS = {
    # the synthetic bound experiments: each table depends on its own config section
    Norms: ("seed", "numerics.norms"),
    Softmax: ("seed", "numerics.softmax"),
    Lipschitz: ("seed", "numerics.lipschitz"),
    # the trained models' loss curves (numerics/training.py)
    Gpt2Training: _MODELS,
    # the Bigram-Backcopy model's heads along training, and the softmax on its attention rows
    # (numerics/backcopy.py)
    SinkEmergence: ("seed", "numerics.sinks"),
    SinkTraining: ("seed", "numerics.sinks"),
    SinkSoftmax: ("seed", "numerics.sinks"),
}

STUDY = Study(
    name="numerics",
    category="Study N: numerics",
    figures=figures_in("transformer_stability.numerics.figures"),
    sweeps=SWEEPS,
    tables=tables.TABLES,
    settings=SETTINGS,
    config_errors=checks.config_errors,
    input_errors=checks.input_errors,
    claims=CLAIMS,
)
