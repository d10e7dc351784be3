"""Trainability (figure A7): train small ViTs with pre-LN, Derf and DyT over alpha_0 and an init
multiplier, and record how far each gets.

The CPU preset trains on a 'textures' task built from scikit-image's bundled images (class =
source image, crops from disjoint regions for train and test): real pixels, no download. The
paper preset trains on CIFAR-100 from a local copy.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from skimage import data as skdata
from skimage.transform import resize
from torch import nn

from transformer_stability.apjn.inputs import (
    BUNDLED_IMAGES,
    as_rgb_float,
    normalize,
    read_cifar100,
)
from transformer_stability.apjn.items import Schedule, TrainData, TrainItem, Variant
from transformer_stability.apjn.models import build_vit
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.study import ID_COLUMNS, variant_ids

log = logging.getLogger(__name__)

TRAIN_COLUMNS = [*ID_COLUMNS, "width", "depth", "dataset", "train_seed", "steps", "final_loss",
                 "train_accuracy", "test_accuracy", "diverged"]  # fmt: skip
TRAIN_FRACTION = 0.75  # texture crops above this fraction of the image height are for training
TEXTURE_SCALE = 8  # images are resized so that their shorter side holds 8 crops


@dataclass(frozen=True)
class Dataset:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int


def _crops(image: np.ndarray, size: int, count: int, rows: tuple[int, int], rng) -> np.ndarray:
    top = rng.integers(rows[0], rows[1] - size + 1, size=count)
    left = rng.integers(0, image.shape[1] - size + 1, size=count)
    return np.stack([image[t : t + size, s : s + size] for t, s in zip(top, left, strict=True)])


def texture_dataset(classes: int, size: int, train: int, test: int, seed: int) -> Dataset:
    """Crops of `classes` bundled images (class = image), train crops from the top 75 % of each
    image and test crops from the rest, so no test pixel is seen in training."""
    if classes > len(BUNDLED_IMAGES):
        raise ValueError(f"at most {len(BUNDLED_IMAGES)} texture classes, got {classes}")
    rng = np.random.default_rng(seed)
    parts: dict[str, list] = {"xtr": [], "ytr": [], "xte": [], "yte": []}
    for label, name in enumerate(BUNDLED_IMAGES[:classes]):
        image = as_rgb_float(getattr(skdata, name)())
        scale = TEXTURE_SCALE * size / min(image.shape[:2])
        image = resize(image, (round(image.shape[0] * scale), round(image.shape[1] * scale)))
        cut = int(TRAIN_FRACTION * image.shape[0])
        parts["xtr"].append(_crops(image, size, train, (0, cut), rng))
        parts["xte"].append(_crops(image, size, test, (cut, image.shape[0]), rng))
        parts["ytr"].append(np.full(train, label))
        parts["yte"].append(np.full(test, label))
    return Dataset(
        normalize(np.concatenate(parts["xtr"])).float(),
        torch.from_numpy(np.concatenate(parts["ytr"])),
        normalize(np.concatenate(parts["xte"])).float(),
        torch.from_numpy(np.concatenate(parts["yte"])),
        classes,
    )


def cifar100_dataset(root: str, train: int, test: int, seed: int) -> Dataset:
    """CIFAR-100 from a local copy, `train`/`test` random images of each split (all if 0)."""
    rng = np.random.default_rng(seed)
    splits = []
    for split, count in (("train", train), ("test", test)):
        images, labels = read_cifar100(root, split)
        keep = rng.permutation(len(images))[: count or len(images)]
        splits += [normalize(images[keep] / 255.0).float(), torch.from_numpy(labels[keep])]
    return Dataset(*splits, classes=100)


def _lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warmup, then cosine decay to zero."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * peak * (1 + math.cos(math.pi * progress))


def _to_model_size(x: torch.Tensor, size: int) -> torch.Tensor:
    """Resize a batch to the model's input side on the fly (CIFAR's 32 px to 224 px at paper
    scale) instead of storing the upsampled data set."""
    if x.shape[-1] == size:
        return x
    return nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


@torch.no_grad()
def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, size: int) -> float:
    model.eval()
    batch = 256
    correct = sum(
        int((model(_to_model_size(x[i : i + batch], size)).argmax(-1) == y[i : i + batch]).sum())
        for i in range(0, len(x), batch)
    )
    return correct / len(x)


def train_one(
    spec: ViTSpec, data: Dataset, schedule: Schedule, seed: int, device: torch.device
) -> dict[str, Any]:
    """AdamW with warmup + cosine decay on the training set; stops early if the loss diverges.
    final_loss is the mean training loss over the last 10 % of steps."""
    model = build_vit(spec.with_(num_classes=data.classes), seed).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=schedule.weight_decay)
    generator = torch.Generator().manual_seed(seed)
    steps, batch = schedule.steps, schedule.batch_size
    warmup = max(1, int(schedule.warmup_fraction * steps))
    x_train, y_train = data.x_train.to(device), data.y_train.to(device)
    losses: list[float] = []
    for step in range(steps):
        idx = torch.randint(len(x_train), (batch,), generator=generator).to(device)
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, steps, schedule.lr, warmup)
        logits = model(_to_model_size(x_train[idx], spec.img_size))
        loss = nn.functional.cross_entropy(logits, y_train[idx])
        if not torch.isfinite(loss):
            return {
                "steps": step,
                "final_loss": math.nan,
                "train_accuracy": math.nan,
                "test_accuracy": math.nan,
                "diverged": True,
            }
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    tail = losses[-max(1, steps // 10) :]
    return {
        "steps": steps,
        "final_loss": float(np.mean(tail)),
        "train_accuracy": _accuracy(model, x_train, y_train, spec.img_size),
        "test_accuracy": _accuracy(
            model, data.x_test.to(device), data.y_test.to(device), spec.img_size
        ),
        "diverged": False,
    }


def dataset(task: TrainData) -> Dataset:
    """The task's train and test sets (drawn with the task's seed, the same for every run)."""
    if task.source == "cifar100":
        return cifar100_dataset(task.cifar_root, task.train, task.test, task.seed)
    return texture_dataset(task.classes, task.img_size, task.train, task.test, task.seed)


def train_table(item: TrainItem, device: torch.device) -> pd.DataFrame:
    """One training run as one row: final loss, accuracies, whether it diverged."""
    result = train_one(item.spec, dataset(item.data), item.schedule, item.seed, device)
    log.info("%s: %s", item.id, result)
    row = {
        **variant_ids(Variant(item.spec.norm, item.spec.alpha), item.spec),
        "width": item.spec.width,
        "depth": item.spec.depth,
        "dataset": item.data.source,
        "train_seed": item.seed,
        **result,
    }
    return pd.DataFrame([row])[TRAIN_COLUMNS]
