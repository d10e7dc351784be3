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


@dataclass(frozen=True)
class BoundGrid:
    """The norm bounds of one read-out's constrained runs, every one trained with every seed.
    Regression: B = ratio x the theory's lower bound at L (computed in the job; ratios below 1
    are controls, where no parameters count), `ratios` the first round of the search for B_min
    that refines its bracket to `resolution` in at most `rounds` rounds (counting/bracket.py).
    Classification: B = ratio itself, since scale invariance leaves it no lower bound; no
    search (resolution None, one round)."""

    ratios: tuple[float, ...]  # classification: the bounds themselves
    relative: bool  # True: ratios multiply the lower bound (regression)
    resolution: float | None = None
    rounds: int = 1


@dataclass(frozen=True)
class TrainItem:
    """One read-out at one length L, all runs in one batched training: every bound of the grid
    with every seed (if L is a constrained length) and the unconstrained runs (if L is an
    unconstrained length); classification may train on the grid's edges only (evaluated on the
    whole grid either way)."""

    readout: str
    length: int
    width: int
    seeds: tuple[int, ...]
    steps: int  # constrained runs
    unconstrained_steps: int
    lr: float
    final_lr_fraction: float
    p_range: tuple[float, float] | None  # regression only: the loss exponent's ramp
    polish_iterations: int  # regression only (0 for classification): SLSQP steps per solve
    head_fit: bool  # classification only (False for regression): the head refitted by LP
    logit_scale: float | None  # classification only (None: regression, which has no logits)
    final_logit_scale: float | None
    dtype: str  # float32 | float64, resolved to a torch dtype in the job
    grid: BoundGrid | None  # None: not a constrained length
    unconstrained: bool
    edges_only: bool  # train on m = 0 and c + m = L only

    @property
    def id(self) -> str:
        return f"{self.readout}_L{self.length}"

    @property
    def joins_first_round(self) -> bool:
        """Whether the unconstrained runs train in the grid's first round (one batch): where
        there are both and they take the same steps."""
        return (
            self.unconstrained and self.grid is not None and self.unconstrained_steps == self.steps
        )

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
    margin_lp_max_length: int
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
        grid = (
            BoundGrid(tuple(sweep["bounds"]), relative=False)
            if classification
            else BoundGrid(tuple(sweep["ratios"]), True, sweep["resolution"], sweep["rounds"])
        )
        for length in sorted(set(sweep["lengths"]) | set(sweep["unconstrained_lengths"])):
            items.append(
                TrainItem(
                    readout=readout,
                    length=length,
                    width=training["width"],
                    seeds=seeds,
                    steps=sweep["steps"],
                    unconstrained_steps=sweep.get("unconstrained_steps", sweep["steps"]),
                    lr=sweep["lr"],
                    final_lr_fraction=training["final_lr_fraction"],
                    p_range=None if classification else (sweep["p_start"], sweep["p_end"]),
                    polish_iterations=0 if classification else sweep["polish_iterations"],
                    head_fit=classification and sweep["head_fit"],
                    logit_scale=training["logit_scale"] if classification else None,
                    final_logit_scale=training["final_logit_scale"] if classification else None,
                    dtype=training["dtype"],
                    grid=grid if length in sweep["lengths"] else None,
                    unconstrained=length in sweep["unconstrained_lengths"],
                    edges_only=classification and sweep["edges_only"],
                )
            )
    return items


def theory_items(counting: dict[str, Any], seed: int) -> list[TheoryItem]:
    """One item per theory width d, in config order."""
    theory = counting["theory"]
    return [
        TheoryItem(
            d=d,
            lengths=tuple(theory["lengths"]),
            classification_max_length=theory["classification_max_length"],
            margin_lp_max_length=theory["margin_lp_max_length"],
            margin=theory["margin"],
            seed=seed,
        )
        for d in theory["widths"]
    ]


def geometry_item(counting: dict[str, Any], seed: int) -> GeometryItem:
    """C1 at the first theory width and counting.geometry_length."""
    theory = counting["theory"]
    return GeometryItem(theory["widths"][0], counting["geometry_length"], theory["margin"], seed)
