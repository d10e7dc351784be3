"""What one job of a sweep costs, declared by each study next to its sweeps (`Sweep.work`), so that
the cluster plan (cluster_plan.py) asks SLURM for time from arithmetic, not from guesses typed
into the profile; and how many resumable segments a job too long for one request is cut into.
Torch-free: the workflow and the plan enumerate items without torch."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Work:
    """An item's cost: its floating-point operations, and its sequential steps (optimizer steps of
    a small batched program, each a chain of kernel launches) that bound a job whose arithmetic
    is small, and the seconds it computes on the host's CPU whatever the device (`host_seconds`:
    Study C's float64 polish), which no GPU rate speeds up. `what` says how the count was made,
    for the plan's table."""

    flop: float
    steps: int = 0
    what: str = ""
    memory_bytes: float = 0.0  # what the item holds at its peak, beside a job's fixed overhead
    host_seconds: float = 0.0

    def part(self, segments: int) -> Work:
        """One of `segments` equal consecutive parts of this work."""
        if segments == 1:
            return self
        steps = math.ceil(self.steps / segments)
        return replace(
            self,
            flop=self.flop / segments,
            steps=steps,
            host_seconds=self.host_seconds / segments,
            what=f"{self.what}, 1/{segments}",
        )


def transformer_parameters(layers: int, width: int, mlp_ratio: float = 4.0) -> float:
    """Matrix entries of `layers` transformer blocks: 4 d^2 (Q, K, V, output) and 2 r d^2 (MLP)
    per block; biases and norms add under 1 %."""
    return float(layers * (4 + 2 * mlp_ratio) * width**2)


def transformer_flop(layers: int, width: int, tokens: int, mlp_ratio: float = 4.0) -> float:
    """Forward FLOP of `layers` transformer blocks on one sequence of `tokens` tokens: per token
    and block 2 x (4 d^2 + 2 r d^2) for the Q, K, V, output and MLP matrices and 4 T d for the
    attention scores and their weighted sum (a multiply-add counted as 2)."""
    per_token = 2 * (4 + 2 * mlp_ratio) * width**2 + 4 * tokens * width
    return float(layers * tokens * per_token)


TRAIN_FACTOR = 3
"""A training step or a Jacobian-vector product in forward or reverse mode costs about three
forward passes (the backward pass twice the forward)."""


FLOP_PER_SECOND = 10e12
"""Sustained rate of one GPU job: a sixth of an H100/H200's fp32 or fp64 peak, about half of an
A100's fp32 peak, for models whose matrices are small next to an LLM's."""
SECONDS_PER_STEP = 5e-3
"""One optimizer step of a small batched program (tens of kernel launches and Python): 4.9 ms
measured on an H200 for Study C's L = 128 training, whose arithmetic is 0.6 s of its 80 s
(bench/RESULTS.md, GPU smoke)."""
STARTUP_SECONDS = 300
"""Every job's start: Python, torch and CUDA, building the model, reading the data."""
MARGIN = 1.5
HOST_OVERHEAD_BYTES = 2e9
"""A job's host memory beside what its item holds: Python with torch, pandas and the package,
CUDA's libraries on a GPU node, its tables (1.3 to 1.5 GB measured for the smallest paper items
on an H200, bench/RESULTS.md, GPU smoke)."""
CUDA_CONTEXT_BYTES = 0.5e9
"""The GPU memory CUDA's context and torch's kernels take before any tensor."""
MEMORY_MARGIN = 1.25
"""A memory request is this many times the predicted peak (after the meter's calibration),
rounded up to whole GB."""
GRANULE_MIN = 10
"""Requests are rounded up to whole multiples of this many minutes."""
LIMIT_MIN = 120
"""No planned job may ask for more: a longer item is cut into segments (`segments()`)."""
MAX_SEGMENTS = 100


def estimate_seconds(work: Work, slowdown: float = 1.0) -> float:
    """One job's estimate: start-up, arithmetic at the sustained rate (divided by the rule's
    measured `slowdown`: work the FLOP count leaves out), sequential steps, the host's share."""
    device = slowdown * work.flop / FLOP_PER_SECOND + work.steps * SECONDS_PER_STEP
    return STARTUP_SECONDS + device + work.host_seconds


def request_minutes(work: Work, slowdown: float = 1.0) -> int:
    """A job's time request: the estimate times the margin, rounded up to whole granules."""
    seconds = estimate_seconds(work, slowdown)
    return math.ceil(seconds * MARGIN / 60 / GRANULE_MIN) * GRANULE_MIN


def flop_equivalent(work: Work) -> float:
    """The work on the device in FLOP, a sequential step counted at the plan's own exchange rate
    (the host's seconds left out: the meter calibrates the device's rate)."""
    return work.flop + work.steps * SECONDS_PER_STEP * FLOP_PER_SECOND


def segments(work: Work) -> int:
    """The fewest equal segments (jobs, each resuming from the previous one's checkpoint) whose
    requests each fit LIMIT_MIN; every segment pays the start-up again."""
    for count in range(1, MAX_SEGMENTS + 1):
        if request_minutes(work.part(count)) <= LIMIT_MIN:
            return count
    raise ValueError(f"{work.what}: over {MAX_SEGMENTS} segments of {LIMIT_MIN} min")


def host_bytes(work: Work) -> float:
    """Predicted peak host memory of a job on the CPU path, where everything the item holds is on
    the host (on a GPU the host holds less: the same request is safe)."""
    return work.memory_bytes + HOST_OVERHEAD_BYTES


def gpu_bytes(work: Work) -> float:
    """Predicted peak GPU memory of a job: what the item holds, beside CUDA's context."""
    return work.memory_bytes + CUDA_CONTEXT_BYTES


def dtype_bytes(dtype: str) -> int:
    """Bytes per number of a config's dtype name (float32 or float64)."""
    return 8 if dtype == "float64" else 4


def block_activations(tokens: int, width: int, heads: int, mlp_ratio: float = 4.0) -> float:
    """Numbers one transformer block keeps for its backward pass (or computes in one forward-mode
    pass) per sequence: the inputs of its two norms, Q, K, V, the attention output and its
    projection, the MLP's hidden layer before and after the activation (2 r T d), the residual
    sums, and the attention scores and weights (2 h T^2)."""
    return (9 + 2 * mlp_ratio) * tokens * width + 2 * heads * tokens**2
