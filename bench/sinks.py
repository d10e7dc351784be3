"""Which settings grow attention sinks on the Bigram-Backcopy task (claim N.9), by seed.

Usage: python bench/sinks.py [--seeds 0 1] [--lr 0.01] [--steps 1500] [--layers 2] [--heads 4]
Trains the config's `numerics.sinks` model with the given overrides once per seed (one torch
thread) and prints, per seed, the CPU time, the largest mean first-token weight over the heads
at step 0 and at the end, the number of heads at >= 1/2, and the sink head's median tail mass.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import torch
import yaml

from transformer_stability.numerics.backcopy import sink_emergence

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--lr", type=float)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--layers", type=int)
    parser.add_argument("--heads", type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)
    sinks = copy.deepcopy(yaml.safe_load(CONFIG.read_text())["numerics"]["sinks"])
    if args.lr is not None:
        sinks["training"]["lr"] = args.lr
    if args.steps is not None:
        fractions = (1 / 60, 1 / 30, 1 / 15, 2 / 15, 4 / 15, 7 / 15, 2 / 3, 1)
        sinks["checkpoints"] = sorted({max(1, round(args.steps * f)) for f in fractions})
    for key in ("layers", "heads"):
        if getattr(args, key) is not None:
            sinks["model"][key] = getattr(args, key)
    for seed in args.seeds:
        start = time.process_time()
        heads, _ = sink_emergence(sinks, seed)
        cpu = time.process_time() - start
        means = heads.groupby(["step", "block", "head"]).first_token.mean()
        tails = heads.groupby(["step", "block", "head"]).tail_mass.median()
        last = int(heads.step.max())
        sink = means[last].idxmax()
        print(
            f"seed {seed}: {cpu:.0f} CPU s; largest first-token weight {means[0].max():.3f} at "
            f"step 0, {means[last].max():.3f} at step {last}; {(means[last] >= 0.5).sum()} of "
            f"{len(means[last])} heads >= 0.5; sink head {sink[0]}.{sink[1]}: tail "
            f"{tails[0][sink]:.2g} -> "
            f"{tails[last][sink]:.2g}"
        )


if __name__ == "__main__":
    main()
