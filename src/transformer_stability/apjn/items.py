"""Study A's sweeps as items: the `apjn` config section parsed once into frozen dataclasses, one
per unit of work (a measurement of one model on one input kind, one end-to-end point, one
training run). Torch-free, so that the workflow can enumerate items without importing torch.

Every item carries exactly the settings its job reads, so Snakemake reruns a job when, and only
when, one of them changes; its `id` names its output file and its rows in the chunk tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from transformer_stability.apjn.costs import train_work
from transformer_stability.apjn.names import SATURATING, NormName
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.work import segments

CIFAR100_TRAIN, CIFAR100_TEST = 50_000, 10_000
"""The images of CIFAR-100's two splits."""


def variant_id(norm: str, alpha: float | None) -> str:
    """'ln', 'derf-a1.5', 'dyt-a1': a variant's name in item ids."""
    return norm if alpha is None else f"{norm}-a{alpha:g}"


def _spec_id(spec: ViTSpec) -> str:
    return variant_id(spec.norm, spec.alpha)


@dataclass(frozen=True)
class Variant:
    """One norm variant: pre-LN, or a saturating map with fixed scalar alpha."""

    norm: NormName
    alpha: float | None = None

    @property
    def id(self) -> str:
        return variant_id(self.norm, self.alpha)

    def ids(self, spec: ViTSpec) -> dict[str, Any]:
        """The identifying columns every Study A table of a model starts with."""
        return {
            "norm": self.norm,
            "alpha": math.nan if self.alpha is None else self.alpha,
            "attn_mult": spec.attn_mult,
            "mlp_mult": spec.mlp_mult,
        }


@dataclass(frozen=True)
class MeasureSettings:
    """How one model is measured: input statistics, samples, Hutchinson probes, precision, and
    the pieces the model is built in (chunk_blocks blocks each: memory, not numbers)."""

    q0: float
    p0: float
    samples: int
    probes: int
    chunk_size: int
    chunk_blocks: int
    dtype: str
    seed: int  # draws the model's weights (one initialization) and its inputs


@dataclass(frozen=True)
class ImageSource:
    """Where the natural images of the per-image comparison come from."""

    source: str  # bundled | cifar100
    cifar_root: str | None
    count: int


@dataclass(frozen=True)
class CurveItem:
    """Backward J^{L,b} and forward J^{b,b0} curves of one variant on one input kind."""

    spec: ViTSpec
    input: str  # equiangular | images
    forward_source: int
    settings: MeasureSettings
    images: ImageSource | None = None

    @property
    def id(self) -> str:
        return f"{_spec_id(self.spec)}_{self.input}_init{self.settings.seed}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.settings.seed, "dtype": self.settings.dtype}


@dataclass(frozen=True)
class WidthItem:
    """One model of the width scan: the natural-image measurement of `curve` (at its own width),
    reduced to the agreement of its curves with both closures over depth regions."""

    curve: CurveItem
    compare_from: int

    @property
    def id(self) -> str:
        spec = self.curve.spec
        return f"{_spec_id(spec)}_w{spec.width}_init{self.curve.settings.seed}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return self.curve.provenance


@dataclass(frozen=True)
class EndToEndItem:
    """J^{L,0} at `depths` of one model on the permutation-symmetric input: one point of the
    init-sensitivity sweep (sweep = alpha, attn_mult, mlp_mult) or one depth-scaling model."""

    sweep: str
    spec: ViTSpec
    depths: tuple[int, ...]
    settings: MeasureSettings

    @property
    def id(self) -> str:
        init = f"init{self.settings.seed}"
        if self.sweep == "depth":
            return f"depth_{_spec_id(self.spec)}_{init}"
        mult = {"attn_mult": self.spec.attn_mult, "mlp_mult": self.spec.mlp_mult}
        value = f"-{mult[self.sweep]:g}" if self.sweep in mult else ""
        return f"{self.sweep}{value}_{_spec_id(self.spec)}_{init}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.settings.seed, "dtype": self.settings.dtype}


@dataclass(frozen=True)
class FiniteNItem:
    """One initialization of a deep pre-LN model measured at few tokens: J^{b,0} for identical
    tokens (p0 = q0, where uniform attention is exact) and the generic input, each token count,
    which tells the exact finite-N closure from the authors'. The model is built and pushed
    through `chunk_blocks` blocks at a time, so its depth is not bounded by memory."""

    spec: ViTSpec
    token_counts: tuple[int, ...]
    q0: float
    p0: float
    probes: int
    chunk_blocks: int
    dtype: str
    seed: int

    @property
    def id(self) -> str:
        return f"w{self.spec.width}_depth{self.spec.depth}_init{self.seed}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.seed, "dtype": self.dtype}


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


def base_spec(apjn: dict[str, Any]) -> ViTSpec:
    """The configured model with pre-LN; variants swap norm and alpha."""
    return ViTSpec.from_config(
        apjn["model"], attn_mult=apjn["attn_mult"], mlp_mult=apjn["mlp_mult"]
    )


def variant_specs(apjn: dict[str, Any], spec: ViTSpec) -> list[ViTSpec]:
    return [spec.with_(norm=v["norm"], alpha=v.get("alpha")) for v in apjn["variants"]]


def measure_settings(
    apjn: dict[str, Any], seed: int, samples: int | None = None
) -> MeasureSettings:
    measure = apjn["measure"]
    return MeasureSettings(
        q0=apjn["input"]["q0"],
        p0=apjn["input"]["p0"],
        samples=samples or measure["samples"],
        probes=measure["probes"],
        chunk_size=measure["chunk_size"],
        chunk_blocks=measure["chunk_blocks"],
        dtype=measure["dtype"],
        seed=seed,
    )


def init_seeds(seed: int, inits: int) -> range:
    """One seed per independent initialization of a measured model."""
    return range(seed, seed + inits)


def _image_curve(apjn: dict[str, Any], spec: ViTSpec, init: int) -> CurveItem:
    """One model's curves on the configured natural images (forward from
    images.forward_source_block)."""
    images = apjn["images"]
    source = ImageSource(images["source"], images["cifar_root"], images["count"])
    settings = measure_settings(apjn, init)
    return CurveItem(spec, "images", images["forward_source_block"], settings, source)


def curve_items(apjn: dict[str, Any], seed: int) -> list[CurveItem]:
    """Every variant and initialization on the permutation-symmetric input (forward curve from
    block 0) and on natural images (forward from images.forward_source_block)."""
    items = []
    for spec in variant_specs(apjn, base_spec(apjn)):
        for init in init_seeds(seed, apjn["measure"]["inits"]):
            settings = measure_settings(apjn, init)
            items.append(CurveItem(_equiangular_spec(apjn, spec), "equiangular", 0, settings))
            items.append(_image_curve(apjn, spec, init))
    return items


def _equiangular_spec(apjn: dict[str, Any], spec: ViTSpec) -> ViTSpec:
    """`spec` at measure.equiangular_heads heads (the model's own when null): the width of
    the A1 curves."""
    heads = apjn["measure"]["equiangular_heads"]
    return spec if heads is None else _with_heads(spec, heads)


def _with_heads(spec: ViTSpec, heads: int) -> ViTSpec:
    """`spec` with `heads` heads of its head dimension: width = heads x width / heads."""
    return spec.with_(width=heads * (spec.width // spec.heads), heads=heads)


def width_items(apjn: dict[str, Any], seed: int) -> list[WidthItem]:
    """The image measurement of every width_scan variant at every head count (width = heads x
    the configured head dimension; with init_std vit_b, ViT-B's mean-field constants at every
    width), for width_scan.inits initializations: the same seeds as the curve sweep, so the
    configured head count reproduces its models."""
    scan, spec = apjn["width_scan"], base_spec(apjn)
    return [
        WidthItem(
            _image_curve(
                apjn, _with_heads(spec.with_(norm=v["norm"], alpha=v.get("alpha")), h), init
            ),
            apjn["images"]["compare_from_block"],
        )
        for v in scan["variants"]
        for h in scan["heads"]
        for init in init_seeds(seed, scan["inits"])
    ]


def sensitivity_items(apjn: dict[str, Any], seed: int) -> list[EndToEndItem]:
    """J^{L,0} vs α₀ (Derf, DyT) and vs attn_mult / mlp_mult (pre-LN, Derf at mult_alpha),
    for sensitivity.inits initializations each. End-to-end sweeps need only J^{L,0}:
    measure.sweep_samples samples suffice."""
    spec, cfg = base_spec(apjn), apjn["sensitivity"]
    depths = (spec.depth,)
    models = [
        ("alpha", spec.with_(norm=norm, alpha=alpha))
        for norm in SATURATING
        for alpha in cfg["alphas"]
    ]
    for norm, alpha in (("ln", None), ("derf", cfg["mult_alpha"])):
        for sweep in ("attn_mult", "mlp_mult"):
            for mult in cfg["mults"]:
                mults = {"attn_mult": 1.0, "mlp_mult": 1.0, sweep: mult}
                models.append((sweep, spec.with_(norm=norm, alpha=alpha, **mults)))
    samples = apjn["measure"]["sweep_samples"]
    return [
        EndToEndItem(sweep, model, depths, measure_settings(apjn, init, samples))
        for sweep, model in models
        for init in init_seeds(seed, cfg["inits"])
    ]


def depth_items(apjn: dict[str, Any], seed: int) -> list[EndToEndItem]:
    """One model of depth depth_scaling.max_depth per variant: its forward curve from block 0
    gives J^{L,0} for every L up to that depth (the first L blocks of a deeper net at init are
    an L-block net)."""
    max_depth = apjn["depth_scaling"]["max_depth"]
    samples = apjn["measure"]["sweep_samples"]
    spec = base_spec(apjn).with_(depth=max_depth)
    depths = tuple(range(1, max_depth + 1))
    return [
        EndToEndItem("depth", s, depths, measure_settings(apjn, init, samples))
        for s in variant_specs(apjn, spec)
        for init in init_seeds(seed, apjn["measure"]["inits"])
    ]


def finite_n_items(apjn: dict[str, Any], seed: int) -> list[FiniteNItem]:
    """finite_n.inits initializations of the configured model (ViT-B's mean-field constants
    with init_std vit_b) at finite_n's width, heads and depth."""
    cfg = apjn["finite_n"]
    spec = base_spec(apjn).with_(width=cfg["width"], heads=cfg["heads"], depth=cfg["depth"])
    return [
        FiniteNItem(
            spec,
            tuple(cfg["token_counts"]),
            apjn["input"]["q0"],
            apjn["input"]["p0"],
            cfg["probes"],
            cfg["chunk_blocks"],
            apjn["measure"]["dtype"],
            init,
        )
        for init in init_seeds(seed, cfg["inits"])
    ]


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


def end_to_end_items(apjn: dict[str, Any], seed: int) -> list[EndToEndItem]:
    """Every end-to-end J^{L,0} measurement: the sensitivity points, then the depth points
    (one table, told apart by the item's `sweep`)."""
    return sensitivity_items(apjn, seed) + depth_items(apjn, seed)
