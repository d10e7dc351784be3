"""Throughput of the batched (B, seed) training sweep against the same runs trained one by one.

Usage: python bench/counting.py [--length 32] [--runs 16] [--steps 300] [--readout regression]
Prints one line per mode (runs x steps per second) and the speed-up; both modes train exactly
the same runs (same bounds, seeds and schedule) and must end at the same accuracies.
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import numpy as np
import torch

from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.training import TrainConfig, train_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--readout", default="regression")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = ModelSpec("post_learned", args.readout, 8, args.length)
    bounds = list(np.geomspace(1, 16, args.runs // 2)) * 2
    bounds[-1] = math.inf
    seeds = [i % 2 for i in range(args.runs)]
    cfg = TrainConfig(steps=args.steps, lr=0.01)

    start = time.perf_counter()
    batched, _ = train_runs(spec, bounds, seeds, cfg)
    t_batched = time.perf_counter() - start

    start = time.perf_counter()
    alone = [
        train_runs(spec, [b], [s], cfg)[0]["accuracy"][0]
        for b, s in zip(bounds, seeds, strict=True)
    ]
    t_loop = time.perf_counter() - start

    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"threads {args.threads}")  # fmt: skip
    print(f"{args.readout}, L = {args.length}, {args.runs} runs x {args.steps} steps")
    rate = args.runs * args.steps
    print(f"batched:    {t_batched:8.2f} s  {rate / t_batched:9.0f} run-steps/s")
    print(f"one by one: {t_loop:8.2f} s  {rate / t_loop:9.0f} run-steps/s")
    print(f"speed-up:   {t_loop / t_batched:8.1f} x")
    gap = np.abs(np.array(alone) - batched["accuracy"]).max()
    print(f"max accuracy difference batched vs alone: {gap:.2e}")


if __name__ == "__main__":
    main()
