"""What one item of Study C's training sweep costs (`Sweep.work`): the cluster plan's time
requests and the chunks' balance come from it; no table's value does (code_inputs leaves cost
models out of the jobs' code inputs)."""

from __future__ import annotations

from transformer_stability.counting.items import TrainItem
from transformer_stability.work import TRAIN_FACTOR, Work, dtype_bytes

POLISH_ITERATION_SECONDS = (5e-3, 3.3e-6)
"""One iteration of the minimax polish (an SLSQP step on a run's working set: the errors of
about 2 L points and their exact Jacobian, each point a forward over L tokens, in float64 on the
host whatever the device) takes about a + b L^2 seconds: 9, 13, 58 and 219 ms were measured at
L = 16, 64, 128 and 256 (one thread of the 2-core reference VM, bench/RESULTS.md)."""

HEAD_FIT_SECONDS = 7e-7
"""The head refit of one classification run (head_fit.py: the grid's representation, then two
or three LPs over its ~L^2 (point, neighbour) margins) takes about this x L^3 seconds: 0.19 s
at L = 64 and 1.4 s at L = 128 (8 runs of the default model at B = 0.5, one thread of the
2-core reference VM, bench/RESULTS.md)."""


def _grid_runs(item: TrainItem) -> tuple[int, int]:
    """(constrained runs at most, the largest round's): the first round's ratios with every
    seed, then one ratio per later round of the B_min search."""
    if item.grid is None:
        return 0, 0
    first = len(item.seeds) * len(item.grid.ratios)
    return first + len(item.seeds) * (item.grid.rounds - 1), first


def host_seconds(item: TrainItem) -> float:
    """The host's work after Adam, run after run: the polish of the item's constrained
    regression runs (each run's first working-set solve at its iteration limit: the runs
    measured stopped there or before, and needed no second round), or the head refit of its
    constrained classification runs."""
    if item.grid is None:
        return 0.0
    if item.readout == "classification":
        return item.head_fit * _grid_runs(item)[0] * HEAD_FIT_SECONDS * item.length**3
    if not item.polish_iterations:
        return 0.0
    fixed, quadratic = POLISH_ITERATION_SECONDS
    return _grid_runs(item)[0] * item.polish_iterations * (fixed + quadratic * item.length**2)


def train_work(item: TrainItem) -> Work:
    """Full-batch trainings: every round of the bound grid (at most the search's rounds) and the
    unconstrained seeds, one after another, then the polish or head refit of the constrained runs:
    sequential steps bound it. Per training point and run a forward costs about 20 d (scores of
    the two token kinds, softmax weights, norm) plus 2 K d for a K-way read-out; memory: about
    as many numbers for the largest round, kept for the backward pass, in the item's dtype."""
    grid, largest = _grid_runs(item)
    free = len(item.seeds) * item.unconstrained
    full = (item.length + 1) * (item.length + 2) // 2
    points = 2 * (item.length + 1) if item.edges_only else full
    classes = item.length + 1 if item.readout == "classification" else 1
    per_run_step = points * (20 + 2 * classes) * item.width
    run_steps = grid * item.steps + free * item.unconstrained_steps
    rounds = item.grid.rounds if item.grid else 0
    joined = item.joins_first_round
    sequential = (
        rounds * item.steps + (item.unconstrained and not joined) * item.unconstrained_steps
    )
    host = host_seconds(item)
    what = f"{grid + free} runs, {sequential} steps, {points} points, {item.readout}"
    after = "polish" if item.readout == "regression" else "head refit"
    what += f", {after} {host / 60:.0f} min on the host" if host else ""
    memory = (
        dtype_bytes(item.dtype) * (largest + free if joined else max(largest, free)) * per_run_step
    )
    return Work(TRAIN_FACTOR * per_run_step * run_steps, sequential, what, memory, host)
