"""Study N's config checks beyond the schema (the model entries) and its outside inputs
(pretrained weights, a text file), in messages that name the config key. Torch-free; read by
the workflow when it is parsed, never by a job, so editing a check reruns nothing.

A pretrained hub id must be reachable: present in the local Hugging Face cache, or the hub
answering within a few seconds (never when HF_HUB_OFFLINE is set).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from transformer_stability.numerics.spec import (
    GPT2_SIZES,
    SINK_MODEL,
    numerics_model_name,
    pretrained_source,
)

HUB = ("huggingface.co", 443)
HUB_TIMEOUT_S = 3.0


def config_errors(numerics: dict[str, Any]) -> list[str]:
    """Model entries: unique names, a complete custom shape, no pretrained custom shapes, a
    trained model that fits the tokenizer and the input length; N.9's sink model's shape and
    task."""
    checks = []
    names = [numerics_model_name(m["weights"], m["size"]) for m in numerics["models"]]
    for i, entry in enumerate(numerics["models"]):
        key = f"numerics.models[{i}]"
        shape = [entry["layers"], entry["width"], entry["heads"]]
        named = entry["size"] in GPT2_SIZES
        checks += [
            (names.count(names[i]) == 1, key, f"a second model is named {names[i]!r}"),
            (
                names[i] != SINK_MODEL,
                key,
                f"{SINK_MODEL!r} names N.9's sink model (numerics.sinks)",
            ),
            (
                named or entry["weights"] == "pretrained" or None not in shape,
                f"{key}.size",
                f"{entry['size']!r} is not one of {', '.join(GPT2_SIZES)}; "
                "a custom size needs layers, width and heads",
            ),
            (
                None in shape or shape[1] % shape[2] == 0,
                f"{key}.heads",
                f"{entry['heads']} does not divide {key}.width = {entry['width']}",
            ),
            (
                entry["weights"] == "pretrained" or entry["source"] is None,
                f"{key}.source",
                "a source is only read for pretrained weights",
            ),
        ]
        if entry["weights"] == "trained":
            checks += _trained_checks(key, entry, numerics)
    checks += _sink_checks(numerics["sinks"])
    return [f"config key '{key}': {message}" for ok, key, message in checks if not ok]


def _sink_checks(sinks: dict[str, Any]) -> list[tuple[bool, str, str]]:
    """N.9's model: heads that divide its width, and ordinary tokens besides the triggers."""
    model, task = sinks["model"], sinks["task"]
    return [
        (
            model["width"] % model["heads"] == 0,
            "numerics.sinks.model.heads",
            f"{model['heads']} does not divide numerics.sinks.model.width = {model['width']}",
        ),
        (
            task["triggers"] < task["vocab"],
            "numerics.sinks.task.triggers",
            f"{task['triggers']} leaves no ordinary token of numerics.sinks.task.vocab = "
            f"{task['vocab']}",
        ),
    ]


def _trained_checks(
    key: str, entry: dict[str, Any], numerics: dict[str, Any]
) -> list[tuple[bool, str, str]]:
    """A trained model uses the pipeline's tokenizer and reads windows of the input length."""
    vocab, seq_len = numerics["training"]["vocab"], numerics["inputs"]["seq_len"]
    return [
        (
            entry["vocab"] == vocab,
            f"{key}.vocab",
            f"{entry['vocab']} is not the tokenizer's numerics.training.vocab = {vocab}",
        ),
        (
            entry["positions"] >= seq_len,
            f"{key}.positions",
            f"{entry['positions']} (its training window) is shorter than "
            f"numerics.inputs.seq_len = {seq_len}",
        ),
    ]


def _hub_reachable() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    try:
        socket.create_connection(HUB, timeout=HUB_TIMEOUT_S).close()
    except OSError:
        return False
    return True


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache  # only for pretrained entries

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def _pretrained_errors(key: str, entry: dict[str, Any]) -> list[str]:
    source, local = pretrained_source(entry["source"], entry["size"])
    hint = f"or use '{key}.weights: random', which needs no download"
    if local is not None:
        if (local / "config.json").is_file():
            return []
        return [
            f"config key '{key}.source': {source!r} is not a directory written by "
            f"save_pretrained (no config.json there); {hint}"
        ]
    if _cached(source) or _hub_reachable():
        return []
    return [
        f"config key '{key}.source': the hub id {source!r} is neither in the local Hugging Face "
        "cache nor reachable (offline, or HF_HUB_OFFLINE set); set it to a local directory "
        f"written by save_pretrained, {hint}"
    ]


def input_errors(numerics: dict[str, Any]) -> list[str]:
    """Pretrained models' sources and the text file, where the config uses them."""
    errors: list[str] = []
    for index, entry in enumerate(numerics["models"]):
        if entry["weights"] == "pretrained":
            errors += _pretrained_errors(f"numerics.models[{index}]", entry)
    text = numerics["inputs"]["text"]
    if text is not None and not Path(text).is_file():
        errors.append(
            f"config key 'numerics.inputs.text': no file {text!r}; point it at a UTF-8 text "
            "file, or set it to null for synthetic tokens"
        )
    return errors
