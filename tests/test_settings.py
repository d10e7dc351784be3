"""What a table depends on in the configuration (settings.py): every config key is declared by
some table's rule or is presentation-only, a sweep's items see only their declared keys, scripts
read no config beyond their rule's params, and every table records the settings that made it."""

import ast
import json

import pandas as pd
import pytest
from conftest import ROOT, SCHEMA_PATH, deep_merge, load_yaml

from transformer_stability.io import read_table, write_table
from transformer_stability.plotting import figure_settings
from transformer_stability.registry import (
    FIGURES,
    PRESENTATION_KEYS,
    STUDIES,
    TABLE_SETTINGS,
    validate,
)
from transformer_stability.settings import (
    SettingsError,
    config_slice,
    covers,
    leaves,
    merge_settings,
    read_settings,
    settings_hash,
    sidecar,
)
from transformer_stability.tables import TableError

PRESETS = {
    "default": {},
    "tiny": load_yaml(ROOT / "tests" / "configs" / "tiny.yaml"),
    "paper": load_yaml(ROOT / "config" / "paper.yaml"),
}


def resolved(preset: str) -> dict:
    """The preset over the embedded default, the schema's defaults filled in (as a run has it)."""
    return validate(deep_merge(load_yaml(ROOT / "config.yaml"), PRESETS[preset]), SCHEMA_PATH)


def test_a_slice_is_a_copy_shaped_like_the_config():
    config = {"seed": 0, "a": {"b": {"c": 1, "d": [2]}, "e": 3}}
    part = config_slice(config, ["a.b.d", "seed", "a.b"])
    assert part == {"a": {"b": {"c": 1, "d": [2]}}, "seed": 0}
    part["a"]["b"]["d"].append(9)
    assert config["a"]["b"]["d"] == [2]
    with pytest.raises(KeyError):
        config_slice(config, ["a.x"])


def test_merging_refuses_a_key_two_tables_disagree_on():
    merged = merge_settings({"t1.csv": {"seed": 0, "a": {"b": 1}}, "t2.csv": {"seed": 0, "c": 2}})
    assert merged == {"seed": 0, "a": {"b": 1}, "c": 2}
    with pytest.raises(SettingsError) as error:
        merge_settings({"t1.csv": {"a": {"b": 1}}, "t2.csv": {"a": {"b": 2}}})
    assert all(text in str(error.value) for text in ("t1.csv", "t2.csv", "'a.b'"))


def test_the_hash_follows_the_values_not_the_key_order():
    assert settings_hash({"a": 1, "b": [1, 2]}) == settings_hash({"b": [1, 2], "a": 1})
    assert settings_hash({"a": 1}) != settings_hash({"a": 2})


def _table(path, rows: int, settings) -> None:
    write_table(pd.DataFrame({"x": range(rows)}), path, settings=settings)


def test_a_table_records_its_settings_and_a_hand_edit_is_refused(tmp_path):
    path = tmp_path / "results" / "t.csv"
    _table(path, 2, {"seed": 3, "s": {"k": [1, 2]}})
    assert sidecar(path).name == "t.settings.json"
    assert read_settings(path) == {"seed": 3, "s": {"k": [1, 2]}}
    record = json.loads(sidecar(path).read_text())
    record["settings"]["seed"] = 4
    sidecar(path).write_text(json.dumps(record))
    with pytest.raises(SettingsError, match="does not match its hash"):
        read_settings(path)
    sidecar(path).unlink()
    with pytest.raises(SettingsError, match="--forcerun"):
        read_settings(path)


def test_a_table_is_checked_against_the_settings_it_records(tmp_path):
    from transformer_stability.counting.tables import Residual

    settings = {"counting": {"residual": {"errors": [0.5, 0.1]}}}
    rows = Residual.rows(settings)
    path = tmp_path / "results" / "counting" / "residual.csv"
    _table(path, rows, settings)  # written unchecked; the row count is then read back checked
    with pytest.raises(TableError, match=f"{rows} rows, more than the 7 the config implies"):
        read_table(path, Residual, {"counting": {"residual": {"errors": [0.5]}}})
    with pytest.raises(TableError) as error:  # recorded settings: the model's columns refused
        read_table(path, Residual)
    assert "rows" not in str(error.value)  # the row count, from the record, is right


def test_a_figure_of_tables_made_under_different_settings_is_refused(tmp_path):
    figure = next(f for f in FIGURES.values() if len(f.tables) > 1)
    inputs = {name: tmp_path / "results" / path for name, path in figure.inputs.items()}
    for k, path in enumerate(inputs.values()):
        _table(path, 1, {"seed": 0, "apjn": {"model": {"width": 32 if k == 0 else 48}}})
    with pytest.raises(SettingsError) as error:
        figure_settings(figure, inputs)
    first, second = list(inputs.values())[:2]
    assert str(first) in str(error.value) and str(second) in str(error.value)
    assert "'apjn.model.width'" in str(error.value)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_config_key_reruns_a_table_or_is_presentation_only(preset):
    """The generic rerun test: every leaf of the resolved configuration is in the settings of
    some table (so its rule reruns when it changes: a `settings` param) or declared
    presentation-only, never both."""
    config = resolved(preset)
    declared = [key for keys in TABLE_SETTINGS.values() for key in keys]
    for key, _ in leaves(config):
        in_tables = covers(declared, key)
        assert in_tables != covers(PRESENTATION_KEYS, key), key
    for keys in TABLE_SETTINGS.values():
        config_slice(config, keys)  # every declared key exists (a typo fails here)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_sweep_builds_its_items_from_its_declared_keys_alone(preset):
    """A sweep's items are its chunk jobs' params: built from the declared slice (as the workflow
    builds them), they are the items of the whole config, so no undeclared key shapes them."""
    config = resolved(preset)
    for study in STUDIES.values():
        for sweep in study.sweeps:
            part = config_slice(config, sweep.settings)
            items = sweep.items(part[study.name], part["seed"])
            assert items == sweep.items(config[study.name], config["seed"]), sweep.rule


def _reads_config(script) -> bool:
    tree = ast.parse(script.read_text())
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "config"
        and isinstance(node.value, ast.Name)
        and node.value.id == "snakemake"
        for node in ast.walk(tree)
    )


def test_scripts_read_the_config_only_through_their_params():
    scripts = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    assert scripts
    assert [s.name for s in scripts if _reads_config(s)] == []


@pytest.mark.slow
def test_every_table_and_figure_of_a_tiny_run_records_its_settings(tiny_run):
    """Each table records (at least) the slice of the run's config it declares, with the run's
    values; each figure the merged settings of its tables."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    config, results = resolved("tiny"), tiny_run.workdir / "results"
    for path, keys in TABLE_SETTINGS.items():
        recorded = read_settings(results / path)
        declared = config_slice(config, keys)
        assert merge_settings({"recorded": recorded, "declared": declared}) == recorded, path
    for figure in FIGURES.values():
        tables = {name: tiny_run.workdir / path for name, path in figure.inputs.items()}
        assert read_settings(tiny_run.workdir / figure.pdf) == figure_settings(figure, tables)
