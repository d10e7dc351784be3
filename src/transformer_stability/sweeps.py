"""Sweeps as Snakemake jobs: every item of a sweep has an identity, and the items are split into
chunks, one job per chunk.

A chunk count comes from the workflow's `scattergather:` directive, which a profile overrides
with `set-scatter` (the default profile runs a few chunks per sweep, the SLURM profile one item
per job). A chunk holding a single item is named after the item (`derf-a1.5_images`), so on a
cluster adding an item to the config adds one job and leaves the others' outputs valid; smaller
counts split the items into chunks named `1-of-3`, `2-of-3`, ... of about equal work where the
sweep declares what an item costs (`Sweep.work`), else round robin.

Each chunk writes one table (or several, one per named output) whose first column, `item`, names
the item of each row; the gather rule puts the rows back in the sweep's order and drops that
column, so the gathered table does not depend on how the sweep was chunked.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pandas as pd
from tqdm.auto import tqdm

from transformer_stability.io import write_table
from transformer_stability.provenance import with_provenance
from transformer_stability.tables import ITEM_COLUMN, Table, meta
from transformer_stability.work import Work

log = logging.getLogger(__name__)

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")


class Item(Protocol):
    """A sweep item: any object with a file-name-safe identity and the provenance its rows
    record (`{"seed": ..., "dtype": ...}`)."""

    @property
    def id(self) -> str: ...

    @property
    def provenance(self) -> dict[str, int | str]: ...


T = TypeVar("T", bound=Item)


@dataclass(frozen=True)
class Sweep:
    """One sweep, declared once in its study: workflow/rules/sweeps.smk makes its chunk rule
    (named `rule`, which is also its `scattergather` name, running workflow/scripts/<rule>.py)
    and one gather job per table.

    `items` builds the items from the study's config section and the run's seed; `tables` maps
    each output of a chunk job (the keys of what `script`'s table function returns, for a chunk
    writing several tables) to the model of the table it is gathered into;
    `settings` are the config keys (dotted paths, settings.py) the items are built from: only
    they are passed to `items`, and the gathered tables record them; `gpu` says whether its jobs
    may use the GPU (else they run on the CPU; a GPU sweep declares `device`); `inputs` lists
    the outside files its jobs read, from the study's config section; `work` what one item
    costs (cluster_plan.py turns it into the SLURM time request), None where the cost is not
    arithmetic (the profile then states the request by hand).
    """

    rule: str
    items: Callable[[Mapping[str, Any], int], Sequence[Item]]
    tables: Mapping[str, type[Table]]
    settings: tuple[str, ...]
    gpu: bool = True
    inputs: Callable[[Mapping[str, Any]], list[str]] = field(default=lambda section: [])
    work: Callable[[Any], Work] | None = None

    @property
    def script(self) -> str:
        """The chunk rule's script, named as the rule."""
        return f"{self.rule}.py"

    def gathered(self, output: str) -> str:
        """The table `output` is gathered into, below results/ and without its suffix
        ("apjn/measured_curves"): the gather rule's wildcard."""
        return meta(self.tables[output])["path"].removesuffix(".csv")

    def chunk_table(self, output: str) -> str:
        """The path pattern of one chunk's table for `output` (wildcard `chunk`)."""
        study, name = self.gathered(output).split("/")
        return f"results/{study}/items/{name}/{{chunk}}.csv"

    @property
    def segment_rule(self) -> str:
        """The rule of a segmented sweep's earlier segments (the chunk rule runs the last)."""
        return f"{self.rule}_segment"

    @property
    def checkpoint(self) -> str:
        """The path pattern of a chunk's state after a segment (wildcards `chunk`, `segment`)."""
        study, name = self.gathered(next(iter(self.tables))).split("/")
        return f"results/{study}/checkpoints/{name}/{{chunk}}/segment{{segment}}.pt"


def sweep_segments(items: Sequence[Item]) -> int:
    """How many segments every item of a sweep is trained in (an item without `segments`: 1)."""
    return max((getattr(item, "segments", 1) for item in items), default=1)


def chunk_items(
    items: Sequence[T], count: int, cost: Callable[[T], float] | None = None
) -> dict[str, tuple[T, ...]]:
    """The items split into min(count, len(items)) chunks, by chunk name, each in item order:
    of about equal total `cost` (each item, the costliest first, joins the chunk with the least
    so far), or round robin without one. A local run's wall time is its slowest chunk's."""
    ids = [item.id for item in items]
    bad = [i for i in ids if not _SAFE.match(i)]
    if bad:
        raise ValueError(f"item ids must be file-name safe: {bad}")
    twins = sorted({i for i in ids if ids.count(i) > 1})
    if twins:
        raise ValueError(f"two items of a sweep share an id: {twins}")
    if count < 1:
        raise ValueError(f"a sweep needs at least one chunk, got {count}")
    if count >= len(items):
        return {item.id: (item,) for item in items}
    if cost is None:
        members = [list(range(k, len(items), count)) for k in range(count)]
    else:
        costs = [cost(item) for item in items]
        members, loads = [[] for _ in range(count)], [0.0] * count
        for index in sorted(range(len(items)), key=lambda i: -costs[i]):
            lightest = loads.index(min(loads))
            members[lightest].append(index)
            loads[lightest] += costs[index]
    return {
        f"{k + 1}-of-{count}": tuple(items[i] for i in sorted(m)) for k, m in enumerate(members)
    }


def chunk_priorities(
    chunked: Mapping[str, Sequence[T]], cost: Callable[[T], float] | None = None
) -> dict[str, int]:
    """Each chunk job's scheduling priority (Snakemake starts the ready jobs of the highest
    first; every other rule has 0): the bit length of the chunk's total `cost`, so that a local
    run starts its costliest chunks first and ends on short jobs, not on one long chunk beside
    idle cores. A sweep without a cost model gets 1: after the costed ones, before the rest."""
    if cost is None:
        return dict.fromkeys(chunked, 1)
    total = {name: sum(cost(item) for item in items) for name, items in chunked.items()}
    return {name: max(1, math.ceil(math.log2(max(work, 1.0)))) for name, work in total.items()}


def tag_item(table: pd.DataFrame, item: Item) -> pd.DataFrame:
    """An item's rows with the item column in front, as a chunk table holds them."""
    return table.assign(**{ITEM_COLUMN: item.id})[[ITEM_COLUMN, *table.columns]]


def _sharing(item: Item) -> str:
    """An item's `shares`, if it has one: what it has in common with other items of its sweep
    (one model's random weights, say) that a job computes once for consecutive items. A chunk
    runs its items grouped by it (else in item order); its rows are gathered in item order
    whatever order they ran in."""
    return getattr(item, "shares", "")


def run_chunk(
    items: Sequence[T],
    table_of: Callable[[T], pd.DataFrame | Mapping[str, pd.DataFrame]],
    path: str | Path | Mapping[str, str | Path],
    device: str,
    model: type[Table] | Mapping[str, type[Table]],
) -> None:
    """Compute every item of a chunk and write their rows, tagged with the item, with the
    provenance columns, atomically, checked as chunk tables of their gathered tables' models:
    a killed chunk leaves no table, so Snakemake reruns it.

    `table_of` returns one table, written to `path` (`model`: its gathered table's); or, for a
    chunk that writes several tables, a dict {name: table}, each written to `path[name]`
    (`path` and `model` dicts by name).
    """
    paths = path if isinstance(path, Mapping) else {None: path}
    models = model if isinstance(model, Mapping) else {None: model}
    frames: dict[str | None, list[pd.DataFrame]] = {name: [] for name in paths}
    ordered = sorted(items, key=_sharing)
    for item in tqdm(ordered, desc=Path(next(iter(paths.values()))).stem, mininterval=5.0):
        log.info("item %s", item.id)
        tables = table_of(item)
        named = tables if isinstance(tables, Mapping) else {None: tables}
        if set(named) != set(paths):
            raise ValueError(
                f"item {item.id} gave tables {sorted(map(str, named))}, the chunk writes "
                f"{sorted(map(str, paths))}"
            )
        for name, table in named.items():
            frames[name].append(
                with_provenance(tag_item(table, item), device=device, **item.provenance)
            )
    for name, parts in frames.items():
        write_table(pd.concat(parts, ignore_index=True), paths[name], models[name], chunk=True)


def gather_items(chunks: Sequence[pd.DataFrame], order: Sequence[str]) -> pd.DataFrame:
    """The rows of every chunk in the sweep's item order (rows of one item keep their order),
    without the item column; fails if an item is missing or unknown."""
    table = pd.concat(chunks, ignore_index=True)
    found, wanted = set(table[ITEM_COLUMN]), set(order)
    if found != wanted:
        raise ValueError(
            f"chunk tables do not hold the sweep's items: missing {sorted(wanted - found)}, "
            f"unexpected {sorted(found - wanted)}"
        )
    rank = table[ITEM_COLUMN].map({item: k for k, item in enumerate(order)})
    table = table.iloc[rank.argsort(kind="stable")]
    return table.drop(columns=ITEM_COLUMN).reset_index(drop=True)
