"""What one item of Study C's training sweep costs (`Sweep.work`): the cluster plan's time
requests and the chunks' balance come from it; no table's value does (code_inputs leaves cost
models out of the jobs' code inputs)."""

from __future__ import annotations

from transformer_stability.counting.items import TrainItem
from transformer_stability.work import TRAIN_FACTOR, Work, dtype_bytes


def train_work(item: TrainItem) -> Work:
    """One full-batch training of every run (grid bounds x seeds, plus the unconstrained
    seeds): sequential steps bound it. Per training point and run a forward costs about 20 d
    (scores of the two token kinds, softmax weights, norm) plus 2 K d for a K-way read-out;
    memory: about as many numbers, kept for the backward pass, in the item's dtype."""
    runs = len(item.seeds) * ((len(item.grid.ratios) if item.grid else 0) + item.unconstrained)
    full = (item.length + 1) * (item.length + 2) // 2
    points = 2 * (item.length + 1) if item.edges_only else full
    classes = item.length + 1 if item.readout == "classification" else 1
    per_step = runs * points * (20 + 2 * classes) * item.width
    what = f"{runs} runs x {item.steps} steps, {points} points, {item.readout}"
    memory = dtype_bytes(item.dtype) * per_step
    return Work(TRAIN_FACTOR * per_step * item.steps, item.steps, what, memory)
