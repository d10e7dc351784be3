"""What one iteration of Study C's minimax polish costs against L, for the cluster plan's cost
model (`counting.costs.POLISH_ITERATION_SECONDS`): two runs of the default model are trained by
projected Adam alone, then again with the polish, and the polish's CPU seconds are divided by
the SLSQP iterations it took (counted by wrapping the solver the polish calls).

    .venv/bin/python bench/counting_polish_cost.py --lengths 16 64 128 256
"""

from __future__ import annotations

import argparse
import time

import torch

from transformer_stability.counting import polish
from transformer_stability.counting.costs import POLISH_ITERATION_SECONDS
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import TrainConfig, train_runs

RATIOS = (1.05, 1.2)  # B / lower bound: one run near the bound, one above it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 128, 256])
    parser.add_argument("--steps", type=int, default=1500, help="Adam steps before the polish")
    parser.add_argument("--iterations", type=int, default=200, help="SLSQP steps per solve")
    args = parser.parse_args()
    torch.set_num_threads(1)
    solves, solver = [0, 0], polish.minimize

    def counted(*positional, **keywords):
        result = solver(*positional, **keywords)
        solves[0], solves[1] = solves[0] + 1, solves[1] + result.nit
        return result

    polish.minimize = counted
    fixed, quadratic = POLISH_ITERATION_SECONDS
    print("| L | Adam CPU s | polish CPU s | solves | iterations | ms per iteration | model |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for length in args.lengths:
        spec = ModelSpec("post_learned", "regression", 8, length)
        bounds = [r * lower_bound(spec.placement, length, spec.d) for r in RATIOS]
        cpu = []
        for iterations in (0, args.iterations):
            solves[:] = [0, 0]
            start = time.process_time()
            cfg = TrainConfig(steps=args.steps, polish_iterations=iterations)
            train_runs(spec, bounds, list(range(len(bounds))), cfg)
            cpu.append(time.process_time() - start)
        spent, (count, steps) = cpu[1] - cpu[0], solves
        print(
            f"| {length} | {cpu[0]:.1f} | {spent:.1f} | {count} | {steps} | "
            f"{1e3 * spent / max(steps, 1):.1f} | {1e3 * (fixed + quadratic * length**2):.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
