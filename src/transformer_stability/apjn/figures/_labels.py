"""The report labels of Study A's figures, which every declaration builds from the config."""

from __future__ import annotations

from collections.abc import Callable

from transformer_stability.apjn.style import NORM_LABELS, variant_label


def _variant_list(variants: list[dict]) -> str:
    """Config variants as a report label: 'pre-LN, Derf α=1, DyT α=1'."""
    return ", ".join(variant_label(v["norm"], v.get("alpha")) for v in variants)


def _models(config: dict) -> str:
    return _variant_list(config["apjn"]["variants"])


def _labels(code: str, quantity: str, input_kind: str | Callable[[dict], str], models=_models):
    """The report labels of a figure; `input_kind` is a label or a function of the config."""
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": models(config),
        "input": input_kind(config) if callable(input_kind) else input_kind,
    }


def _task(config: dict) -> str:
    return f"{config['apjn']['train']['data']['source']} task"


def _trained(config: dict) -> str:
    train = config["apjn"]["train"]
    norms = ", ".join(NORM_LABELS[norm] for norm in train["norms"])
    return f"pre-LN, {norms} (α₀ = {', '.join(f'{a:g}' for a in train['alphas'])})"
