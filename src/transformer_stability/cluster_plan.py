"""The cluster plan: the SLURM time and memory requests of every sweep that declares its work
(`Sweep.work`), from the items of the sweep at the paper preset: time from the largest item's
arithmetic at a stated sustained rate and margin, memory from the cost model's peak, scaled up
where bench/paper_scale.py measured a rule's item above its prediction. The arithmetic is shown
once, in docs/cluster.md; the profile's `runtime:` and `mem_mb:` lines follow it:

    python -m transformer_stability.cluster_plan --write   # rewrite both
    python -m transformer_stability.cluster_plan           # print the table

tests/test_cluster.py checks that both files are current, that no planned job is over the time
limit (a sweep whose items would be is split into more, smaller items by its config) and that
every request holds its prediction.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from snakemake.utils import update_config

from transformer_stability.registry import SWEEPS, sweep_study, validate
from transformer_stability.sweeps import sweep_segments
from transformer_stability.work import (
    FLOP_PER_SECOND,
    GRANULE_MIN,
    HOST_OVERHEAD_BYTES,
    LIMIT_MIN,
    MARGIN,
    MEMORY_MARGIN,
    SECONDS_PER_STEP,
    STARTUP_SECONDS,
    Work,
    estimate_seconds,
    flop_equivalent,
    gpu_bytes,
    host_bytes,
    request_minutes,
)

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
DOCS = ROOT / "docs" / "cluster.md"
MEASURED = ROOT / "bench" / "paper_scale.json"  # written by bench/paper_scale.py --json
PRESET = ("config.yaml", "config/paper.yaml")

_BEGIN = "<!-- cluster plan: written by `python -m transformer_stability.cluster_plan --write` -->"
_END = "<!-- end of the cluster plan -->"


@dataclass(frozen=True)
class RulePlan:
    """One sweep's jobs at the preset: how many, the largest item's id and work, the request."""

    rule: str
    jobs: int
    largest: str
    work: Work
    total_seconds: float = 0.0  # every job's own estimate, summed
    host_bytes: float = 0.0  # the largest predicted host peak of its items
    gpu_bytes: float = 0.0  # the largest predicted GPU peak of its items
    measured: dict[str, Any] | None = None  # bench/paper_scale.py's record of the rule's item
    slowdown: float = 1.0  # the FLOP count's shortfall, measured (`_slowdowns`)

    @property
    def seconds(self) -> float:
        return estimate_seconds(self.work, self.slowdown)

    @property
    def minutes(self) -> int:
        return request_minutes(self.work, self.slowdown)

    @property
    def mem_mb(self) -> int:
        """The host-memory request: the predicted peak, times measured/predicted where the
        meter found more, times the margin, in whole GB."""
        scale = max(1.0, self.memory_ratio or 0.0)
        return 1000 * math.ceil(MEMORY_MARGIN * scale * self.host_bytes / 1e9)

    @property
    def memory_ratio(self) -> float | None:
        """Measured over predicted peak host memory of the form the meter ran."""
        if self.measured is None:
            return None
        return self.measured["host_mib"] / self.measured["predicted_host_mib"]


def measurements(path: Path = MEASURED) -> dict[str, dict[str, Any]]:
    """Per rule, bench/paper_scale.py's record of its item (none for an item it stopped)."""
    if not path.exists():
        return {}
    return {row["rule"]: row for row in json.loads(path.read_text()) if "host_mib" in row}


def preset_config(files: tuple[str, ...] = PRESET) -> dict[str, Any]:
    """The configuration of `files` merged in order, as Snakemake merges --configfile over the
    Snakefile's, with the schema's defaults filled in."""
    config: dict[str, Any] = {}
    for name in files:
        update_config(config, yaml.safe_load((ROOT / name).read_text()))
    return validate(config, ROOT / "workflow" / "schemas" / "config.schema.yaml")


def plan(
    config: dict[str, Any], measured: dict[str, dict[str, Any]] | None = None
) -> list[RulePlan]:
    """Every sweep with a declared work, of the studies the config runs, in registry order; one
    job per item (the cluster profile's set-scatter), or per item and segment for a sweep cut
    into segments (its earlier segments under the segment rule, each a share of the work).
    `measured`: the meter's record per rule (a segment rule's is its rule's)."""
    measured = measured or {}
    sweeps = []
    for sweep in SWEEPS.values():
        study = sweep_study(sweep).name
        if sweep.work is None or study not in config["studies"]:
            continue
        items = {item.id: item for item in sweep.items(config[study], config["seed"])}
        count = sweep_segments(list(items.values()))
        works = {key: sweep.work(item).part(count) for key, item in items.items()}
        # the meter's item: the most work on the device; the request's: the longest estimate
        # (the same item unless an item also computes on the host)
        metered = max(works, key=lambda key: flop_equivalent(works[key]))
        largest = max(works, key=lambda key: estimate_seconds(works[key]))
        sweeps.append((sweep, items, count, works, metered, largest))
    slowdowns = _slowdowns(
        {sweep.rule: sweep.work(items[metered]) for sweep, items, _, _, metered, _ in sweeps},
        {sweep.rule: metered for sweep, _, _, _, metered, _ in sweeps},
        measured,
    )
    plans = []
    for sweep, items, count, works, metered, largest in sweeps:
        slowdown = slowdowns.get(sweep.rule, 1.0)
        total = sum(estimate_seconds(work, slowdown) for work in works.values())
        fields = {
            "host_bytes": max(host_bytes(w) for w in works.values()),
            "gpu_bytes": max(gpu_bytes(w) for w in works.values()),
            "measured": _current(measured.get(sweep.rule), metered),
            "slowdown": slowdown,
        }
        plans.append(RulePlan(sweep.rule, len(items), largest, works[largest], total, **fields))
        if count > 1:
            jobs, rest = len(items) * (count - 1), total * (count - 1)
            plans.append(
                RulePlan(sweep.segment_rule, jobs, largest, works[largest], rest, **fields)
            )
    return plans


def _current(record: dict[str, Any] | None, metered: str) -> dict[str, Any] | None:
    """The meter's record if it measured the item the plan meters the rule by now (a changed
    preset makes it stale: `make bench-paper` measures again)."""
    return record if record is not None and record["item"] == metered else None


def _slowdowns(
    works: dict[str, Work], metered: dict[str, str], measured: dict[str, dict[str, Any]]
) -> dict[str, float]:
    """Per measured rule, the median measured rule's FLOP rate on the meter's machine over the
    rule's own, at least 1: how much work its FLOP count leaves out (emulated rounding, small
    kernels) next to the typical rule, whose rate the sustained GPU rate stands for."""
    rates = {
        rule: flop_equivalent(works[rule]) / record["work_ratio"] / record["wall_s"]
        for rule, record in measured.items()
        if rule in works and _current(record, metered[rule])
    }
    if not rates:
        return {}
    typical = statistics.median(rates.values())
    return {rule: max(1.0, typical / rate) for rule, rate in rates.items()}


def _gb(mib: float) -> str:
    return f"{mib * 2**20 / 1e9:.1f}"


def duration(seconds: float) -> str:
    """Seconds as the plan's tables write them: s, min, or h from two hours."""
    if seconds >= 7200:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def table(plans: list[RulePlan]) -> str:
    """The plan as a markdown table, with the rate and margin it assumes."""
    lines = [
        f"Each request is {STARTUP_SECONDS / 60:g} minutes of start-up plus the largest item's "
        f"work at {FLOP_PER_SECOND / 1e12:g} TFLOP/s, times the rule's slowdown, and "
        f"{SECONDS_PER_STEP * 1e3:g} ms per sequential step, plus what it computes on the host "
        f"(Study C's polish), times {MARGIN:g}, rounded up to "
        f"{GRANULE_MIN} minutes; none may exceed {LIMIT_MIN} minutes. The slowdown calibrates the "
        "FLOP count by `bench/paper_scale.py`: the median measured rule's FLOP rate on the "
        "meter's machine over this rule's, at least 1 (the work a count leaves out, like "
        "emulated rounding, next to the typical rule's).",
        "",
        "| rule | jobs | largest item | its work | FLOP | slowdown | estimate | requested |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in plans:
        steps = f" + {p.work.steps} steps" if p.work.steps else ""
        over = " (over the limit: to be split)" if p.minutes > LIMIT_MIN else ""
        lines.append(
            f"| `{p.rule}` | {p.jobs} | `{p.largest}` | {p.work.what} | "
            f"{p.work.flop:.2g}{steps} | {p.slowdown:.2g} | {duration(p.seconds)} | "
            f"{p.minutes} min{over} |"
        )
    estimated = sum(p.total_seconds for p in plans) / 3600
    requested = sum(p.jobs * p.minutes for p in plans) / 60
    lines += [
        "",
        f"In all, {sum(p.jobs for p in plans)} GPU jobs: {estimated:.0f} GPU hours estimated "
        f"(each job's own work), {requested:.0f} GPU hours requested.",
        "",
        "Each memory request (`mem_mb`, host memory) is the largest predicted host peak of the "
        "rule's items (the cost model: what an item holds at once on the CPU path, plus "
        f"{HOST_OVERHEAD_BYTES / 1e9:g} GB for the process), times measured/predicted where "
        "`bench/paper_scale.py` measured more than predicted for the rule's item (its run: "
        f"bench/RESULTS.md), times {MEMORY_MARGIN:g}, rounded up to whole GB.",
        "",
        "| rule | measured form (bench/paper_scale.py) | its peak, measured (predicted) | "
        "paper item: predicted host peak | requested | predicted GPU peak | paper item on "
        "the meter's CPU |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in plans:
        m = p.measured
        form = "not measured" if m is None else m["form"]
        peak = "" if m is None else (f"{_gb(m['host_mib'])} GB ({_gb(m['predicted_host_mib'])})")
        cpu = "" if m is None else duration(m["paper_wall_s"])
        lines.append(
            f"| `{p.rule}` | {form} | {peak} | {p.host_bytes / 1e9:.1f} GB | "
            f"{p.mem_mb // 1000} GB | {p.gpu_bytes / 1e9:.1f} GB | {cpu} |"
        )
    return "\n".join(lines) + "\n"


def with_table(docs: str, rendered: str) -> str:
    """`docs` with the text between the plan's markers replaced by `rendered`."""
    pattern = re.compile(f"{re.escape(_BEGIN)}\n.*?{re.escape(_END)}", re.DOTALL)
    if not pattern.search(docs):
        raise ValueError(f"{DOCS} has no cluster plan markers")
    return pattern.sub(lambda _: f"{_BEGIN}\n{rendered}{_END}", docs)


def with_requests(profile: str, plans: list[RulePlan]) -> str:
    """The profile's text with each planned rule's `runtime:` and `mem_mb:` under set-resources
    set to its requests (comments and layout kept); fails on a planned rule the profile does
    not list with both."""
    wanted = {p.rule: {"runtime": p.minutes, "mem_mb": p.mem_mb} for p in plans}
    lines, rule, done = profile.splitlines(keepends=True), None, set()
    for k, line in enumerate(lines):
        if header := re.match(r"^  (\w+):", line):
            rule = header.group(1)
        elif rule in wanted and (old := re.match(r"^(    (runtime|mem_mb): )\d+", line)):
            lines[k] = f"{old.group(1)}{wanted[rule][old.group(2)]}{line[old.end() :]}"
            done.add((rule, old.group(2)))
    if missing := {(r, key) for r in wanted for key in wanted[r]} - done:
        raise ValueError(f"profiles/slurm sets no request for {sorted(missing)}")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs and profile")
    args = parser.parse_args()
    plans = plan(preset_config(), measurements())
    rendered = table(plans)
    if not args.write:
        print(rendered, end="")
        return
    DOCS.write_text(with_table(DOCS.read_text(), rendered))
    PROFILE.write_text(with_requests(PROFILE.read_text(), plans))


if __name__ == "__main__":
    main()
