"""Study A's measurement sweeps as items: the `apjn` config section parsed once into frozen
dataclasses, one per unit of work (a measurement of one model on one input kind, one end-to-end
point; the training runs' items are train_items.py's). Torch-free, so that the workflow can
enumerate items without importing torch.

Every item carries exactly the settings its job reads, so Snakemake reruns a job when, and only
when, one of them changes; its `id` names its output file and its rows in the chunk tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from transformer_stability.apjn.names import SATURATING, NormName
from transformer_stability.apjn.spec import ViTSpec

if TYPE_CHECKING:
    import pandas as pd


def variant_id(norm: str, alpha: float | None) -> str:
    """'ln', 'derf-a1.5', 'dyt-a1': a variant's name in item ids."""
    return norm if alpha is None else f"{norm}-a{alpha:g}"


def _spec_id(spec: ViTSpec) -> str:
    return variant_id(spec.norm, spec.alpha)


def _draws_id(spec: ViTSpec, seed: int) -> str:
    """What the measured models of one initialization share whatever their norm, α and
    multipliers: their random weights (models.measured_block draws them once)."""
    return f"{spec.draws()}_init{seed}"


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

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of `table` (a Study A table, pre-LN's alpha NaN) of this variant."""
        alpha = table["alpha"].isna() if self.alpha is None else table["alpha"] == self.alpha
        return table[(table["norm"] == self.norm) & alpha]


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
    def shares(self) -> str:
        return _draws_id(self.spec, self.settings.seed)

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
    def shares(self) -> str:
        return self.curve.shares

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
    def shares(self) -> str:
        return _draws_id(self.spec, self.settings.seed)

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


def scan_items(apjn: dict[str, Any], seed: int) -> list[WidthItem]:
    """Every model of the width scan: the image measurement of every width_scan variant at every
    head count (width = heads x the configured head dimension; with init_std vit_b, ViT-B's
    mean-field constants at every width), for width_scan.inits initializations: the same seeds
    as the curve sweep, so the configured head count reproduces its image models."""
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


def width_items(apjn: dict[str, Any], seed: int) -> list[WidthItem]:
    """The models of the width scan the width sweep measures: all but the curve sweep's image
    models (the same spec, seeds and images), whose agreement rows the width fit takes from
    agreement.csv (`width_fit.scan_table`) instead of measuring them twice."""
    measured = {
        _image_curve(apjn, spec, init)
        for spec in variant_specs(apjn, base_spec(apjn))
        for init in init_seeds(seed, apjn["measure"]["inits"])
    }
    return [item for item in scan_items(apjn, seed) if item.curve not in measured]


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


def end_to_end_items(apjn: dict[str, Any], seed: int) -> list[EndToEndItem]:
    """Every end-to-end J^{L,0} measurement: the sensitivity points, then the depth points
    (one table, told apart by the item's `sweep`)."""
    return sensitivity_items(apjn, seed) + depth_items(apjn, seed)
