"""Study A's sweeps as items: what the workflow enumerates from the config, and that an item's
job computes exactly what the sweep needs, independently of the other items."""

import pandas as pd
import pytest
import torch
from conftest import ROOT, deep_merge, load_yaml

from transformer_stability.apjn.experiment import END_TO_END_COLUMNS, end_to_end_table
from transformer_stability.apjn.items import (
    curve_items,
    depth_items,
    sensitivity_items,
    train_items,
)
from transformer_stability.apjn.train import TRAIN_COLUMNS, train_table
from transformer_stability.config import validate_config

SWEEPS = (curve_items, sensitivity_items, depth_items, train_items)


@pytest.fixture(scope="module")
def tiny(schema) -> dict:
    config = deep_merge(
        load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / "tests/configs/tiny.yaml")
    )
    return validate_config(config, schema)


@pytest.mark.parametrize("preset", ["config.yaml", "config/paper.yaml"])
def test_item_counts_and_unique_ids(schema, preset):
    config = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / preset))
    apjn = validate_config(config, schema)["apjn"]
    train = apjn["train"]
    inits, sensitivity = apjn["measure"]["inits"], apjn["sensitivity"]
    expected = {
        curve_items: 2 * len(apjn["variants"]) * inits,
        sensitivity_items: (2 * len(sensitivity["alphas"]) + 2 * 2 * len(sensitivity["mults"]))
        * sensitivity["inits"],
        depth_items: len(apjn["variants"]) * inits,
        train_items: (1 + len(train["norms"]) * len(train["alphas"]))
        * len(train["mults"])
        * train["seeds"],
    }
    for sweep, count in expected.items():
        ids = [item.id for item in sweep(apjn, 0)]
        assert len(ids) == len(set(ids)) == count, sweep.__name__


def test_items_carry_only_their_own_settings(tiny):
    """Changing the training schedule changes no measurement item, and vice versa."""
    apjn = tiny["apjn"]
    longer = deep_merge(apjn, {"train": {"steps": 999}, "sensitivity": {"mult_alpha": 2.0}})
    assert curve_items(longer, 0) == curve_items(apjn, 0)
    assert depth_items(longer, 0) == depth_items(apjn, 0)
    assert all(a != b for a, b in zip(train_items(longer, 0), train_items(apjn, 0), strict=True))


def test_each_initialization_is_its_own_item_with_its_own_seed(tiny):
    """measure.inits initializations of every curve model: their seeds (weights and inputs)
    differ, everything else is the same."""
    apjn = deep_merge(tiny["apjn"], {"measure": {"inits": 3}})
    items = [i for i in curve_items(apjn, 5) if i.input == "equiangular" and i.spec.norm == "ln"]
    assert [i.settings.seed for i in items] == [5, 6, 7]
    assert len({i.spec for i in items}) == 1 and len({i.id for i in items}) == 3


def test_an_item_computes_the_same_rows_alone_as_in_any_chunk(tiny):
    items = sensitivity_items(tiny["apjn"], 0)[:3]
    device = torch.device("cpu")
    alone = end_to_end_table(items[1], device)
    together = pd.concat([end_to_end_table(item, device) for item in items], ignore_index=True)
    assert list(alone.columns) == END_TO_END_COLUMNS
    pd.testing.assert_frame_equal(
        together[together["alpha"] == items[1].spec.alpha].reset_index(drop=True), alone
    )


def test_a_training_item_is_one_row_with_its_seed(tiny):
    item = train_items(tiny["apjn"], 0)[0]
    row = train_table(item, torch.device("cpu"))
    assert list(row.columns) == TRAIN_COLUMNS and len(row) == 1
    assert row["train_seed"].iloc[0] == item.seed and row["norm"].iloc[0] == item.spec.norm
