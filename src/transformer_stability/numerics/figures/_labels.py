"""Report labels shared by Study N's figure declarations: GPT-2 figures name the configured
models and test formats, synthetic ones the format they emulate."""

from __future__ import annotations

from transformer_stability.numerics.items import model_specs


def gpt2_labels(code: str, quantity: str, precision: str | None = None):
    """Labels of a GPT-2 figure: the configured models and test formats (or `precision`, for a
    figure drawn from a table that does not depend on them)."""
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": ", ".join(spec.name for spec in model_specs(config["numerics"])),
        "precision": (precision or ", ".join(config["numerics"]["precisions"])),
    }


def synthetic_labels(code: str, quantity: str, precision):
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": "synthetic",
        "precision": precision(config),
    }
