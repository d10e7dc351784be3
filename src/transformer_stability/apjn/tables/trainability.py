"""The training runs' tables: one row per run; per configuration its best loss, its window of
learning rates and the pairs matched in ln J^{L,0}; per norm and depth the statistics of
"needs careful tuning" and their contrasts with pre-LN."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.tables._common import Ids, _alpha, _norm
from transformer_stability.tables import INF, Table


class Trainability(Ids):
    """One row per training run."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    init_std: Series[float] = pa.Field(gt=0, description="the weights' initial std")
    lr: Series[float] = pa.Field(gt=0, description="the learning rate")
    dataset: Series[str] = pa.Field(isin=("textures", "cifar100"), description="the data")
    train_seed: Series[int] = pa.Field(ge=0, description="the run's seed")
    steps: Series[int] = pa.Field(
        ge=0, description="steps run; diverged: the step its loss or gradient turned non-finite"
    )
    final_loss: Series[float] = pa.Field(ge=0, nullable=True, description="NaN: diverged")
    train_accuracy: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="NaN: diverged")
    test_accuracy: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="NaN: diverged")
    diverged: Series[bool] = pa.Field(description="whether the loss or gradient turned non-finite")
    loss_spikes: Series[int] = pa.Field(
        ge=0, description="times the smoothed loss rose above 1.5 x its lowest value so far"
    )
    grad_blowups: Series[int] = pa.Field(
        ge=0, description="steps whose gradient norm exceeded 10 x its running mean"
    )
    theory_log_apjn: Series[float] = pa.Field(description="ln J^{L,0} of the model at init")
    measured_log_apjn: Series[float] = pa.Field(description="its Hutchinson estimate")

    class Config:
        metadata = {"path": "apjn/trainability.csv", "rule": "gather"}


class TuningWindows(Table):
    """One row per trained configuration: the best loss over rates and its window
    (apjn/tuning.py)."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    attn_mult: Series[float] = pa.Field(gt=0, description="the init multiplier (= mlp_mult)")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    log_apjn: Series[float] = pa.Field(description="theory ln J^{L,0} at init, mean over seeds")
    best_loss: Series[float] = pa.Field(
        ge=0, metadata=INF, description="lowest mean final loss over rates; inf: none trained"
    )
    best_loss_lo: Series[float] = pa.Field(
        ge=0, metadata=INF, description="its 95 % bootstrap interval over training seeds: low"
    )
    best_loss_hi: Series[float] = pa.Field(ge=0, metadata=INF, description="and high")
    best_lr: Series[float] = pa.Field(gt=0, nullable=True, description="its rate; NaN: none")
    window_rates: Series[int] = pa.Field(
        ge=0,
        description="rates whose mean final loss exceeds the best by at most 10 % of the "
        "depth's lowest best loss",
    )
    window_decades: Series[float] = pa.Field(
        ge=0,
        description="the width on the log10-rate axis within that tolerance, the loss linear "
        "between rates (tuning.window_widths)",
    )
    rates: Series[int] = pa.Field(ge=1, description="rates trained")
    runs: Series[int] = pa.Field(ge=1, description="runs (rates x seeds)")
    diverged: Series[int] = pa.Field(ge=0, description="runs with a non-finite loss or gradient")
    loss_spikes: Series[int] = pa.Field(ge=0, description="loss spikes over all runs")
    grad_blowups: Series[int] = pa.Field(ge=0, description="gradient-norm blow-ups over all runs")

    class Config:
        metadata = {"path": "apjn/tuning_windows.csv", "rule": "apjn_tuning"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Every (norm, α₀) of the grid, pre-LN once, at every multiplier and depth."""
        train = config["apjn"]["train"]
        variants = 1 + len(train["norms"]) * len(train["alphas"])
        return variants * len(train["mults"]) * len(set(train["depths"]))


class MatchedPairs(Table):
    """Pairs of configurations with ln J^{L,0} within 0.1 of each other (apjn/tuning.py)."""

    first: Series[str] = pa.Field(description="one configuration: norm, alpha, mult, depth")
    second: Series[str] = pa.Field(description="the other")
    log_apjn_first: Series[float] = pa.Field(description="its theory ln J^{L,0}")
    log_apjn_second: Series[float] = pa.Field(description="the other's")
    best_loss_first: Series[float] = pa.Field(ge=0, metadata=INF, description="its best loss")
    best_loss_second: Series[float] = pa.Field(ge=0, metadata=INF, description="the other's")
    window_decades_first: Series[float] = pa.Field(ge=0, description="its window (decades)")
    window_decades_second: Series[float] = pa.Field(ge=0, description="the other's")

    class Config:
        metadata = {"path": "apjn/matched_pairs.csv", "rule": "apjn_tuning"}


QUANTITIES = ("sensitivity", "tuning_cost", "window", "instability", "partial_r", "j_picks_alpha")


class TuningStatistics(Table):
    """Per norm and depth the statistics of "needs careful tuning", a saturating norm's
    contrasts with pre-LN, and the theory's link to the best loss, each with its 95 %
    bootstrap interval over training seeds (apjn/tuning_statistics.py)."""

    quantity: Series[str] = pa.Field(
        isin=QUANTITIES,
        description="sensitivity: range of the best loss over init choices; tuning_cost: loss at "
        "the default (alpha0 1, mult 1, median rate) minus the best; window: decades of rates "
        "near a choice's best, mean over choices; instability: events per run; partial_r: "
        "partial correlation of best loss and ln J^{L,0} given the design; j_picks_alpha: "
        "fraction of (depth, mult) where the alpha0 with J^{L,0} nearest 1 trains best",
    )
    norm: Series[str] = pa.Field(
        isin=("ln", "derf", "dyt", "all"), description="the norm; all: every configuration"
    )
    depth: Series[int] = pa.Field(ge=0, description="the depth L; 0: mean over the depths")
    contrast: Series[bool] = pa.Field(description="the norm's value minus pre-LN's")
    value: Series[float] = pa.Field(nullable=True, metadata=INF, description="the statistic")
    lo: Series[float] = pa.Field(
        nullable=True, metadata=INF, description="95 % bootstrap interval over training seeds"
    )
    hi: Series[float] = pa.Field(nullable=True, metadata=INF, description="its upper end")
    seeds: Series[int] = pa.Field(ge=1, description="training seeds resampled")

    class Config:
        metadata = {"path": "apjn/tuning_statistics.csv", "rule": "apjn_tuning"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Four quantities per norm at every depth and over all, contrasts for the saturating
        norms; the partial correlation; J's pick of alpha0 per saturating norm."""
        train = config["apjn"]["train"]
        depths, saturating = len(set(train["depths"])) + 1, len(train["norms"])
        return 4 * depths * (1 + 2 * saturating) + 1 + saturating
