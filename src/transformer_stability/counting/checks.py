"""Study C's config checks beyond the schema, in messages that name the config key. Study C
reads nothing from outside the repository."""

from __future__ import annotations

from typing import Any


def config_errors(counting: dict[str, Any]) -> list[str]:
    """The fitted exponents need fit_points lengths; C2's classification panel needs a length;
    the regression grid needs a control below the lower bound."""
    theory = counting["theory"]
    lengths = sorted(set(theory["lengths"]))
    ratios = counting["training"]["regression"]["ratios"]
    checks = [
        (
            min(ratios) < 1,
            "counting.training.regression.ratios",
            f"{sorted(ratios)} has no ratio below 1: no run below the lower bound, so nothing "
            "could show training exact where the theory forbids it",
        ),
        (
            len(lengths) >= theory["fit_points"],
            "counting.theory.fit_points",
            f"{theory['fit_points']} points cannot be fitted from the {len(lengths)} lengths of "
            "counting.theory.lengths",
        ),
        (
            theory["classification_max_length"] >= lengths[0],
            "counting.theory.classification_max_length",
            f"{theory['classification_max_length']} is below every length of "
            f"counting.theory.lengths (smallest {lengths[0]}): no classification construction",
        ),
    ]
    return [f"config key '{key}': {message}" for ok, key, message in checks if not ok]


def input_errors(counting: dict[str, Any]) -> list[str]:
    """Study C needs no outside input."""
    return []
