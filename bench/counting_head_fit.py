"""Does the head refit (counting/head_fit.py) make the trained classifiers exact where Adam's
heads miss? A bench study of Study C's classification runs, not part of the pipeline: each
length's seeds are trained at one bound as the pipeline trains them (default config: 5000 steps
on the grid's edges, logit factor 30 -> 3000 / B^2), and each run is judged on the whole grid
with Adam's head and with the refitted one, with the refit's CPU time.

    .venv/bin/python bench/counting_head_fit.py --lengths 64 128 --bound 0.5 --seeds 8
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as Snakemake's jobs run (counting_polish.py)

import numpy as np  # noqa: E402  (after the thread setting, which numpy reads on import)
import torch

from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.head_fit import fit_heads
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.training import (
    TrainConfig,
    evaluate,
    float32_accuracy,
    train_runs,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--bound", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig(steps=args.steps, logit_scale=30.0, final_logit_scale=3000.0, edges_only=True)
    print(
        "| L | exact seeds, Adam | exact seeds, refit | exact in float32, refit | Adam's logit "
        "margins (min, max) | refit's relative margins (min, max) | CPU s: Adam, refit |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for length in args.lengths:
        spec = ModelSpec("post_learned", "classification", 8, length)
        bounds = [args.bound] * args.seeds
        start = time.process_time()
        adam, params = train_runs(spec, bounds, list(range(args.seeds)), cfg)
        trained = time.process_time() - start
        fitted = fit_heads(spec, params, torch.tensor(bounds, dtype=torch.float64))
        refit = time.process_time() - start - trained
        c, m = torch_grid(length)
        after = evaluate(spec, fitted, c, m)
        single = float32_accuracy(spec, fitted, c, m)
        print(
            f"| {length} | {(adam['accuracy'] >= 1).sum()} / {args.seeds} | "
            f"{(after['accuracy'] >= 1).sum()} / {args.seeds} | {(single >= 1).sum()} | "
            f"{adam['logit_margin'].min():.2g}, {adam['logit_margin'].max():.2g} | "
            f"{np.nanmin(after['relative_margin']):.2g}, "
            f"{np.nanmax(after['relative_margin']):.2g} | {trained:.0f}, {refit:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
