"""Study N's tables under results/numerics/: one model per table (columns in order, dtypes,
ranges, NaN and inf where the computation makes them), the row count where the config fixes
it. Torch-free: the workflow's gather and figure jobs check tables without the study's code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.numerics.items import SOURCES
from transformer_stability.tables import INF, Table

METRICS = ("rel_linf", "rel_comp", "abs_linf", "stream_min_l2", "stream_median_l2")


def _quantile(share: str) -> Any:
    return pa.Field(
        ge=0,
        nullable=True,
        metadata=INF,
        description=f"the {share} quantile; inf: a test value overflowed; NaN: 0/0",
    )


def _bound(description: str, nullable: bool = False) -> Any:
    return pa.Field(ge=0, nullable=nullable, metadata=INF, description=description)


WEIGHTS = ("random", "pretrained", "trained")


def _weights() -> Any:
    return pa.Field(
        isin=WEIGHTS, description="random, pretrained, or trained by the pipeline (training.py)"
    )


class Run(Table):
    """The columns that name one GPT-2 run at one residual add."""

    weights: Series[str] = _weights()
    model: Series[str] = pa.Field(description="the model's name")
    precision: Series[str] = pa.Field(description="the test format: fp32, bf16, fp16 or m<bits>")
    alpha: Series[float] = pa.Field(gt=0, description="the residual branches' scale alpha")
    checkpoint: Series[int] = pa.Field(ge=1, description="the residual add, 1 ... 2L")
    kind: Series[str] = pa.Field(isin=("attn", "mlp"), description="the add it follows")


class Gpt2Errors(Run):
    """Quantiles of the test format's errors at every residual add."""

    metric: Series[str] = pa.Field(
        isin=METRICS,
        description="rel_linf, rel_comp, abs_linf (over tokens and sequences) or "
        "stream_min_l2, stream_median_l2 (the reference stream's size over sequences)",
    )
    p01: Series[float] = _quantile("1%")
    p25: Series[float] = _quantile("25%")
    p50: Series[float] = _quantile("50%")
    p75: Series[float] = _quantile("75%")
    p99: Series[float] = _quantile("99%")

    class Config:
        metadata = {"path": "numerics/gpt2_errors.csv", "rule": "gather"}


class Gpt2Recursion(Run):
    """The largest error over tokens against the recursion's bounds at every residual add."""

    unit_roundoff: Series[float] = pa.Field(ge=0, description="the test format's u")
    measured: Series[float] = _bound("the largest absolute error over tokens")
    bound: Series[float] = _bound("its worst-case bound")
    measured_rel: Series[float] = _bound("the error relative to the stream (inf-norm)")
    bound_rel: Series[float] = _bound("the worst-case relative bound")
    measured_rel_l2: Series[float] = _bound("the error relative to the stream (2-norm)")
    typical_rel_l2: Series[float] = _bound("the typical-case estimate")
    amplification: Series[float] = _bound("the per-step amplification alpha*omega_k*Lip_k")
    amplification_l2: Series[float] = _bound("the same in the 2-norm")

    class Config:
        metadata = {"path": "numerics/gpt2_recursion.csv", "rule": "gather"}


class RecursionSources(Table):
    """The recursion per rounding source: one operation type rounded, all else float64."""

    weights: Series[str] = _weights()
    model: Series[str] = pa.Field(description="the model's name")
    mantissa_bits: Series[int] = pa.Field(ge=1, description="the bits the source rounds to")
    source: Series[str] = pa.Field(
        isin=("all", *SOURCES), description="the operation type rounded (all: every one)"
    )
    alpha: Series[float] = pa.Field(gt=0, description="the residual branches' scale alpha")
    checkpoint: Series[int] = pa.Field(ge=1, description="the residual add, 1 ... 2L")
    kind: Series[str] = pa.Field(isin=("attn", "mlp"), description="the add it follows")
    unit_roundoff: Series[float] = pa.Field(ge=0, description="u = 2^-(bits+1)")
    measured: Series[float] = _bound("the largest absolute error over tokens (inf-norm)")
    bound: Series[float] = _bound("the source's worst-case bound on it")
    measured_rel: Series[float] = _bound("the error relative to the stream (inf-norm)")
    bound_rel: Series[float] = _bound("the worst-case relative bound")
    measured_rel_l2: Series[float] = _bound("the error relative to the stream (2-norm)")
    typical_rel_l2: Series[float] = _bound("the source's typical-case estimate (2-norm)")

    class Config:
        metadata = {"path": "numerics/recursion_sources.csv", "rule": "gather"}


class Gpt2Weights(Table):
    """Weight magnitudes per block (alpha = 1, float32 weights)."""

    weights: Series[str] = _weights()
    model: Series[str] = pa.Field(description="the model's name")
    block: Series[int] = pa.Field(ge=0, description="the block")
    quantity: Series[str] = pa.Field(
        isin=("omega_ov", "omega_ud", "omega_kq"), description="the magnitude"
    )
    value: Series[float] = pa.Field(ge=0, description="its value")

    class Config:
        metadata = {"path": "numerics/gpt2_weights.csv", "rule": "gather"}


class AttentionSinks(Table):
    """Sink statistics of every head's attention rows (queries in the second half of each
    sequence; float32, alpha = 1, on the model's input): quantiles and mean over the rows."""

    weights: Series[str] = _weights()
    model: Series[str] = pa.Field(description="the model's name")
    block: Series[int] = pa.Field(ge=0, description="the block")
    head: Series[int] = pa.Field(ge=0, description="the head")
    statistic: Series[str] = pa.Field(
        isin=("p_max", "first_token"),
        description="p_max: a row's largest weight; first_token: its weight on the first token",
    )
    p01: Series[float] = pa.Field(ge=0, le=1, description="the 1% quantile over the rows")
    p25: Series[float] = pa.Field(ge=0, le=1, description="the 25% quantile")
    p50: Series[float] = pa.Field(ge=0, le=1, description="the median")
    p75: Series[float] = pa.Field(ge=0, le=1, description="the 75% quantile")
    p99: Series[float] = pa.Field(ge=0, le=1, description="the 99% quantile")
    mean: Series[float] = pa.Field(ge=0, le=1, description="the mean over the rows")

    class Config:
        metadata = {"path": "numerics/attention_sinks.csv", "rule": "gather"}


class Gpt2Training(Table):
    """The trained models' loss curves: mean cross-entropy (nats per token) of the training
    batches since the last line, and of fixed held-out windows."""

    weights: Series[str] = _weights()  # trained: one value (pandera refuses a one-value isin)
    model: Series[str] = pa.Field(description="the model's name")
    step: Series[int] = pa.Field(ge=1, description="the optimizer step")
    split: Series[str] = pa.Field(isin=("train", "heldout"), description="the text")
    loss: Series[float] = pa.Field(gt=0, description="the cross-entropy, nats per token")

    class Config:
        metadata = {"path": "numerics/gpt2_training.csv", "rule": "numerics_train"}


def _sink_heads(sinks: Mapping[str, Any]) -> int:
    """The sink model's heads over all its blocks."""
    return sinks["model"]["layers"] * sinks["model"]["heads"]


class SinkEmergence(Table):
    """The Bigram-Backcopy model's heads along training (numerics/backcopy.py): per checkpoint,
    block, head and held-out sequence, over the rows of the second half of the sequence."""

    model: Series[str] = pa.Field(description="the model's name")
    step: Series[int] = pa.Field(ge=0, description="the optimizer step (0: the initialization)")
    block: Series[int] = pa.Field(ge=0, description="the block")
    head: Series[int] = pa.Field(ge=0, description="the head")
    sequence: Series[int] = pa.Field(ge=0, description="the held-out sequence")
    first_token: Series[float] = pa.Field(
        ge=0, le=1, description="the mean weight on the first token (BOS)"
    )
    tail_mass: Series[float] = pa.Field(
        ge=0, le=1, description="the median over the rows of 1 - p_max (the other entries' sum)"
    )

    class Config:
        metadata = {"path": "numerics/sink_emergence.csv", "rule": "numerics_sinks"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        sinks = config["numerics"]["sinks"]
        return (1 + len(sinks["checkpoints"])) * _sink_heads(sinks) * sinks["sequences"]


class SinkTraining(Table):
    """The Bigram-Backcopy model's held-out loss per checkpoint and sequence, beside the task's
    Bayes loss on the same sequence (nats per predicted token)."""

    model: Series[str] = pa.Field(description="the model's name")
    step: Series[int] = pa.Field(ge=0, description="the optimizer step (0: the initialization)")
    sequence: Series[int] = pa.Field(ge=0, description="the held-out sequence")
    loss: Series[float] = pa.Field(gt=0, description="the model's cross-entropy")
    bayes_loss: Series[float] = pa.Field(ge=0, description="the task's own conditional law's")

    class Config:
        metadata = {"path": "numerics/sink_training.csv", "rule": "numerics_sinks"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        sinks = config["numerics"]["sinks"]
        return (1 + len(sinks["checkpoints"])) * sinks["sequences"]


class SinkSoftmax(Table):
    """The softmax evaluated on the Bigram-Backcopy model's own late attention rows, at the
    initialization and after training (numerics/attention_rows.py): per format, block, head,
    held-out sequence and query, the shifted evaluation's error beside its bound and the row's
    tail mass."""

    model: Series[str] = pa.Field(description="the model's name")
    step: Series[int] = pa.Field(ge=0, description="the optimizer step (0: the initialization)")
    format: Series[str] = pa.Field(
        description="m<bits> (emulated, float64's exponent range) or a torch cast (fp16, bf16: "
        "subnormals and overflow)"
    )
    mantissa_bits: Series[int] = pa.Field(ge=1, description="the format's mantissa bits")
    block: Series[int] = pa.Field(ge=0, description="the block")
    head: Series[int] = pa.Field(ge=0, description="the head")
    sequence: Series[int] = pa.Field(ge=0, description="the held-out sequence")
    query: Series[int] = pa.Field(ge=0, description="the row's query position (BOS: 0)")
    tail_mass: Series[float] = pa.Field(
        ge=0, le=1, description="1 - p_max of the row (the other entries' sum)"
    )
    measured: Series[float] = _bound("the 1-norm of the evaluation's error")
    bound: Series[float] = _bound("its bound (inf where the format may overflow)")

    class Config:
        metadata = {"path": "numerics/sink_softmax.csv", "rule": "numerics_sinks"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        sinks = config["numerics"]["sinks"]
        late = sinks["task"]["seq_len"] - sinks["task"]["seq_len"] // 2  # queries T/2 .. T-1
        return 2 * len(sinks["formats"]) * _sink_heads(sinks) * sinks["sequences"] * late


class Norms(Table):
    """LayerNorm and RMSNorm: conditions, measured errors and their bounds."""

    norm: Series[str] = pa.Field(isin=("layernorm", "rmsnorm"), description="the norm")
    mantissa_bits: Series[int] = pa.Field(ge=1, description="the format's mantissa bits")
    outlier: Series[float] = pa.Field(ge=0, description="the outlier's size")
    sample: Series[int] = pa.Field(ge=0, description="the sample")
    metric: Series[str] = pa.Field(description="kappa_* conditions, err_* errors, bound_* bounds")
    value: Series[float] = _bound("its value; a bound is inf once sigma may vanish", True)

    class Config:
        metadata = {"path": "numerics/norms.csv", "rule": "numerics_bounds"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        norms = config["numerics"]["norms"]
        cells = len(norms["mantissa_bits"]) * len(norms["outliers"]) * 2  # layernorm, rmsnorm
        return cells * norms["samples"] * 11  # metrics per (norm, sample): numerics/norms.py


class Softmax(Table):
    """Softmax's propagation and evaluation errors against their bounds."""

    sweep: Series[str] = pa.Field(isin=("sink", "offset"), description="the swept setting")
    p_max: Series[float] = pa.Field(gt=0, le=1, description="the largest probability")
    offset: Series[float] = pa.Field(description="the logits' offset")
    format: Series[str] = pa.Field(
        description="fp64 (propagation), m<bits> (emulated, float64's exponent range) or a torch "
        "cast (fp16, bf16: subnormals and overflow)"
    )
    mantissa_bits: Series[int] = pa.Field(ge=1, description="the format's mantissa bits")
    mode: Series[str] = pa.Field(
        isin=("propagation", "unshifted", "shifted"), description="what is measured"
    )
    metric: Series[str] = pa.Field(
        isin=("l1_gain", "jacobian_abs_sum", "max_rel", "l1_abs", "worst_entry", "kappa_max"),
        description="the metric; worst_entry: the entry with the largest error/bound",
    )
    sample: Series[int] = pa.Field(ge=0, description="the sample")
    measured: Series[float] = _bound("the measured value", True)
    bound: Series[float] = _bound("its bound; NaN: kappa_max has none", True)

    class Config:
        metadata = {"path": "numerics/softmax.csv", "rule": "numerics_bounds"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Per sample: a sink setting has 2 propagation + 2 x 4 emulated evaluation metrics +
        2 x 3 per torch cast, an offset setting the 8 emulated evaluation metrics."""
        softmax = config["numerics"]["softmax"]
        sink = 10 + 6 * len(softmax["formats"])
        return (sink * len(softmax["p_max"]) + 8 * len(softmax["offsets"])) * softmax["samples"]


class Lipschitz(Table):
    """Attention's Lipschitz constant per weight draw and length: at a random input, the worst
    found over the ball, the bounds and their ratios."""

    seq_len: Series[int] = pa.Field(ge=1, description="the sequence length")
    draw: Series[int] = pa.Field(ge=0, description="the weight draw (the same weights at every n)")
    p_max_min: Series[float] = pa.Field(ge=0, le=1, description="the random input's smallest p_max")
    norm: Series[str] = pa.Field(isin=("inf", "frobenius"), description="the matrix norm")
    estimate: Series[float] = _bound(
        "at the random input: exact (inf), power iteration (frobenius)"
    )
    worst: Series[float] = _bound("the largest found by Adam ascent; NaN: not searched", True)
    bound: Series[float] = _bound("the bound at the random input")
    ball_bound: Series[float] = _bound("the bound over the R-ball")
    worst_over_estimate: Series[float] = _bound("worst / estimate", True)
    bound_over_worst: Series[float] = _bound("ball_bound / worst", True)

    class Config:
        metadata = {"path": "numerics/lipschitz.csv", "rule": "numerics_bounds"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        lipschitz = config["numerics"]["lipschitz"]
        return len(lipschitz["seq_lens"]) * lipschitz["draws"] * 2  # inf, frobenius


TABLES = (
    Gpt2Errors,
    Gpt2Recursion,
    RecursionSources,
    Gpt2Weights,
    AttentionSinks,
    Gpt2Training,
    SinkEmergence,
    SinkTraining,
    SinkSoftmax,
    Norms,
    Softmax,
    Lipschitz,
)
