"""Study A's sweeps as items: what the workflow enumerates from the config, and that an item's
job computes exactly what the sweep needs, independently of the other items."""

from dataclasses import replace

import pandas as pd
import pytest
import torch
from conftest import ROOT, deep_merge, load_yaml

from transformer_stability.apjn.costs import train_work
from transformer_stability.apjn.items import (
    curve_items,
    depth_items,
    scan_items,
    sensitivity_items,
    width_items,
)
from transformer_stability.apjn.measured_tables import end_to_end_table
from transformer_stability.apjn.train_items import train_items
from transformer_stability.apjn.training import segment_end, train_table
from transformer_stability.config import validate_config
from transformer_stability.work import LIMIT_MIN, request_minutes

SWEEPS = (curve_items, sensitivity_items, depth_items, train_items, width_items, scan_items)


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
    inits, sensitivity, scan = apjn["measure"]["inits"], apjn["sensitivity"], apjn["width_scan"]
    scanned = len(scan["variants"]) * len(scan["heads"]) * scan["inits"]
    # the models the curve sweep measures: the configured head count, a variant of both lists
    # and an initialization of both
    shared = sum(v in apjn["variants"] for v in scan["variants"]) * min(scan["inits"], inits)
    shared *= apjn["model"]["heads"] in scan["heads"]
    expected = {
        scan_items: scanned,
        width_items: scanned - shared,
        curve_items: 2 * len(apjn["variants"]) * inits,
        sensitivity_items: (2 * len(sensitivity["alphas"]) + 2 * 2 * len(sensitivity["mults"]))
        * sensitivity["inits"],
        depth_items: len(apjn["variants"]) * inits,
        train_items: (1 + len(train["norms"])) * len(train["depths"])
        if train["batched"]
        else (1 + len(train["norms"]) * len(train["alphas"]))
        * len(train["mults"])
        * len(train["lrs"])
        * len(train["depths"])
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


def test_equiangular_heads_widen_only_the_equiangular_curves(tiny):
    """measure.equiangular_heads sets the equiangular curves' heads at the model's head
    dimension (so init_std vit_b keeps the mean-field constants); the image curves keep the
    model's width, and null leaves every curve at it."""
    apjn = tiny["apjn"]
    model = apjn["model"]
    head_dim = model["width"] // model["heads"]
    wide = deep_merge(apjn, {"measure": {"equiangular_heads": 2 * model["heads"]}})
    for item in curve_items(wide, 0):
        spec = item.spec
        heads = 2 * model["heads"] if item.input == "equiangular" else model["heads"]
        assert (spec.heads, spec.width) == (heads, heads * head_dim)
        assert spec.init_std == model["init_std"] and spec.depth == model["depth"]
    plain = deep_merge(apjn, {"measure": {"equiangular_heads": None}})
    assert {i.spec.width for i in curve_items(plain, 0)} == {model["width"]}


def test_the_width_scan_keeps_the_head_dimension_and_measures_no_model_twice(tiny):
    """Every scanned width keeps width / heads of apjn.model (and the init_std setting, hence
    the mean-field constants); at the configured width the scan's models are the curve sweep's
    image models (same spec, seeds and images), which the width sweep leaves to it."""
    apjn = tiny["apjn"]
    model = apjn["model"]
    head_dim = model["width"] // model["heads"]
    items = scan_items(apjn, 3)
    assert {i.curve.spec.heads for i in items} == set(apjn["width_scan"]["heads"])
    for item in items:
        spec = item.curve.spec
        assert spec.width // spec.heads == head_dim and spec.width % spec.heads == 0
        assert spec.init_std == model["init_std"] and item.curve.input == "images"
        assert item.compare_from == apjn["images"]["compare_from_block"]
    at_model_width = [i for i in items if i.curve.spec.width == model["width"]]
    images = {i for i in curve_items(apjn, 3) if i.input == "images"}
    assert at_model_width and {i.curve for i in at_model_width} <= images
    assert width_items(apjn, 3) == [i for i in items if i not in at_model_width]
    # a variant the curve sweep does not measure stays in the width sweep at every width
    other = deep_merge(apjn, {"variants": [{"norm": "dyt", "alpha": 1.0}]})
    assert width_items(other, 3) == scan_items(other, 3)


def test_an_item_computes_the_same_rows_alone_as_in_any_chunk(tiny):
    items = sensitivity_items(tiny["apjn"], 0)[:3]
    device = torch.device("cpu")
    alone = end_to_end_table(items[1], device)
    together = pd.concat([end_to_end_table(item, device) for item in items], ignore_index=True)
    same = (together["alpha"] == items[1].spec.alpha) & (
        together["init_seed"] == items[1].settings.seed
    )
    pd.testing.assert_frame_equal(together[same].reset_index(drop=True), alone)


def test_a_sensitivity_point_read_backward_matches_the_forward_curve_at_its_depth(tiny):
    """A sensitivity point takes J^{L,0} from reverse passes, the depth sweep from forward
    mode: the same model and inputs, estimates of the same mean with the same variance, so
    with many probes they agree to Monte Carlo accuracy, and are not identical draws."""
    apjn = deep_merge(tiny["apjn"], {"measure": {"probes": 400}, "sensitivity": {"inits": 1}})
    point = next(i for i in sensitivity_items(apjn, 0) if i.sweep == "attn_mult")
    curve = replace(point, sweep="depth", depths=tuple(range(1, point.spec.depth + 1)))
    device = torch.device("cpu")
    backward = end_to_end_table(point, device)
    forward = end_to_end_table(curve, device)
    assert list(backward["depth"]) == [point.spec.depth] * point.settings.samples
    deepest = forward[forward["depth"] == point.spec.depth].reset_index(drop=True)
    assert backward["apjn"].to_numpy() == pytest.approx(deepest["apjn"].to_numpy(), rel=0.05)
    assert not (backward["apjn"].to_numpy() == deepest["apjn"].to_numpy()).any()
    assert backward["apjn_theory"].to_numpy() == pytest.approx(deepest["apjn_theory"].to_numpy())


def test_a_training_item_is_one_row_per_run_with_its_seed(tiny):
    apjn = deep_merge(tiny["apjn"], {"train": {"seeds": 2}})
    item = next(i for i in train_items(apjn, 3) if i.spec.norm == "derf")
    assert item.seeds == (3, 4)
    rows = train_table(item, torch.device("cpu"))
    assert len(rows) == len(item.runs) > 1 and (rows["norm"] == "derf").all()
    assert sorted(zip(rows["train_seed"], rows["attn_mult"], rows["lr"], strict=True)) == sorted(
        (run.seed, run.mult, run.lr) for run in item.runs
    )


def test_every_depth_trains_every_rate_and_multiplier(tiny):
    """A full grid: each configuration's tuning window needs every rate at every depth."""
    cfg = tiny["apjn"]["train"]
    items = train_items(tiny["apjn"], 0)
    for item in items:
        assert sorted({run.lr for run in item.runs}) == sorted(cfg["lrs"])
        assert {run.mult for run in item.runs} == set(cfg["mults"])
    assert {(i.spec.norm, i.spec.depth) for i in items} == {
        (norm, depth) for norm in ["ln", *cfg["norms"]] for depth in cfg["depths"]
    }


@pytest.mark.parametrize(("preset", "count"), [("config.yaml", 1), ("config/paper.yaml", 2)])
def test_training_is_cut_into_the_segments_the_cluster_plan_needs(schema, preset, count):
    """One ViT-B run of 5000 steps is over the time limit: every item trains in two segments;
    the CPU preset's groups stay one job each."""
    config = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / preset))
    items = train_items(validate_config(config, schema)["apjn"], 0)
    assert {item.segments for item in items} == {count}
    assert max(request_minutes(train_work(item).part(count)) for item in items) <= LIMIT_MIN


def test_segments_end_on_equal_shares_of_the_steps(tiny):
    item = replace(train_items(tiny["apjn"], 0)[0], segments=3)
    item = replace(item, schedule=replace(item.schedule, steps=10))
    assert [segment_end(item, k) for k in (1, 2, 3)] == [3, 6, 10]
