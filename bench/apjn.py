"""Benchmark: the all-blocks backward APJN estimator against the naive per-pair loop.

Both use the same probes and return the same numbers (checked here); the estimator needs one
forward and one reverse pass per probe for all source blocks, the loop one forward + VJP per
source block (O(L^2) block evaluations). Achieved FLOP/s is compared with a large matmul.

    .venv/bin/python bench/apjn.py [--depths 32 64] [--width 384] [--device auto]

Prints a Markdown table to paste into bench/RESULTS.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from functools import partial

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_stability.apjn.inputs import equiangular_tokens
from transformer_stability.apjn.measure import (
    backward_apjn,
    backward_apjn_per_pair,
    block_states,
    gaussian_probes,
    model_blocks,
)
from transformer_stability.apjn.models import build_vit
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.device import resolve_device


def _timed(fn: Callable[[], torch.Tensor], device: torch.device, repeats: int) -> float:
    """Best wall time of `repeats` calls (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def _estimator_flops(blocks: list, x: torch.Tensor) -> int:
    """FLOPs of one all-blocks estimate: the counted forward over the stacked sample-probe
    batch x, times 2 (the reverse pass asks only for activation cotangents, no weight
    gradients, so it costs about one more forward)."""
    with FlopCounterMode(display=False) as counter:
        block_states(blocks, x)
    return 2 * counter.get_total_flops()


def matmul_flops_per_second(device: torch.device, dtype: torch.dtype, n: int = 2048) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return 2 * n**3 / _timed(lambda: a @ b, device, repeats=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--img-size", type=int, default=128)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    device, dtype = resolve_device(args.device), torch.float32
    peak = matmul_flops_per_second(device, dtype)
    print(
        f"machine: {platform.processor() or platform.machine()}, torch threads "
        f"{torch.get_num_threads()}, device {device}; matmul 2048^3: {peak / 1e9:.1f} GFLOP/s\n"
    )
    print(
        "| depth | all-blocks (s) | per-pair loop (s) | speed-up | all-blocks GFLOP/s "
        "| share of matmul | max rel. diff |"
    )
    print("|---|---|---|---|---|---|---|")
    for depth in args.depths:
        spec = ViTSpec(
            width=args.width,
            heads=args.heads,
            depth=depth,
            img_size=args.img_size,
            patch_size=16,
            norm="derf",
            alpha=1.0,
        )
        blocks = model_blocks(build_vit(spec, seed=0).to(device, dtype))
        generator = torch.Generator().manual_seed(0)
        x0 = torch.stack(
            [
                equiangular_tokens(spec.n_tokens, spec.width, 1.0, 0.2, generator)
                for _ in range(args.samples)
            ]
        ).to(device, dtype)
        probes = gaussian_probes(x0, args.probes, generator)

        fast = partial(backward_apjn, blocks, x0, probes, args.samples * args.probes)
        slow = partial(backward_apjn_per_pair, blocks, x0, probes)
        t_fast = _timed(fast, device, args.repeats)
        t_slow = _timed(slow, device, repeats=1)
        diff = float(((fast() - slow()).abs() / slow().abs()).max())
        rate = _estimator_flops(blocks, x0.repeat_interleave(args.probes, 0)) / t_fast
        print(
            f"| {depth} | {t_fast:.3f} | {t_slow:.2f} | {t_slow / t_fast:.1f}x "
            f"| {rate / 1e9:.1f} | {rate / peak:.0%} | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
