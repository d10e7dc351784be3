"""One paper-scale item of each GPU rule, timed, with its peak GPU and host memory: A, one ViT-B
depth-64 APJN measurement (apjn_curves) and the widest model of the width scan (apjn_width); N,
one (model, α, storage) group at T = 1024 of each random GPT-2 size (numerics_gpt2); C, one
float64 training length (counting_training). Run through bench/gpu_smoke.sh on a GPU node;
`--device cpu --configfile tests/configs/tiny.yaml` runs the same code path on a laptop in
seconds (the tests do).

The items are taken from the configured sweeps exactly as the workflow enumerates them, and run
through the functions the chunk jobs call. Each item runs in its own process, so its peak host
memory is its own and an item over `--timeout` is recorded as such instead of stopping the rest.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
import yaml

from transformer_stability.apjn.items import curve_items, width_items
from transformer_stability.apjn.measured_tables import curve_table, width_table
from transformer_stability.config import validate_config
from transformer_stability.counting.items import train_items
from transformer_stability.counting.training_tables import training_table
from transformer_stability.device import resolve_device
from transformer_stability.numerics.gpt2_tables import group_tables
from transformer_stability.numerics.items import group_items

ROOT = Path(__file__).resolve().parents[1]


def load_config(configfile: Path) -> dict[str, Any]:
    """config.yaml with the preset merged over it, validated (defaults filled)."""

    def merge(base: dict, over: dict) -> dict:
        out = copy.deepcopy(base)
        for key, value in over.items():
            both = isinstance(value, dict) and isinstance(out.get(key), dict)
            out[key] = merge(out[key], value) if both else copy.deepcopy(value)
        return out

    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    config = merge(base, yaml.safe_load(configfile.read_text()) or {})
    return validate_config(config, ROOT / "workflow/schemas/config.schema.yaml")


def pick(items: list, wanted: str):
    """The item called `wanted`, else the first one (the tiny config has other names)."""
    return next((item for item in items if item.id == wanted), items[0])


def smoke_items(config: dict[str, Any], length: int) -> list[tuple[str, Any, Callable]]:
    seed = config["seed"]
    numerics = copy.deepcopy(config["numerics"])
    # random weights: the smoke run needs no hub and no local checkpoint
    numerics["models"] = [m for m in numerics["models"] if m["weights"] == "random"]
    groups = group_items(numerics, seed)
    counting = config["counting"]
    regression = [i for i in train_items(counting, seed) if i.readout == "regression"]
    widest = max(width_items(config["apjn"], seed), key=lambda item: item.curve.spec.width)
    return [
        ("apjn_curves", pick(curve_items(config["apjn"], seed), "ln_equiangular"), curve_table),
        *[
            ("numerics_gpt2", pick(groups, f"random-{m['size']}_a1_fp32"), group_tables)
            for m in numerics["models"]
        ],
        ("counting_training", pick(regression, f"regression_L{length}"), training_table),
        ("apjn_width", widest, width_table),  # the largest model last: it may time out
    ]


def run(name: str, item: Any, table_of: Callable, device: torch.device) -> dict[str, Any]:
    """Time one item (after a warm-up of CUDA's context) and read its peak GPU and host memory."""
    if device.type == "cuda":
        torch.zeros(1, device=device)  # CUDA context outside the timings
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    table_of(item, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else float("nan")
    host = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    print(
        f"{name} {item.id}: {seconds:.1f} s, peak GPU memory {peak:.0f} MiB, "
        f"peak host memory {host:.0f} MiB",
        flush=True,
    )
    return {"rule": name, "item": item.id, "seconds": seconds, "peak_mib": peak, "host_mib": host}


def run_apart(index: int, args: argparse.Namespace) -> dict[str, Any]:
    """Item `index` in a child process; a child over the timeout is killed and recorded so."""
    command = [sys.executable, __file__, "--one", str(index), *sys.argv[1:]]
    try:
        child = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"item {index}: over {args.timeout:.0f} s, stopped", flush=True)
        return {"index": index, "timeout": args.timeout}
    if child.returncode != 0:
        raise SystemExit(f"item {index} failed (exit {child.returncode})")
    *said, record = child.stdout.splitlines()  # the child's lines, then its JSON record
    print(*said, sep="\n", flush=True)
    return json.loads(record)


def table_row(row: dict[str, Any], names: list[tuple[str, str]]) -> str:
    rule, item = names[row["index"]]
    if "timeout" in row:
        return f"| `{rule}` | `{item}` | over {row['timeout']:.0f} s (stopped) | | |"
    return (
        f"| `{rule}` | `{item}` | {row['seconds']:.1f} s | {row['peak_mib']:.0f} MiB "
        f"| {row['host_mib']:.0f} MiB |"
    )


def results_section(
    rows: list[dict[str, Any]], names: list[tuple[str, str]], device: torch.device, configfile: Path
) -> str:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    lines = [
        "",
        f"## GPU smoke: one paper-scale item per GPU rule (bench/gpu_smoke.sh, {configfile.name})",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Device: {device} ({name}), "
        f"torch {torch.__version__}, CUDA {torch.version.cuda}.",
        "",
        "| rule | item | time | peak GPU memory | peak host memory |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [table_row(row, names) for row in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", type=Path, default=ROOT / "config/paper.yaml")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--length", type=int, default=128, help="Study C regression length")
    parser.add_argument(
        "--results", type=Path, help="append a section to this markdown file (CUDA runs only)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per item")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: run that item
    args = parser.parse_args()
    device = resolve_device(args.device)
    items = smoke_items(load_config(args.configfile), args.length)
    if args.one is not None:
        name, item, table_of = items[args.one]
        print(json.dumps({"index": args.one, **run(name, item, table_of, device)}))
        return
    rows = [run_apart(index, args) for index in range(len(items))]
    if args.results and device.type == "cuda":
        names = [(name, item.id) for name, item, _ in items]
        with open(args.results, "a") as handle:
            handle.write(results_section(rows, names, device, args.configfile))


if __name__ == "__main__":
    main()
