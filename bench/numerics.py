"""Benchmark: one float64 reference forward and one test forward per format, GPT-2 shapes.

A Study N item (one model, one alpha, one storage group) runs one float64 reference and one
test run per format of the group through all 2L residual adds; this times those forwards (best
of `--repeats`, after a warm-up) at the default shape (gpt2, T = 128, 4 sequences) and at the
paper's sequence length (gpt2, T = 1024, one sequence per forward; the paper preset runs 20).

    .venv/bin/python bench/numerics.py [--device auto] [--precisions fp32 bf16 fp16 m16 m10]

Prints a Markdown table to paste into bench/RESULTS.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from transformer_stability.device import resolve_device
from transformer_stability.numerics.gpt2 import (
    build_gpt2,
    embed,
    residual_stream,
    stored_blocks,
)
from transformer_stability.numerics.rounding import Precision
from transformer_stability.numerics.spec import GPT2Spec

SHAPES = {"default": (128, 4), "paper": (1024, 1)}  # (T, sequences per forward)


def _forward(blocks, h0: torch.Tensor, precision: Precision, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in residual_stream(blocks, h0, precision):
        pass
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def time_format(model, ids, name: str, device: torch.device, repeats: int) -> tuple[float, float]:
    """Best (reference, test) forward times for one format."""
    precision = Precision.parse(name)
    reference = Precision.parse("fp64")
    test_blocks = stored_blocks(model, precision, 1.0, device)
    ref_blocks = [block.cast(reference) for block in test_blocks]
    with torch.no_grad():
        h0 = precision.store(embed(model, ids).float())
        times = [
            (
                _forward(ref_blocks, h0.double(), reference, device),
                _forward(test_blocks, h0, precision, device),
            )
            for _ in range(repeats + 1)
        ][1:]
    return min(t[0] for t in times), min(t[1] for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16", "m16", "m10"])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    device = resolve_device(args.device)
    model = build_gpt2(GPT2Spec(), torch.Generator().manual_seed(0)).to(device)
    print(
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, device {device}\n"
    )
    print("| shape | format | float64 reference | test forward |")
    print("| --- | --- | --- | --- |")
    for shape, (length, sequences) in SHAPES.items():
        ids = torch.randint(
            model.config.vocab_size, (sequences, length), generator=torch.Generator().manual_seed(1)
        ).to(device)
        for name in args.precisions:
            ref, test = time_format(model, ids, name, device, args.repeats)
            label = f"{shape} (T = {length}, {sequences} seq)"
            print(f"| {label} | {name} | {ref:.2f} s | {test:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
