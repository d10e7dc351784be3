"""Trainability (figures A7, A8): train small ViTs with pre-LN, Derf and DyT over α₀, an init
multiplier, the learning rate and the depth with the authors' recipe, and record how far each
gets next to the theory's J^{L,0} of the model it started from.

The CPU preset trains on a 'textures' task built from scikit-image's bundled images (class =
source image, crops from disjoint regions for train and test): real pixels, no download. The
paper preset trains on CIFAR-100 from a local copy.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import torch
from skimage import data as skdata
from skimage.transform import resize
from torch import nn

from transformer_stability.apjn.batched import (
    BatchedAdamW,
    StackedModels,
    vit_logits,
    warmup_constant,
)
from transformer_stability.apjn.inputs import (
    BUNDLED_IMAGES,
    as_rgb_float,
    embed_images,
    normalize,
    read_cifar100,
)
from transformer_stability.apjn.items import Variant
from transformer_stability.apjn.measure import forward_apjn, gaussian_probes, token_statistics
from transformer_stability.apjn.models import build_vit, mean_field_from_model
from transformer_stability.apjn.spec import ViTSpec, resolve_init_std
from transformer_stability.apjn.tables import Trainability
from transformer_stability.apjn.theory import end_to_end_log_apjn
from transformer_stability.apjn.train_items import Schedule, TrainData, TrainItem
from transformer_stability.tables import select

log = logging.getLogger(__name__)

CPU = torch.device("cpu")

THEORY_IMAGES = 256  # ~ this many training images (all classes) seed the theory's (q0, p0)
MEASURED_IMAGES, PROBES = 16, 2  # of them, the Hutchinson estimate of J^{L,0} at init
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
        images, labels = read_cifar100(root, split, key="apjn.train.data.cifar_root")
        keep = rng.permutation(len(images))[: count or len(images)]
        splits += [normalize(images[keep] / 255.0).float(), torch.from_numpy(labels[keep])]
    return Dataset(*splits, classes=100)


def _to_model_size(x: torch.Tensor, size: int) -> torch.Tensor:
    """Resize a batch to the model's input side on the fly (CIFAR's 32 px to 224 px at paper
    scale) instead of storing the upsampled data set."""
    if x.shape[-1] == size:
        return x
    return nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


@torch.no_grad()
def _accuracy(models: StackedModels, x: torch.Tensor, y: torch.Tensor, size: int) -> torch.Tensor:
    """Accuracy (R,) of every model on the same (x, y)."""
    batch, correct = 256, torch.zeros(models.runs, device=x.device)
    for i in range(0, len(x), batch):
        chunk = _to_model_size(x[i : i + batch], size)
        logits = models(chunk.expand(models.runs, *chunk.shape))
        correct += (logits.argmax(-1) == y[i : i + batch]).sum(-1)
    return correct.cpu() / len(x)


def init_log_apjn(
    model: nn.Module, spec: ViTSpec, images: torch.Tensor, seed: int, device: torch.device
) -> dict[str, float]:
    """ln J^{L,0} of the built model at init. theory: the mean-field recursion with the model's
    (a, m) read off its weights and the mean token statistics (q0, p0) of its patch embedding of
    `images` (exact in the theory's sense for ReLU MLPs). measured: Hutchinson's forward-mode
    estimate on MEASURED_IMAGES of them, every token (CLS included), as in figures A1-A5."""
    x0 = embed_images(model, _to_model_size(images.to(device), spec.img_size))
    q0, p0 = (float(s.mean()) for s in token_statistics(x0.double()))
    mf = mean_field_from_model(model)
    theory = end_to_end_log_apjn(spec.norm, spec.alpha, mf, q0, p0, spec.depth)[-1]
    few = x0[:: max(1, len(x0) // MEASURED_IMAGES)][:MEASURED_IMAGES]
    probes = gaussian_probes(few, PROBES, torch.Generator().manual_seed(seed))
    measured = forward_apjn(list(model.blocks), few, probes)[:, -1].mean()
    return {"theory_log_apjn": float(theory), "measured_log_apjn": math.log(float(measured))}


SPIKE = 1.5
"""A loss spike: the smoothed training loss rises above SPIKE times its lowest value so far."""
BLOWUP = 10.0
"""A gradient-norm blow-up: a run's gradient norm exceeds BLOWUP times its running mean."""
SMOOTHING = 0.1
"""Weight of the newest step in the exponential moving averages of loss and gradient norm."""


class Instability:
    """Per-run instability events of a batched training, counted step by step on the runs'
    device (no host sync): the first step whose loss or gradient is non-finite, loss spikes
    (entries of the smoothed loss into the region above SPIKE times its running minimum) and
    gradient-norm blow-ups (steps whose norm exceeds BLOWUP times the moving mean of the earlier
    steps). Its whole state is its attributes, so a checkpoint holds `vars()`."""

    def __init__(self, runs: int, device: torch.device = CPU) -> None:
        self.updates = 0
        self.failed = torch.full((runs,), -1, device=device)
        self.spikes = torch.zeros(runs, dtype=torch.long, device=device)
        self.blowups = torch.zeros(runs, dtype=torch.long, device=device)
        self.loss = torch.zeros(runs, device=device)
        self.lowest = torch.full((runs,), math.inf, device=device)
        self.above = torch.zeros(runs, dtype=torch.bool, device=device)
        self.grad = torch.zeros(runs, device=device)

    def update(self, step: int, loss: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """Record one step's per-run loss and gradient norm."""
        bad = ~(torch.isfinite(loss) & torch.isfinite(grad_norm))
        self.failed = torch.where(bad & (self.failed < 0), step, self.failed)
        ok = self.failed < 0
        loss, grad_norm = loss.where(ok, 0.0), grad_norm.where(ok, 0.0)
        first = self.updates == 0
        self.loss = loss if first else torch.lerp(self.loss, loss, SMOOTHING)
        above = self.loss > SPIKE * self.lowest
        self.spikes += (above & ~self.above & ok).long()
        self.above = above
        self.lowest = torch.minimum(self.lowest, self.loss)
        if not first:
            self.blowups += ((grad_norm > BLOWUP * self.grad) & ok).long()
        self.grad = grad_norm if first else torch.lerp(self.grad, grad_norm, SMOOTHING)
        self.updates += 1

    def columns(self, run: int) -> dict[str, Any]:
        return {"diverged": bool(self.failed[run] >= 0), "loss_spikes": int(self.spikes[run]),
                "grad_blowups": int(self.blowups[run])}  # fmt: skip


def _outcome(steps: int, failed: int, sums: torch.Tensor, test: float) -> dict[str, Any]:
    """A run's outcome columns: tail loss and accuracies, NaN from a non-finite step on."""
    if failed >= 0:
        return {"steps": failed, "final_loss": math.nan, "train_accuracy": math.nan,
                "test_accuracy": math.nan}  # fmt: skip
    return {"steps": steps, "final_loss": float(sums[0]), "train_accuracy": float(sums[1]),
            "test_accuracy": test}  # fmt: skip


def _on(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


CHECK_EVERY = 50
"""Steps between the checks whether every run has diverged (each check is a host sync)."""


def batch_orders(
    seeds: list[int], images: int, schedule: Schedule
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every seed's minibatch indices for the whole training, (seeds, steps, batch), drawn with
    replacement from its own generator, and each run's row in them."""
    distinct = sorted(set(seeds))
    size = (schedule.steps, schedule.batch_size)
    order = torch.stack([
        torch.randint(images, size, generator=torch.Generator().manual_seed(seed))
        for seed in distinct
    ])  # fmt: skip
    return order, torch.tensor([distinct.index(seed) for seed in seeds])


class GroupTraining:
    """A batched training of runs (spec, peak rate, seed) that can stop after any step and go on
    from its `state()`, bit for bit. Runs of one seed start from that seed's init (up to α₀ and
    the multipliers) and see the same minibatches; each seed draws its own batch order, up front
    from its seed (so a resumed run needs only the step to find its place)."""

    def __init__(
        self, specs: list[ViTSpec], lrs: list[float], seeds: list[int], data: Dataset,
        schedule: Schedule, device: torch.device,
    ) -> None:  # fmt: skip
        self.data, self.schedule, self.device = data, schedule, device
        self.runs = [
            (spec.with_(num_classes=data.classes), seed)
            for spec, seed in zip(specs, seeds, strict=True)
        ]
        self.inits = {run: build_vit(*run).to(device) for run in dict.fromkeys(self.runs)}
        if len({(spec.norm, spec.relu) for spec, _ in self.runs}) > 1:
            raise ValueError("a batched group trains one norm and one activation")
        forward = partial(vit_logits, spec=self.runs[0][0])
        self.models = StackedModels([self.inits[run] for run in self.runs], forward)
        self.opt = BatchedAdamW(self.models.flat, self.models.decayed, lrs, schedule.weight_decay)
        order, self.seed_of = batch_orders(seeds, len(data.x_train), schedule)
        self.order, self.seed_of = order.to(device), self.seed_of.to(device)
        self.x_train, self.y_train = data.x_train.to(device), data.y_train.to(device)
        self.events = Instability(len(self.runs), device)
        self.sums = torch.zeros(2, len(self.runs), device=device)  # tail loss, tail accuracy
        self.step = 0

    @property
    def img_size(self) -> int:
        return self.runs[0][0].img_size

    def _batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every run's minibatch (R, B, ...) and labels (R, B) at a step."""
        idx = self.order[:, step]
        x = _to_model_size(self.x_train[idx.flatten()], self.img_size)
        return x.view(*idx.shape, *x.shape[1:])[self.seed_of], self.y_train[idx][self.seed_of]

    def _step(self, step: int) -> None:
        steps = self.schedule.steps
        x, target = self._batch(step)
        logits = self.models(x)
        per_run = nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        loss = per_run.mean(-1)
        loss.sum().backward()
        self.events.update(step, loss.detach(), self.models.flat.grad.norm(dim=1))
        warmup = max(1, int(self.schedule.warmup_fraction * steps))
        self.opt.step(warmup_constant(step, warmup))
        tail = max(1, steps // 10)
        if step >= steps - tail:
            self.sums[0] += loss.detach() / tail
            self.sums[1] += (logits.argmax(-1) == target).float().mean(-1).detach() / tail

    def run(self, stop: int) -> None:
        """Train from the current step to step `stop`; once every run has diverged, to the end."""
        while self.step < stop:
            self._step(self.step)
            self.step += 1
            if self.step % CHECK_EVERY == 0 and bool((self.events.failed >= 0).all()):
                self.step = self.schedule.steps

    def state(self) -> dict[str, Any]:
        """What a resumed training needs: the step, the parameters, AdamW's moments and step
        counts, the events and the tail sums (the data order follows from the seeds)."""
        return {"step": self.step, "flat": self.models.flat.detach(), "adamw": self.opt.state(),
                "events": vars(self.events), "sums": self.sums}  # fmt: skip

    @torch.no_grad()
    def load(self, state: dict[str, Any]) -> None:
        """Go on from `state` (from any device)."""
        self.step = state["step"]
        self.models.flat.copy_(state["flat"])
        self.opt.load(state["adamw"])
        events = state["events"].items()
        vars(self.events).update({k: _on(v, self.device) for k, v in events})
        self.sums.copy_(state["sums"])

    def rows(self) -> list[dict[str, Any]]:
        """Each run's outcome, events and ln J^{L,0} of its model at init (measured once per
        distinct init: runs that differ only in rate share it)."""
        probe = self.data.x_train[:: max(1, len(self.data.x_train) // THEORY_IMAGES)]
        at_init = {
            run: init_log_apjn(model, run[0], probe, run[1], self.device)
            for run, model in self.inits.items()
        }
        x_test, y_test = self.data.x_test.to(self.device), self.data.y_test.to(self.device)
        test = _accuracy(self.models, x_test, y_test, self.img_size)
        sums, failed = self.sums.cpu(), self.events.failed.cpu()
        return [
            {
                **_outcome(self.schedule.steps, int(failed[r]), sums[:, r], float(test[r])),
                **self.events.columns(r),
                **at_init[run],
            }  # fmt: skip
            for r, run in enumerate(self.runs)
        ]


def train_group(
    specs: list[ViTSpec], lrs: list[float], seeds: list[int], data: Dataset, schedule: Schedule,
    device: torch.device,
) -> list[dict[str, Any]]:  # fmt: skip
    """Train one model per spec (each with its peak rate and seed) together, recording each
    run's instability events. A run whose loss or gradient turns non-finite is diverged at that
    step (its outcome NaN); final_loss and train_accuracy are over the training batches of the
    last 10 % of steps."""
    training = GroupTraining(specs, lrs, seeds, data, schedule, device)
    training.run(schedule.steps)
    return training.rows()


def dataset(task: TrainData) -> Dataset:
    """The task's train and test sets (drawn with the task's seed, the same for every run)."""
    if task.source == "cifar100":
        return cifar100_dataset(task.cifar_root, task.train, task.test, task.seed)
    return texture_dataset(task.classes, task.img_size, task.train, task.test, task.seed)


def _training(item: TrainItem, device: torch.device, state: dict | None) -> GroupTraining:
    """The item's batched training, at init or resumed from `state`."""
    init_std = resolve_init_std(item.init_std, item.spec.width)
    specs = [item.run_spec(run).with_(init_std=init_std) for run in item.runs]
    lrs, seeds = [run.lr for run in item.runs], [run.seed for run in item.runs]
    training = GroupTraining(specs, lrs, seeds, dataset(item.data), item.schedule, device)
    if state is not None:
        training.load(state)
    return training


def segment_end(item: TrainItem, segment: int) -> int:
    """The step after the last of segment 1 .. item.segments: equal shares of the steps."""
    return item.schedule.steps * segment // item.segments


def train_segment(
    item: TrainItem, device: torch.device, segment: int, state: dict | None
) -> dict[str, Any]:
    """Train the item's segment `segment` (one of its earlier segments), resumed from the state
    after the segment before (None for the first); its state after it."""
    training = _training(item, device, state)
    training.run(segment_end(item, segment))
    log.info("%s: segment %d of %d ends at step %d", item.id, segment, item.segments, training.step)
    return training.state()


def train_table(item: TrainItem, device: torch.device, state: dict | None = None) -> pd.DataFrame:
    """One batched group of training runs (its last segment, resumed from the state after the
    others where it has more), one row per run."""
    training = _training(item, device, state)
    training.run(item.schedule.steps)
    rows = []
    for run, (spec, _), result in zip(item.runs, training.runs, training.rows(), strict=True):
        log.info("%s alpha=%s mult=%g lr=%g: %s", item.id, run.alpha, run.mult, run.lr, result)
        rows.append({
            **Variant(spec.norm, spec.alpha).ids(spec),
            "width": spec.width, "depth": spec.depth, "init_std": spec.init_std, "lr": run.lr,
            "dataset": item.data.source, "train_seed": run.seed, **result,
        })  # fmt: skip
    return select(pd.DataFrame(rows), Trainability)
