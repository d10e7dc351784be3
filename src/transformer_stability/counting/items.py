"""Study C's sweeps as items: the `counting` config section parsed once into frozen dataclasses,
one per unit of work (one batched training of a read-out at one length L, the bounds and
constructions at one theory width d, the C1 geometry). Torch-free, so that the workflow can
enumerate items without importing torch.

Every item carries exactly the settings its job reads, so Snakemake reruns a job when, and only
when, one of them changes: a training item holds nothing of `counting.theory` (changing the
theory widths never reruns the training), and a regression item holds no logit scale (those
act on classification logits only); its `id` names its rows in the chunk tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformer_stability.counting.names import READOUTS
from transformer_stability.sweeps import Sweep
from transformer_stability.work import TRAIN_FACTOR, Work


@dataclass(frozen=True)
class Bisection:
    """How B_min of one (L, seed) is bracketed and bisected (counting/bisection.py). The
    regression bracket is [theory lower bound, upper_factor x construction norm] of the
    trained placement (computed in the job); classification, which has no lower bound that
    grows with L, uses the fixed bracket [low, high]."""

    probes: int
    precision: float
    max_rounds: int
    upper_factor: float | None  # regression only
    margin: float | None  # regression only: the construction's exactness margin
    low: float | None  # classification only
    high: float | None


@dataclass(frozen=True)
class TrainItem:
    """One read-out at one length L, all seeds batched: the bisection for B_min (if L is a
    constrained length; every round one batched training) and the unconstrained run (if L is
    an unconstrained length)."""

    readout: str
    length: int
    width: int
    seeds: tuple[int, ...]
    steps: int
    lr: float
    final_lr_fraction: float
    p_range: tuple[float, float] | None  # regression only: the loss exponent's ramp
    logit_scale: float | None  # classification only (None: regression, which has no logits)
    final_logit_scale: float | None
    dtype: str  # float32 | float64, resolved to a torch dtype in the job
    bisection: Bisection | None  # None: not a constrained length
    unconstrained: bool

    @property
    def id(self) -> str:
        return f"{self.readout}_L{self.length}"

    @property
    def provenance(self) -> dict[str, int | str]:
        # the rows carry their runs' own seeds; the first one is the base seed
        return {"seed": self.seeds[0], "dtype": self.dtype}


@dataclass(frozen=True)
class TheoryItem:
    """Lower bounds and verified constructions of B_min(L) at one width d, every placement."""

    d: int
    lengths: tuple[int, ...]
    classification_max_length: int
    margin: float
    seed: int  # provenance only: the bounds and constructions are deterministic

    @property
    def id(self) -> str:
        return f"d{self.d}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.seed, "dtype": "float64"}


@dataclass(frozen=True)
class GeometryItem:
    """C1: the constructions of every placement and read-out at one (d, L)."""

    d: int
    length: int
    margin: float
    seed: int  # provenance only

    @property
    def id(self) -> str:
        return f"d{self.d}_L{self.length}"

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.seed, "dtype": "float64"}


def _bisection(counting: dict[str, Any], readout: str) -> Bisection:
    training = counting["training"]
    shared, sweep = training["bisection"], training[readout]
    regression = readout == "regression"
    return Bisection(
        probes=shared["probes"],
        precision=shared["precision"],
        max_rounds=shared["max_rounds"],
        upper_factor=sweep["upper_factor"] if regression else None,
        margin=counting["theory"]["margin"] if regression else None,
        low=None if regression else sweep["low"],
        high=None if regression else sweep["high"],
    )


@dataclass(frozen=True)
class ResidualItem:
    """The best attainable max |y - c| against B at one (d, L): no-norm and post-norm softmax
    regression, and linear attention."""

    d: int
    length: int
    errors: tuple[float, ...]
    seed: int  # provenance only

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": self.seed, "dtype": "float64"}


def residual_item(counting: dict[str, Any], seed: int) -> ResidualItem:
    """At the first theory width, counting.residual.length and its target errors."""
    residual = counting["residual"]
    return ResidualItem(
        counting["theory"]["widths"][0], residual["length"], tuple(residual["errors"]), seed
    )


def train_items(counting: dict[str, Any], seed: int) -> list[TrainItem]:
    """One item per (read-out, L): regression lengths first, then classification, each in
    increasing L; every item trains seeds seed .. seed + training.seeds - 1."""
    training = counting["training"]
    seeds = tuple(seed + i for i in range(training["seeds"]))
    items = []
    for readout in READOUTS:
        sweep = training[readout]
        classification = readout == "classification"
        bisection = _bisection(counting, readout)
        for length in sorted(set(sweep["lengths"]) | set(sweep["unconstrained_lengths"])):
            items.append(
                TrainItem(
                    readout=readout,
                    length=length,
                    width=training["width"],
                    seeds=seeds,
                    steps=sweep["steps"],
                    lr=sweep["lr"],
                    final_lr_fraction=training["final_lr_fraction"],
                    p_range=None if classification else (sweep["p_start"], sweep["p_end"]),
                    logit_scale=training["logit_scale"] if classification else None,
                    final_logit_scale=training["final_logit_scale"] if classification else None,
                    dtype=training["dtype"],
                    bisection=bisection if length in sweep["lengths"] else None,
                    unconstrained=length in sweep["unconstrained_lengths"],
                )
            )
    return items


def train_work(item: TrainItem) -> Work:
    """One full-batch training per bisection round (probes x seeds runs) and the unconstrained
    run (seeds runs, counted as many as a round's): sequential steps bound it. Per grid point
    and run a forward costs about 20 d (scores of the two token kinds, softmax weights, norm)
    plus 2 K d for a K-way read-out."""
    rounds = (item.bisection.max_rounds if item.bisection else 0) + item.unconstrained
    probes = item.bisection.probes if item.bisection else 1
    points = (item.length + 1) * (item.length + 2) // 2
    classes = item.length + 1 if item.readout == "classification" else 1
    per_step = len(item.seeds) * probes * points * (20 + 2 * classes) * item.width
    what = f"{rounds} trainings x {item.steps} steps, {points} grid points, {item.readout}"
    return Work(TRAIN_FACTOR * per_step * item.steps * rounds, item.steps * rounds, what)


def theory_items(counting: dict[str, Any], seed: int) -> list[TheoryItem]:
    """One item per theory width d, in config order."""
    theory = counting["theory"]
    return [
        TheoryItem(
            d=d,
            lengths=tuple(theory["lengths"]),
            classification_max_length=theory["classification_max_length"],
            margin=theory["margin"],
            seed=seed,
        )
        for d in theory["widths"]
    ]


def geometry_item(counting: dict[str, Any], seed: int) -> GeometryItem:
    """C1 at the first theory width and counting.geometry_length."""
    theory = counting["theory"]
    return GeometryItem(theory["widths"][0], counting["geometry_length"], theory["margin"], seed)


_THEORY = tuple(
    f"counting.theory.{key}" for key in ("widths", "lengths", "classification_max_length", "margin")
)

SWEEPS = (
    # LPs and float64 grid checks: the theory never uses the GPU
    Sweep(
        "counting_theory",
        "counting_theory.py",
        theory_items,
        {
            "theory": "counting/bmin_theory",
            "walls": "counting/walls",
            "precision": "counting/precision",
        },
        settings=("seed", *_THEORY),
        gpu=False,
    ),
    Sweep(
        "counting_training",
        "counting_train.py",
        train_items,
        {"table": "counting/training"},
        work=train_work,
        settings=("device", "seed", "counting.training", "counting.theory.margin"),
    ),
)

# The config keys (settings.py) of the tables not gathered from a sweep; a derived table also
# records those of the tables it is computed from.
_FIRST_WIDTH = ("seed", "counting.theory.widths")
SETTINGS = {
    "counting/geometry.csv": (*_FIRST_WIDTH, "counting.geometry_length", "counting.theory.margin"),
    "counting/residual.csv": (*_FIRST_WIDTH, "counting.residual"),
    "counting/reference_slopes.csv": ("seed",),
    "counting/empirical_bmin.csv": ("seed", "counting.theory.fit_points"),
    "counting/rates.csv": ("seed", "counting.theory.fit_points"),
    "counting/exponents.csv": ("seed",),
}
