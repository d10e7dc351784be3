"""What one job of a sweep costs, declared by each study next to its sweeps (`Sweep.work`), so that
the cluster plan (cluster_plan.py) asks SLURM for time from arithmetic, not from guesses typed
into the profile. Torch-free: the workflow and the plan enumerate items without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    """An item's cost: its floating-point operations, and its sequential steps (optimizer steps of
    a small batched program, each a chain of kernel launches) that bound a job whose arithmetic
    is small. `what` says how the count was made, for the plan's table."""

    flop: float
    steps: int = 0
    what: str = ""


def transformer_flop(layers: int, width: int, tokens: int, mlp_ratio: float = 4.0) -> float:
    """Forward FLOP of `layers` transformer blocks on one sequence of `tokens` tokens: per token
    and block 2 x (4 d^2 + 2 r d^2) for the Q, K, V, output and MLP matrices and 4 T d for the
    attention scores and their weighted sum (a multiply-add counted as 2)."""
    per_token = 2 * (4 + 2 * mlp_ratio) * width**2 + 4 * tokens * width
    return float(layers * tokens * per_token)


TRAIN_FACTOR = 3
"""A training step or a Jacobian-vector product in forward or reverse mode costs about three
forward passes (the backward pass twice the forward)."""
