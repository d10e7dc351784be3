"""Does the minimax polish (counting/polish.py) take projected Adam's regression runs to
exactness at bounds near the lower bound? A bench study of Study C's trained B_min, not part of
the pipeline: every (B / lower bound, seed) of each length is trained as the pipeline trains it
(`train_runs`, one batch per length) with the polish on, and each run's largest error is read
before the polish (`adam_max_error`) and after it.

    .venv/bin/python bench/counting_polish.py --lengths 16 64 --ratios 1.0 1.02 1.1 --seeds 8
"""

from __future__ import annotations

import argparse
import os
import time

# one BLAS thread, as Snakemake's jobs run: scipy's OpenBLAS otherwise keeps a second thread
# busy-waiting through SLSQP, which inflated the polish's CPU time by up to 40 %
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread setting, which numpy reads on import)
import torch

from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.theory import HALF, lower_bound
from transformer_stability.counting.training import TrainConfig, train_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.02, 1.1])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6000, help="Adam steps before the polish")
    parser.add_argument("--iterations", type=int, default=200, help="SLSQP steps per solve")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig(steps=args.steps, polish_iterations=args.iterations)
    print(
        "| L | B / lower bound | exact seeds, Adam | exact seeds, polished | median largest "
        "error, Adam -> polished | CPU s (all ratios) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for length in args.lengths:
        spec = ModelSpec("post_learned", "regression", 8, length)
        scale = lower_bound(spec.placement, length, spec.d)
        runs = [(r, s) for r in args.ratios for s in range(args.seeds)]
        start = time.process_time()
        metrics, _ = train_runs(spec, [r * scale for r, _ in runs], [s for _, s in runs], cfg)
        cpu = time.process_time() - start
        for ratio in args.ratios:
            rows = np.array([r == ratio for r, _ in runs])
            before, after = metrics["adam_max_error"][rows], metrics["max_error"][rows]
            print(
                f"| {length} | {ratio} | {(before < HALF).sum()} / {rows.sum()} | "
                f"{(after < HALF).sum()} / {rows.sum()} | {np.median(before):.3f} -> "
                f"{np.median(after):.3f} | {cpu:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
