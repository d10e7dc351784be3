"""Study C sweeps as items: one training item per (read-out, L) holding only what its job reads,
one theory item per width, and the tables the data rules derive for the figures (pre-norm wall,
reference laws, exponent table)."""

import importlib
import math
import pkgutil

import numpy as np
import pandas as pd
import pytest

from transformer_stability.code_inputs import module_closure
from transformer_stability.config import validate_config
from transformer_stability.counting.costs import (
    HEAD_FIT_SECONDS,
    POLISH_ITERATION_SECONDS,
    train_work,
)
from transformer_stability.counting.derived_tables import (
    exponent_table,
    reference_slopes,
)
from transformer_stability.counting.items import (
    BoundGrid,
    geometry_item,
    theory_items,
    train_items,
)
from transformer_stability.counting.tables import Rates
from transformer_stability.counting.theory import prenorm_max_length, prenorm_wall
from transformer_stability.tables import columns_of


@pytest.fixture(scope="module")
def counting(schema) -> dict:
    return validate_config({}, schema)["counting"]


def _with(counting: dict, section: str, **values) -> dict:
    return {**counting, section: {**counting[section], **values}}


def test_one_training_item_per_readout_and_length_regression_first(counting):
    items = train_items(counting, 0)
    training = counting["training"]
    expected = [
        f"{readout}_L{length}"
        for readout in ("regression", "classification")
        for length in sorted(
            set(training[readout]["lengths"]) | set(training[readout]["unconstrained_lengths"])
        )
    ]
    assert [item.id for item in items] == expected


def test_a_training_item_has_the_bound_grid_and_unconstrained_runs_where_configured(schema):
    sweep = {"lengths": [8, 16], "unconstrained_lengths": [16, 32], "ratios": [0.9, 1.2]}
    config = validate_config({"counting": {"training": {"regression": sweep, "seeds": 3}}}, schema)
    items = {i.id: i for i in train_items(config["counting"], 10)}
    assert items["regression_L8"].grid is not None and not items["regression_L8"].unconstrained
    assert items["regression_L16"].grid is not None and items["regression_L16"].unconstrained
    assert items["regression_L32"].grid is None and items["regression_L32"].unconstrained
    assert all(i.seeds == (10, 11, 12) for i in items.values())
    assert items["regression_L8"].provenance == {"seed": 10, "dtype": "float64"}
    assert items["regression_L8"].grid == BoundGrid((0.9, 1.2), True, 0.01, 8)  # the search
    assert (
        items["regression_L16"].steps == 400 and items["regression_L16"].unconstrained_steps == 6000
    )
    assert items["classification_L16"].grid == BoundGrid((0.5,), relative=False)
    assert items["classification_L16"].edges_only and not items["regression_L8"].edges_only


def test_the_work_of_a_training_item_counts_the_host_work_of_its_constrained_runs(schema):
    """Adam's steps on the device, then per constrained regression run `polish_iterations` SLSQP
    iterations on the host, each a + b L^2 seconds (the measured cost grows as L^2); the
    unconstrained runs are not polished, and the classification runs' head refit grows as
    L^3."""
    sweep = {"lengths": [8, 128], "unconstrained_lengths": [128], "ratios": [0.9, 1.2]}
    sweep |= {"steps": 100, "polish_iterations": 50}
    config = validate_config({"counting": {"training": {"regression": sweep, "seeds": 3}}}, schema)
    items = {i.id: i for i in train_items(config["counting"], 0)}
    fixed, quadratic = POLISH_ITERATION_SECONDS
    for length, free_steps in ((8, 0), (128, 6000)):
        work = train_work(items[f"regression_L{length}"])
        # 3 seeds x (2 ratios, then one per later round of the search's 8)
        polish = 3 * (2 + 7) * 50 * (fixed + quadratic * length**2)
        assert work.steps == 8 * 100 + free_steps, length
        assert work.host_seconds == pytest.approx(polish), length
        assert f"polish {polish / 60:.0f} min on the host" in work.what
    classification = train_work(items["classification_L16"])
    assert "polish" not in classification.what
    # the head refit of the 3 seeds at the one default bound, L^3 each
    assert classification.host_seconds == pytest.approx(3 * HEAD_FIT_SECONDS * 16**3)
    assert "head refit 0 min on the host" in classification.what
    unpolished = {**sweep, "polish_iterations": 0}
    config = validate_config(
        {"counting": {"training": {"regression": unpolished, "seeds": 3}}}, schema
    )
    item = next(i for i in train_items(config["counting"], 0) if i.id == "regression_L128")
    assert train_work(item).host_seconds == 0 and "polish" not in train_work(item).what


def test_training_items_do_not_follow_the_theory(counting):
    theory = {"widths": [8, 16, 64], "lengths": [4, 8], "fit_points": 2, "margin": 0.1}
    assert train_items(_with(counting, "theory", **theory), 0) == train_items(counting, 0)


def test_regression_items_do_not_follow_the_classification_logit_scales(counting):
    changed = _with(counting, "training", logit_scale=7.0, final_logit_scale=70.0)
    before, after = train_items(counting, 0), train_items(changed, 0)
    for old, new in zip(before, after, strict=True):
        assert (old == new) == (old.readout == "regression")
        assert (old.logit_scale is None) == (old.readout == "regression")


def test_one_theory_item_per_width_and_the_geometry_at_the_first(counting):
    changed = _with(counting, "theory", widths=[16, 8])
    assert [item.id for item in theory_items(changed, 0)] == ["d16", "d8"]
    assert geometry_item(changed, 0).d == 16
    assert geometry_item(changed, 0).length == counting["geometry_length"]


def test_the_figures_never_import_the_model_nor_the_theory():
    package = "transformer_stability.counting.figures"
    modules = [m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__)]
    assert len(modules) >= 7  # one a figure, and the helpers they share
    figures = module_closure(*(f"{package}.{module}" for module in modules))
    assert not {
        "transformer_stability.counting.model",
        "transformer_stability.counting.theory",
    } & set(figures)
    for module in ("experiment", "study", "rates", "items"):
        closure = module_closure(f"transformer_stability.counting.{module}")
        assert "transformer_stability.counting.style" not in closure
        assert not [name for name in closure if name.startswith(package)]


def test_the_wall_is_the_prenorm_limit_of_the_score_range_2_sqrt_d():
    for d in (4, 8, 16):
        assert prenorm_wall(d) == prenorm_max_length(2 * math.sqrt(d))


def _theory(d: int, lengths, bmin_of) -> pd.DataFrame:
    rows = [
        {
            "placement": placement,
            "attention": "softmax",
            "readout": "regression",
            "d": d,
            "L": length,
            "bound": bound,
            "bmin": bmin_of(placement, length),
        }
        for placement in ("none", "post_bare", "post_learned")
        for bound in ("lower_bound", "construction")
        for length in lengths
    ]
    return pd.DataFrame(rows)


def test_reference_laws_pass_above_the_last_construction_with_the_predicted_exponent():
    lengths = [4, 8, 16, 32]
    theory = _theory(8, lengths, lambda p, length: {"none": 1, "post_bare": 2}.get(p, 3) * length)
    lines = reference_slopes(theory)
    exponents = lines.groupby("placement")["exponent"].first().to_dict()
    assert exponents == {"none": 1.0, "post_bare": 1.5, "post_learned": 0.75}
    for placement, line in lines.groupby("placement"):
        assert list(line["L"]) == lengths
        last = theory[(theory["placement"] == placement) & (theory["bound"] == "construction")]
        assert line["bmin"].iloc[-1] == pytest.approx(1.6 * last["bmin"].iloc[-1])
        slopes = np.diff(np.log(line["bmin"])) / np.diff(np.log(line["L"]))
        np.testing.assert_allclose(slopes, exponents[placement])


def test_the_exponent_table_has_a_row_per_placement_and_readout_and_the_wall():
    rates = pd.DataFrame(
        [
            ("post_learned", "regression", source, value, 0.75, 16, 64, 3)
            for source, value in (("lower_bound", 0.7), ("construction", 0.8), ("training", 0.9))
        ]
        + [("none", "classification", "construction", 0.0, 0.0, 8, 512, 3)]
        + [("none", "classification", "training", np.nan, 0.0, 0, 0, 0)]
        + [("post_learned", "classification", "construction", 0.0, 0.0, 8, 512, 3)],
        columns=columns_of(Rates)[:-2],
    )
    walls = pd.DataFrame(
        [("pre_bare", "regression", 16, 99), ("pre_bare", "regression", 8, 34)],
        columns=["placement", "readout", "d", "max_length"],
    )
    table = exponent_table(rates, walls)
    assert list(zip(table["placement"], table["readout"], strict=True)) == [
        ("none", "classification"),
        ("post_learned", "classification"),
        ("pre_bare", "regression"),
        ("post_learned", "regression"),
    ]
    assert table.index.equals(pd.RangeIndex(len(table)))
    assert list(table["note"].iloc[:2]) == ["", ""]
    assert table.iloc[0]["training_window"] == ""  # no fit, no window
    post = table.iloc[3]
    assert (post["predicted"], post["lower_bound"], post["construction"], post["training"]) == (
        0.75,
        0.7,
        0.8,
        0.9,
    )
    assert table.iloc[2]["note"] == "wall: no B counts beyond L = 34 (d = 8)"
    assert post["training_window"] == "16-64, 3 pts"
    assert table.iloc[0]["construction_window"] == "8-512, 3 pts"
