"""Validate the pipeline config against its JSON schema before any job runs.

Snakemake's own `validate` checks the config and fills in the schema's defaults; when it
fails, every violation is listed in our words instead of its first one in jsonschema's. Errors
name the offending key as a dotted path (``apjn.variants[1].alpha``) and, for enums,
the allowed values, so a typo in a preset stops the run with one readable message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# the GPT-2 sizes live with the Study N model spec, so that editing validation reruns no job
from transformer_stability.numerics.spec import GPT2_SIZES, numerics_model_name


class ConfigError(ValueError):
    """The config does not satisfy the schema or a cross-key constraint."""


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _describe(error: ValidationError) -> str:
    key = _key(error.absolute_path)
    if error.validator == "enum":
        return f"config key '{key}': {error.instance!r} is not allowed; allowed values: " + (
            ", ".join(repr(v) for v in error.validator_value)
        )
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"config key '{key}': {error.message}; allowed keys: {', '.join(allowed)}"
    if error.validator == "not":
        return f"config key '{key}': ln takes no alpha (only derf and dyt do)"
    return f"config key '{key}': {error.message}"


def _cross_key_errors(config: dict[str, Any]) -> list[str]:
    """Constraints that involve two keys, which JSON schema cannot express readably."""
    apjn = config["apjn"]
    model, inputs = apjn["model"], apjn["input"]
    checks = [
        (
            model["width"] % model["heads"] == 0,
            "apjn.model.heads",
            f"{model['heads']} does not divide apjn.model.width = {model['width']}",
        ),
        (
            model["img_size"] % model["patch_size"] == 0,
            "apjn.model.patch_size",
            f"{model['patch_size']} does not divide apjn.model.img_size = {model['img_size']}",
        ),
        (
            (model["img_size"] // model["patch_size"]) ** 2 + 1 <= model["width"],
            "apjn.model.img_size",
            f"{model['img_size']} gives more tokens than apjn.model.width = {model['width']}; "
            "the equiangular input needs width >= (img_size / patch_size)^2 + 1",
        ),
        (
            inputs["p0"] < inputs["q0"],
            "apjn.input.p0",
            f"{inputs['p0']} must be below apjn.input.q0 = {inputs['q0']}",
        ),
        (
            apjn["images"]["forward_source_block"] < model["depth"],
            "apjn.images.forward_source_block",
            f"{apjn['images']['forward_source_block']} must be below apjn.model.depth = "
            f"{model['depth']}",
        ),
        (
            apjn["images"]["source"] != "cifar100" or apjn["images"]["cifar_root"] is not None,
            "apjn.images.cifar_root",
            "source cifar100 needs a local folder holding cifar-100-python/",
        ),
        (
            apjn["train"]["data"]["source"] != "cifar100"
            or apjn["train"]["data"]["cifar_root"] is not None,
            "apjn.train.data.cifar_root",
            "source cifar100 needs a local folder holding cifar-100-python/",
        ),
        (
            apjn["train"]["model"]["img_size"] % apjn["train"]["model"]["patch_size"] == 0
            and apjn["train"]["model"]["width"] % apjn["train"]["model"]["heads"] == 0,
            "apjn.train.model",
            "patch_size must divide img_size and heads must divide width",
        ),
        (
            apjn["train"]["depth_lr"] in apjn["train"]["lrs"],
            "apjn.train.depth_lr",
            "must be one of apjn.train.lrs, so that both slices share the largest depth's runs",
        ),
    ]
    checks += _numerics_checks(config["numerics"]) + _counting_checks(config["counting"])
    return [f"config key '{key}': {message}" for ok, key, message in checks if not ok]


def _counting_checks(counting: dict[str, Any]) -> list[tuple[bool, str, str]]:
    """The fitted exponents need fit_points lengths; C2's classification panel needs a length;
    the classification bisection needs a bracket."""
    theory = counting["theory"]
    lengths = sorted(set(theory["lengths"]))
    classification = counting["training"]["classification"]
    return [
        (
            classification["low"] < classification["high"],
            "counting.training.classification.low",
            f"{classification['low']} is not below counting.training.classification.high "
            f"({classification['high']}): the bisection needs a bracket",
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


def _numerics_checks(numerics: dict[str, Any]) -> list[tuple[bool, str, str]]:
    """Model entries: unique names, a complete custom shape, no pretrained custom shapes."""
    checks = []
    names = [numerics_model_name(m["weights"], m["size"]) for m in numerics["models"]]
    for i, entry in enumerate(numerics["models"]):
        key = f"numerics.models[{i}]"
        shape = [entry["layers"], entry["width"], entry["heads"]]
        named = entry["size"] in GPT2_SIZES
        checks += [
            (names.count(names[i]) == 1, key, f"a second model is named {names[i]!r}"),
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
    return checks


def may_use_gpu(device: str) -> bool:
    """Whether jobs may run on a GPU: `cuda`, or `auto` on a machine with an NVIDIA driver
    (read without importing torch, so that planning a run stays fast)."""
    return device == "cuda" or (device == "auto" and Path("/dev/nvidiactl").exists())


def load_schema(path: str | Path) -> dict[str, Any]:
    with open(path) as handle:
        return yaml.safe_load(handle)


def validate_config(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """Fill defaults into `config` in place and check it; raise ConfigError listing every
    problem. Returns the same dict for convenience."""
    try:
        validate(config, str(Path(schema_path).resolve()), set_default=True)
    except WorkflowError:
        validator = Draft202012Validator(load_schema(schema_path))
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
        messages = [_describe(e) for e in errors] or ["the config does not match the schema"]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages)) from None
    messages = _cross_key_errors(config)
    if messages:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    return config
