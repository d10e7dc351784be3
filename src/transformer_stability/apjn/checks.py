"""Study A's config checks beyond the schema (constraints between keys) and its outside inputs
(a local CIFAR-100 copy), in messages that name the config key. Torch-free; read by the
workflow when it is parsed, never by a job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CIFAR_FILES = ("train", "test")


def config_errors(apjn: dict[str, Any]) -> list[str]:
    """Every violated cross-key constraint of the `apjn` section."""
    model, inputs, images, train = apjn["model"], apjn["input"], apjn["images"], apjn["train"]
    tokens = (model["img_size"] // model["patch_size"]) ** 2 + 1
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
            tokens <= model["width"],
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
            images["forward_source_block"] < model["depth"],
            "apjn.images.forward_source_block",
            f"{images['forward_source_block']} must be below apjn.model.depth = {model['depth']}",
        ),
        (
            images["source"] != "cifar100" or images["cifar_root"] is not None,
            "apjn.images.cifar_root",
            "source cifar100 needs a local folder holding cifar-100-python/",
        ),
        (
            train["data"]["source"] != "cifar100" or train["data"]["cifar_root"] is not None,
            "apjn.train.data.cifar_root",
            "source cifar100 needs a local folder holding cifar-100-python/",
        ),
        (
            train["model"]["img_size"] % train["model"]["patch_size"] == 0
            and train["model"]["width"] % train["model"]["heads"] == 0,
            "apjn.train.model",
            "patch_size must divide img_size and heads must divide width",
        ),
    ]
    return [f"config key '{key}': {message}" for ok, key, message in checks if not ok]


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


def input_errors(apjn: dict[str, Any]) -> list[str]:
    """The CIFAR-100 folders the image and training sections point at, where they use it."""
    sections = {"apjn.images": apjn["images"], "apjn.train.data": apjn["train"]["data"]}
    return [
        error
        for key, section in sections.items()
        if section["source"] == "cifar100"
        for error in _cifar_errors(f"{key}.cifar_root", section["cifar_root"])
    ]
