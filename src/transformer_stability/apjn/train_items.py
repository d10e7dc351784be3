"""Study A's training sweep as items: one batched group of ViT training runs per (norm, depth),
or one run per item when the config asks for it, with the data set and the recipe each job
reads. Torch-free, like the measurement items (items.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from transformer_stability.apjn.costs import train_work
from transformer_stability.apjn.items import variant_id
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.work import segments

CIFAR100_TRAIN, CIFAR100_TEST = 50_000, 10_000
"""The images of CIFAR-100's two splits."""


@dataclass(frozen=True)
class TrainData:
    """The trainability task: textures (bundled images) or CIFAR-100 from a local copy."""

    source: str
    classes: int
    train: int
    test: int
    cifar_root: str | None
    img_size: int
    seed: int  # draws the data set; the same for every run

    @property
    def stored_bytes(self) -> float:
        """The images a training holds, in float32: textures (train and test crops per class)
        at the model's side, CIFAR-100 at its own 32 px (train/test 0: all 50,000 and 10,000)."""
        if self.source == "cifar100":
            count, side = (self.train or CIFAR100_TRAIN) + (self.test or CIFAR100_TEST), 32
        else:
            count, side = self.classes * (self.train + self.test), self.img_size
        return 4.0 * count * 3 * side**2


@dataclass(frozen=True)
class Schedule:
    """The authors' recipe: AdamW, betas (0.9, 0.999), weight decay on weight matrices only,
    linear warm-up to the peak rate, then constant."""

    steps: int
    batch_size: int
    weight_decay: float
    warmup_fraction: float


@dataclass(frozen=True)
class TrainRun:
    """One run of a batched group: α₀ (None for pre-LN), init multiplier, peak rate, seed."""

    alpha: float | None
    mult: float
    lr: float
    seed: int


@dataclass(frozen=True)
class TrainItem:
    """One batched group of training runs: every run shares the architecture (norm, depth), so
    their parameters stack and train as one tensor program; they differ in seed, α₀, init
    multiplier (attn_mult = mlp_mult) and learning rate. `spec` has alpha None and multipliers
    1; init_std is the config's setting ('vit_b' or a std), resolved where the models are
    built."""

    spec: ViTSpec
    init_std: str | float
    alphas: tuple[float | None, ...]
    mults: tuple[float, ...]
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    data: TrainData
    schedule: Schedule
    segments: int = 1  # jobs that train it in turn, each from the previous one's checkpoint

    @property
    def id(self) -> str:
        tail = f"depth{self.spec.depth}"
        if len(self.runs) > 1:
            return f"{self.spec.norm}_{tail}"
        (run,) = self.runs
        return (
            f"{variant_id(self.spec.norm, run.alpha)}_mult{run.mult:g}_lr{run.lr:g}_{tail}"
            f"_seed{run.seed}"
        )

    @property
    def runs(self) -> tuple[TrainRun, ...]:
        return tuple(
            TrainRun(alpha, mult, lr, seed)
            for seed in self.seeds
            for alpha in self.alphas
            for mult in self.mults
            for lr in self.lrs
        )

    def run_spec(self, run: TrainRun) -> ViTSpec:
        return self.spec.with_(alpha=run.alpha, attn_mult=run.mult, mlp_mult=run.mult)

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.data.seed, "dtype": "float32"}


def _train_task(cfg: dict[str, Any], img_size: int, seed: int) -> TrainData:
    data = cfg["data"]
    return TrainData(
        source=data["source"],
        classes=data["classes"],
        train=data["train"],
        test=data["test"],
        cifar_root=data["cifar_root"],
        img_size=img_size,
        seed=seed,
    )


def train_items(apjn: dict[str, Any], seed: int) -> list[TrainItem]:
    """The trainability grid, one item per (norm, depth): every seed (seed .. seed +
    train.seeds - 1), α₀, init multiplier and peak rate of train.lrs, pre-LN alongside, at
    every depth of train.depths. With train.batched false every run is its own item (a job per
    ViT-B run at paper scale). Every item is trained in the segments that the cluster plan's
    largest item needs to keep each job under the time limit (work.segments; 1 on a CPU)."""
    cfg = apjn["train"]
    model = cfg["model"]
    base = ViTSpec.from_config({**model, "depth": 1}, relu=cfg["activation"] == "relu")
    task = _train_task(cfg, base.img_size, seed)
    schedule = Schedule(
        steps=cfg["steps"],
        batch_size=cfg["batch_size"],
        weight_decay=cfg["weight_decay"],
        warmup_fraction=cfg["warmup_fraction"],
    )
    norms = [("ln", (None,))] + [(norm, tuple(cfg["alphas"])) for norm in cfg["norms"]]
    groups = [
        TrainItem(
            base.with_(norm=norm, depth=depth),
            model["init_std"],
            alphas,
            tuple(cfg["mults"]),
            tuple(cfg["lrs"]),
            tuple(range(seed, seed + cfg["seeds"])),
            task,
            schedule,
        )
        for depth in sorted(set(cfg["depths"]), reverse=True)
        for norm, alphas in norms
    ]
    if not cfg["batched"]:
        groups = [
            replace(group, alphas=(run.alpha,), mults=(run.mult,), lrs=(run.lr,), seeds=(run.seed,))
            for group in groups
            for run in group.runs
        ]
    count = max(segments(train_work(group)) for group in groups)
    return [replace(group, segments=count) for group in groups]
