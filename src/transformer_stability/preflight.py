"""Inputs from outside the repository, checked when the workflow is parsed, before any job runs:
a preset that needs CIFAR-100 or pretrained weights it cannot find stops the plan in seconds,
naming the config key that points there, instead of failing hours into a run.

Local paths must exist and hold the expected files. A hub id must be reachable: present in the
local Hugging Face cache, or the hub answering within a few seconds (never when
HF_HUB_OFFLINE is set).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from transformer_stability.numerics.spec import pretrained_source

CIFAR_FILES = ("train", "test")
HUB = ("huggingface.co", 443)
HUB_TIMEOUT_S = 3.0


def _cifar_errors(key: str, root: str | None) -> list[str]:
    folder = Path(root or "") / "cifar-100-python"
    missing = [name for name in CIFAR_FILES if not (folder / name).is_file()]
    if not missing:
        return []
    return [
        f"config key '{key}': {root!r} holds no CIFAR-100 ({folder}/{' and '.join(missing)} "
        "missing): point it at a folder containing the python version's cifar-100-python/ "
        "(nothing is downloaded), or set the source to the offline default"
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


def input_errors(config: dict[str, Any]) -> list[str]:
    """Every missing outside input of the studies the config runs, as messages naming the key."""
    errors: list[str] = []
    studies, apjn = config["studies"], config["apjn"]
    if "apjn" in studies:
        for key, section in (
            ("apjn.images", apjn["images"]),
            ("apjn.train.data", apjn["train"]["data"]),
        ):
            if section["source"] == "cifar100":
                errors += _cifar_errors(f"{key}.cifar_root", section["cifar_root"])
    if "numerics" in studies:
        for index, entry in enumerate(config["numerics"]["models"]):
            if entry["weights"] == "pretrained":
                errors += _pretrained_errors(f"numerics.models[{index}]", entry)
        text = config["numerics"]["inputs"]["text"]
        if text is not None and not Path(text).is_file():
            errors.append(
                f"config key 'numerics.inputs.text': no file {text!r}; point it at a UTF-8 text "
                "file, or set it to null for synthetic tokens"
            )
    return errors
