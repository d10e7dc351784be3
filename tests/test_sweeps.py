"""Sweep items as Snakemake jobs: chunk names, round-robin or work-balanced chunks, and a gather
that restores the sweep's order whatever the chunking."""

from dataclasses import dataclass

import pandas as pd
import pytest

from transformer_stability.sweeps import (
    ITEM_COLUMN,
    chunk_items,
    chunk_priorities,
    gather_items,
    run_chunk,
    tag_item,
)
from transformer_stability.tables import Table


@dataclass(frozen=True)
class Point:
    name: str
    rows: int = 2

    @property
    def id(self) -> str:
        return self.name

    def table(self) -> pd.DataFrame:
        return pd.DataFrame({"point": self.name, "row": range(self.rows)})


ITEMS = [Point(f"p{k}", rows=k % 3 + 1) for k in range(7)]


def test_one_item_per_chunk_names_each_chunk_after_its_item():
    chunks = chunk_items(ITEMS, 100)
    assert list(chunks) == [item.id for item in ITEMS]
    assert all(len(items) == 1 for items in chunks.values())


def test_fewer_chunks_split_the_items_round_robin():
    chunks = chunk_items(ITEMS, 3)
    assert list(chunks) == ["1-of-3", "2-of-3", "3-of-3"]
    assert [i.id for i in chunks["1-of-3"]] == ["p0", "p3", "p6"]
    assert sorted(i.id for items in chunks.values() for i in items) == sorted(i.id for i in ITEMS)


def test_chunks_of_costed_items_carry_about_equal_work():
    # one heavy item, then light ones: round robin would load 24 (p0 p2 p4 p6) against 9
    cost = {"p0": 12.0, **{f"p{k}": float(k) for k in range(1, 7)}}
    chunks = chunk_items(ITEMS, 2, lambda item: cost[item.id])
    # the costliest first, each to the lighter chunk: 12 | 6, 5, 4 | 3, 2 to the 12 | 1
    assert [i.id for i in chunks["1-of-2"]] == ["p0", "p2", "p3"]  # each chunk in item order
    assert [i.id for i in chunks["2-of-2"]] == ["p1", "p4", "p5", "p6"]


def test_costlier_chunks_get_higher_priorities_and_uncosted_sweeps_one():
    cost = {"p0": 2.0**40, "p1": 3.0, "p2": 0.0, **{f"p{k}": 2.0**20 for k in range(3, 7)}}
    chunks = {"heavy": ITEMS[:1], "light": ITEMS[1:2], "empty": ITEMS[2:3], "rest": ITEMS[3:]}
    priorities = chunk_priorities(chunks, lambda item: cost[item.id])
    # the bit length of each chunk's total: 2^40 -> 40, 3 -> 2, 0 -> at least 1, 4 x 2^20 -> 22
    assert priorities == {"heavy": 40, "light": 2, "empty": 1, "rest": 22}
    assert chunk_priorities(chunks) == dict.fromkeys(chunks, 1)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_balanced_chunks_hold_every_item_once_and_differ_by_at_most_one_item(count):
    cost = {item.id: float((7 * k) % 5 + 1) for k, item in enumerate(ITEMS)}
    chunks = chunk_items(ITEMS, count, lambda item: cost[item.id])
    assert len(chunks) == min(count, len(ITEMS))
    assert sorted(i.id for items in chunks.values() for i in items) == sorted(cost)
    loads = [sum(cost[i.id] for i in items) for items in chunks.values()]
    assert max(loads) - min(loads) <= max(cost.values())


@pytest.mark.parametrize("count", [1, 2, 3, 7, 50])
def test_the_gathered_table_does_not_depend_on_the_chunking(count):
    reference = pd.concat([item.table() for item in ITEMS], ignore_index=True)
    chunk_tables = [
        pd.concat([tag_item(item.table(), item) for item in items], ignore_index=True)
        for items in reversed(chunk_items(ITEMS, count).values())  # any order of chunk files
    ]
    gathered = gather_items(chunk_tables, [item.id for item in ITEMS])
    pd.testing.assert_frame_equal(gathered, reference)
    assert ITEM_COLUMN not in gathered


def test_a_missing_item_stops_the_gather():
    tables = [tag_item(item.table(), item) for item in ITEMS[:-1]]
    with pytest.raises(ValueError, match="missing \\['p6'\\]"):
        gather_items(tables, [item.id for item in ITEMS])


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([Point("a/b")], "file-name safe"),
        ([Point("a"), Point("a")], "share an id"),
    ],
)
def test_bad_item_ids_are_refused(items, message):
    with pytest.raises(ValueError, match=message):
        chunk_items(items, 2)


@dataclass(frozen=True)
class SharingPoint(Point):
    group: str = ""

    @property
    def shares(self) -> str:
        return self.group

    @property
    def provenance(self) -> dict[str, int | str]:
        return {"seed": 0, "dtype": "float32"}


class PointRows(Table):
    point: str
    row: int

    class Config:
        metadata = {"path": "test/points.csv", "rule": "test"}


def test_a_chunk_runs_the_items_that_share_one_after_another_and_gathers_in_item_order(tmp_path):
    items = [SharingPoint(name, group=name[0]) for name in ("a1", "b1", "a2", "b2", "c1")]
    ran: list[str] = []
    path = tmp_path / "chunk.csv"
    run_chunk(items, lambda item: ran.append(item.id) or item.table(), path, "cpu", PointRows)
    assert ran == ["a1", "a2", "b1", "b2", "c1"]
    gathered = gather_items([pd.read_csv(path)], [item.id for item in items])
    assert list(gathered["point"].drop_duplicates()) == ["a1", "b1", "a2", "b2", "c1"]
    ran.clear()
    alone = [SharingPoint(item.name, item.rows) for item in ITEMS]  # nothing shared
    run_chunk(alone, lambda item: ran.append(item.id) or item.table(), path, "cpu", PointRows)
    assert ran == [item.id for item in ITEMS]
