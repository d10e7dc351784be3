"""The paper preset measured before a GPU sees it: for every rule the cluster plan sizes, its
largest paper item (the one the plan's request is made for), run through the function its chunk
job calls, each in its own process, with wall time, CPU time, peak resident memory and peak GPU
memory beside the cost model's prediction for the same item (`Sweep.work`: FLOP, sequential
steps, memory).

On the CPU (`make bench-paper`) an item that the CPU cannot run in minutes, or whose memory is
not bounded by design, runs in a stated reduced form (`REDUCED`: fewer blocks, samples,
sequences or steps; a synthetic stand-in for CIFAR-100); its paper-scale time is extrapolated
from the measured one by the cost model's ratio of the two items' work, and its paper-scale
memory is the model's prediction for the paper item, scaled by measured/predicted of the
reduced one where that exceeds 1. `--full` runs the paper items themselves (bench/gpu_smoke.sh,
on a GPU node). `--json` writes the records that cluster_plan.py turns into the SLURM memory
requests; `--results` appends the table to bench/RESULTS.md.

    .venv/bin/python bench/paper_scale.py --json bench/paper_scale.json --results bench/RESULTS.md
    .venv/bin/python bench/paper_scale.py --configfile tests/configs/tiny.yaml   # seconds
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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from transformer_stability.apjn.measured_tables import (
    curve_table,
    end_to_end_table,
    finite_n_table,
    width_table,
)
from transformer_stability.apjn.train_items import TrainData
from transformer_stability.apjn.training import train_table
from transformer_stability.cluster_plan import duration, plan, preset_config
from transformer_stability.counting.training_tables import training_table
from transformer_stability.device import resolve_device
from transformer_stability.numerics.gpt2_tables import attention_rows, group_tables, sources_rows
from transformer_stability.registry import SWEEPS, sweep_study
from transformer_stability.work import flop_equivalent, gpu_bytes, host_bytes

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20

# the function each rule's chunk job calls on one item (workflow/scripts/<rule>.py)
TABLE_OF: dict[str, Callable[[Any, torch.device], Any]] = {
    "apjn_curves": curve_table,
    "apjn_width": width_table,
    "apjn_end_to_end": end_to_end_table,
    "apjn_finite_n": finite_n_table,
    "apjn_train": lambda item, device: train_table(item, device, None),
    "numerics_gpt2": group_tables,
    "numerics_sources": sources_rows,
    "numerics_attention": attention_rows,
    "counting_training": training_table,
}


def _fewer_blocks(spec, chunk_blocks: int):
    """One piece and one block more: both pieces built, rebuilt and freed as at full depth."""
    return spec.with_(depth=min(spec.depth, chunk_blocks + 1))


def _curve(item, images: int, probes: int | None = None):
    settings = item.settings
    settings = replace(settings, probes=probes or settings.probes)
    spec = _fewer_blocks(item.spec, settings.chunk_blocks)
    source = replace(item.images, count=min(item.images.count, images)) if item.images else None
    return replace(item, spec=spec, settings=settings, images=source)


def _gpt2(item, layers: int, sequences: int):
    """The same width, heads and sequence length, `layers` blocks, `sequences` sequences."""
    _, width, heads = item.spec.shape()
    spec = replace(
        item.spec, size=f"{item.spec.size}-{layers}layers", layers=layers, width=width, heads=heads
    )
    inputs = replace(item.inputs, sequences=min(item.inputs.sequences, sequences))
    return replace(item, spec=spec, inputs=inputs)


def _train(item):
    """Two steps of a batch of 16 on textures at the model's side (CIFAR-100 stays off the
    machine): the memory of the paper's batch is the model's prediction."""
    data = TrainData("textures", 10, 4, 2, None, item.data.img_size, item.data.seed)
    schedule = replace(item.schedule, steps=2, batch_size=min(16, item.schedule.batch_size))
    return replace(item, data=data, schedule=schedule, segments=1)


# rule -> (reduced item, what was reduced); the paper items the CPU cannot run in minutes
REDUCED: dict[str, tuple[Callable[[Any], Any], str]] = {
    "apjn_curves": (lambda i: _curve(i, images=3), "chunk_blocks + 1 blocks, 3 images"),
    "apjn_width": (
        lambda i: replace(i, curve=_curve(i.curve, images=1, probes=2)),
        "chunk_blocks + 1 blocks, 1 image, 2 probes",
    ),
    "apjn_end_to_end": (
        lambda i: replace(
            i,
            spec=_fewer_blocks(i.spec, i.settings.chunk_blocks),
            depths=tuple(d for d in i.depths if d <= i.settings.chunk_blocks + 1),
        ),
        "chunk_blocks + 1 blocks",
    ),
    "apjn_finite_n": (
        lambda i: replace(i, spec=_fewer_blocks(i.spec, i.chunk_blocks)),
        "chunk_blocks + 1 blocks",
    ),
    "apjn_train": (_train, "2 steps of batch 16, textures for CIFAR-100, one segment"),
    "numerics_gpt2": (lambda i: _gpt2(i, 2, i.inputs.batch), "2 blocks, one batch"),
    "numerics_sources": (lambda i: _gpt2(i, 2, i.inputs.sequences), "2 blocks"),
    "numerics_attention": (lambda i: _gpt2(i, 2, i.inputs.batch), "2 blocks, one batch"),
    "counting_training": (lambda i: replace(i, steps=20), "20 steps"),
}


def load_config(configfile: Path) -> dict[str, Any]:
    """config.yaml with the preset merged over it, validated (defaults filled)."""
    return preset_config(("config.yaml", str(configfile)))


def offline(config: dict[str, Any]) -> dict[str, Any]:
    """The config without the models that need a hub or a local checkpoint."""
    config = copy.deepcopy(config)
    models = config["numerics"]["models"]
    config["numerics"]["models"] = [m for m in models if m["weights"] == "random"]
    return config


def rule_items(config: dict[str, Any]) -> list[tuple[str, Any, Callable]]:
    """(rule, item, table function) for every planned rule with a table function: the item the
    cluster plan sizes the rule's request by."""
    config = offline(config)
    largest = {p.rule: p.largest for p in plan(config)}
    out = []
    for rule, table_of in TABLE_OF.items():
        if rule not in largest:
            continue
        sweep = SWEEPS[rule]
        study = sweep_study(sweep).name
        items = {item.id: item for item in sweep.items(config[study], config["seed"])}
        out.append((rule, items[largest[rule]], table_of))
    return out


def measured_form(rule: str, item: Any, full: bool) -> tuple[Any, str]:
    if full or rule not in REDUCED:
        return item, "paper item"
    reduce, what = REDUCED[rule]
    return reduce(item), what


def run(rule: str, item: Any, table_of: Callable, device: torch.device) -> dict[str, Any]:
    """Time one item (after a warm-up of CUDA's context) and read its peak memories."""
    if device.type == "cuda":
        torch.zeros(1, device=device)  # CUDA context outside the timings
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start, cpu = time.perf_counter(), time.process_time()
    table_of(item, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = torch.cuda.max_memory_allocated() / MIB if device.type == "cuda" else None
    host = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    return {"wall_s": seconds, "cpu_s": cpu, "host_mib": host, "gpu_mib": peak}


def record(rule: str, paper: Any, measured: Any, form: str, run: dict[str, Any]) -> dict:
    """The measurement beside the model: predicted peaks of the measured form and of the paper
    item, and the paper item's time extrapolated by the ratio of their work."""
    work = SWEEPS[rule].work
    small, big = work(measured), work(paper)
    scale = flop_equivalent(big) / flop_equivalent(small) if flop_equivalent(small) else 1.0
    return {
        "rule": rule,
        "item": paper.id,
        "form": form,
        **run,
        "predicted_host_mib": host_bytes(small) / MIB,
        "predicted_gpu_mib": gpu_bytes(small) / MIB,
        "paper_host_mib": host_bytes(big) / MIB,
        "paper_gpu_mib": gpu_bytes(big) / MIB,
        "work_ratio": scale,
        "paper_wall_s": run["wall_s"] * scale,
    }


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
    return json.loads(child.stdout.splitlines()[-1])


def _mib(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f} MiB"


def table_row(row: dict[str, Any]) -> str:
    if "timeout" in row:
        return f"| `{row['rule']}` | `{row['item']}` | over {row['timeout']:.0f} s (stopped) |"
    gpu = f" / {_mib(row['gpu_mib'])} (predicted {_mib(row['predicted_gpu_mib'])})"
    return (
        f"| `{row['rule']}` | `{row['item']}` | {row['form']} | {row['wall_s']:.1f} s "
        f"({row['cpu_s']:.1f} CPU s) | {_mib(row['host_mib'])} (predicted "
        f"{_mib(row['predicted_host_mib'])}){gpu if row['gpu_mib'] is not None else ''} | "
        f"x {row['work_ratio']:.3g}: {duration(row['paper_wall_s'])} | "
        f"{_mib(row['paper_host_mib'])} |"
    )


def _processor() -> str:
    """The CPU's model name (Linux), else what platform knows."""
    cpuinfo = Path("/proc/cpuinfo")
    names = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
    return names[0].split(":", 1)[1].strip() if names else platform.processor()


def results_section(rows: list[dict[str, Any]], device: torch.device, configfile: Path) -> str:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _processor()
    lines = [
        "",
        f"## Paper items measured (bench/paper_scale.py, {configfile.name}, {device.type})",
        "",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Device: {device} ({name}), "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__}.",
        "- Measured: the item in the form named, in its own process (peak resident memory of "
        "that process; peak GPU memory allocated by torch). Paper time: the measured time "
        "times the ratio of the cost model's work (FLOP, sequential steps) of the paper item "
        "to that of the measured form, fixed costs included. Paper memory: the cost model's "
        "host peak of the paper item (work.host_bytes).",
        "",
        "| rule | paper item | measured form | time | peak memory, measured (predicted) | "
        "paper time (work ratio) | paper host memory, predicted |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    return "\n".join([*lines, *(table_row(row) for row in rows)]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", type=Path, default=ROOT / "config/paper.yaml")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--full", action="store_true", help="the paper items, none reduced")
    parser.add_argument("--rules", nargs="*", help="only these rules (--json: their records)")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--results", type=Path, help="append a section to this markdown file")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per item")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: run that item
    args = parser.parse_args()
    device = resolve_device(args.device)
    items = rule_items(load_config(args.configfile))
    items = [entry for entry in items if not args.rules or entry[0] in args.rules]
    if args.one is not None:
        rule, item, table_of = items[args.one]
        measured, form = measured_form(rule, item, args.full)
        print(json.dumps(record(rule, item, measured, form, run(rule, measured, table_of, device))))
        return
    rows = []
    for index, (rule, item, _) in enumerate(items):
        row = {"rule": rule, "item": item.id} | run_apart(index, args)
        print(table_row(row), flush=True)
        rows.append(row)
    if args.json:
        kept = json.loads(args.json.read_text()) if args.rules and args.json.exists() else []
        merged = {row["rule"]: row for row in [*kept, *rows]}  # a rule measured again: new row
        args.json.write_text(json.dumps(list(merged.values()), indent=1) + "\n")
    if args.results:
        with open(args.results, "a") as handle:
            handle.write(results_section(rows, device, args.configfile))


if __name__ == "__main__":
    main()
