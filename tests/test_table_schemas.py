"""Tables checked on write and on read (transformer_stability/table_schemas.py): a truncated,
empty or hand-edited table is refused with a message naming the file and the rule that rebuilds
it, a computing bug fails before anything is written, and every schema accepts what the
pipeline writes."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, TINY, deep_merge, load_yaml

from transformer_stability.config import validate_config
from transformer_stability.io import read_table, write_table
from transformer_stability.table_schemas import (
    CHUNKS,
    SCHEMAS,
    TableError,
    TableSchema,
    schema_for,
)

SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def resolved(*overrides: str) -> dict:
    """config.yaml with the override files merged over it and the schema's defaults set, as the
    workflow's jobs see it."""
    config = load_yaml(ROOT / "config.yaml")
    for path in overrides:
        config = deep_merge(config, load_yaml(Path(path)))
    validate_config(config, SCHEMA_PATH)
    return config


def _value(column, row: int):
    """A valid value of `column` (varying with the row)."""
    if column.kind == "str":
        return column.values[row % len(column.values)] if column.values else f"v{row % 3}"
    if column.kind == "bool":
        return bool(row % 2)
    low = column.low if column.low is not None else 0.0
    high = column.high if column.high is not None else low + 10.0
    value = low + (high - low) * ((row % 7) + 1) / 8  # strictly inside the range
    return int(np.ceil(value)) if column.kind == "int" else value


def valid_table(schema: TableSchema, rows: int) -> pd.DataFrame:
    """A table that `schema` accepts, with a NaN in every column that allows one."""
    table = pd.DataFrame(
        {c.name: [_value(c, r) for r in range(rows)] for c in schema.columns}
    ).astype({c.name: "int64" for c in schema.columns if c.kind == "int"})
    for column in schema.columns:
        if column.nan and rows > 1:
            table.loc[1, column.name] = np.nan
    return table


def results_path(tmp_path: Path, name: str) -> Path:
    return tmp_path / "results" / name


def written(tmp_path: Path, name: str, rows: int = 10) -> Path:
    path = results_path(tmp_path, name)
    write_table(valid_table(SCHEMAS[name], rows), path)
    return path


# --- the schemas ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_round_trips_a_valid_table(tmp_path, name):
    path = written(tmp_path, name)
    table = read_table(path)
    assert list(table.columns) == SCHEMAS[name].names
    assert len(table) == 10


def test_every_table_ends_with_its_provenance():
    for schema in SCHEMAS.values():
        assert schema.names[-3:] == ["device", "dtype", "versions"], schema.name
        assert "seed" in schema.names, schema.name


def test_schema_columns_match_the_code():
    """The column constants of the computing modules, in order, with the provenance columns."""
    from transformer_stability.apjn.agreement import AGREEMENT_COLUMNS
    from transformer_stability.apjn.experiment import END_TO_END_COLUMNS, MEASURED_COLUMNS
    from transformer_stability.apjn.study import (
        ASYMPTOTIC_COLUMNS,
        CURVE_COLUMNS,
        DEPTH_COLUMNS,
        LAW_COLUMNS,
        TOKEN_COLUMNS,
    )
    from transformer_stability.apjn.train import TRAIN_COLUMNS
    from transformer_stability.counting.experiment import TRAINING_COLUMNS
    from transformer_stability.counting.rates import (
        EMPIRICAL_COLUMNS,
        EXPONENT_COLUMNS,
        RATE_COLUMNS,
        REFERENCE_COLUMNS,
    )
    from transformer_stability.counting.study import (
        GEOMETRY_COLUMNS,
        THEORY_COLUMNS,
        WALL_COLUMNS,
    )
    from transformer_stability.numerics.gpt2_runs import (
        ERROR_COLUMNS,
        RECURSION_COLUMNS,
        WEIGHT_COLUMNS,
    )

    provenance = ["seed", "device", "dtype", "versions"]
    expected = {
        "apjn/theory_curves.csv": CURVE_COLUMNS,
        "apjn/theory_depth.csv": DEPTH_COLUMNS,
        "apjn/asymptotics.csv": ASYMPTOTIC_COLUMNS,
        "apjn/depth_laws.csv": LAW_COLUMNS,
        "apjn/preln_tokens.csv": TOKEN_COLUMNS,
        "apjn/measured_curves.csv": MEASURED_COLUMNS,
        "apjn/sensitivity.csv": END_TO_END_COLUMNS,
        "apjn/depth_measured.csv": END_TO_END_COLUMNS,
        "apjn/trainability.csv": TRAIN_COLUMNS,
        "apjn/agreement.csv": AGREEMENT_COLUMNS,
        "numerics/gpt2_errors.csv": ERROR_COLUMNS,
        "numerics/gpt2_recursion.csv": RECURSION_COLUMNS,
        "numerics/gpt2_weights.csv": WEIGHT_COLUMNS,
        "counting/bmin_theory.csv": THEORY_COLUMNS,
        "counting/walls.csv": WALL_COLUMNS,
        "counting/geometry.csv": GEOMETRY_COLUMNS,
        "counting/empirical_bmin.csv": EMPIRICAL_COLUMNS,
        "counting/rates.csv": RATE_COLUMNS,
        "counting/exponents.csv": EXPONENT_COLUMNS,
        "counting/reference_slopes.csv": REFERENCE_COLUMNS,
    }
    for name, columns in expected.items():
        assert SCHEMAS[name].names == [*columns, *provenance], name
    training = SCHEMAS["counting/training.csv"].names
    assert training == [*TRAINING_COLUMNS, *provenance[1:]]  # rows carry their own seeds


def test_every_sweep_chunk_table_of_the_workflow_has_its_gathered_schema():
    """The chunk tables that workflow/rules/*.smk registers with `sweep(...)`."""
    registered = {}
    for rules in (ROOT / "workflow" / "rules").glob("*.smk"):
        for table, pattern in re.findall(
            r'"(\w+/\w+)": "(results/[^"]+\{chunk\}[^"]*)"', rules.read_text()
        ):
            registered[table] = pattern
    assert len(registered) == len(CHUNKS)
    for table, pattern in registered.items():
        chunk = schema_for(pattern.replace("{chunk}", "1-of-2"))
        assert chunk is not None, pattern
        assert chunk.names == ["item", *SCHEMAS[f"{table}.csv"].names]
        assert chunk.rule not in ("gather", SCHEMAS[f"{table}.csv"].rule)


def test_schemas_are_found_by_the_path_below_results():
    assert schema_for("results/apjn/measured_curves.csv").name == "apjn/measured_curves.csv"
    assert schema_for("/x/results/counting/rates.csv").rule == "counting_rates"
    assert schema_for("/x/results/counting/rates.parquet").name == "counting/rates.csv"
    for path in ("counting/rates.csv", "/tmp/t.csv", "results/other/rates.csv"):
        assert schema_for(path) is None


def test_a_table_without_a_schema_is_not_checked(tmp_path):
    odd = pd.DataFrame({"x": [np.nan, -1.0]})
    for path in (tmp_path / "t.csv", results_path(tmp_path, "scratch/t.csv")):
        write_table(odd, path)
        assert read_table(path)["x"].isna().sum() == 1


def test_editing_a_schema_reruns_no_job():
    """The schemas check outputs but never change them: no rule lists them as an input."""
    from transformer_stability.sources import script_sources

    for script in (ROOT / "workflow" / "scripts").glob("*.py"):
        assert not any(p.endswith("table_schemas.py") for p in script_sources(script)), script


# --- truncated, empty and hand-edited tables --------------------------------------------------


def test_a_table_cut_mid_row_is_refused_naming_the_file_and_its_rule(tmp_path):
    path = written(tmp_path, "apjn/measured_curves.csv", rows=157)
    data = path.read_bytes()
    cut = int(0.6 * len(data))
    while data[cut - 1 : cut] == b"\n":  # make sure the cut falls inside a row
        cut += 1
    path.write_bytes(data[:cut])
    with pytest.raises(TableError) as error:
        read_table(path)
    message = str(error.value)
    assert str(path) in message
    assert "ends mid-row" in message
    assert "snakemake --forcerun results/apjn/measured_curves.csv" in message
    assert "rule gather rebuilds it" in message


def test_a_table_cut_between_rows_is_refused_by_the_config_row_count(tmp_path):
    config = {
        "apjn": {
            "variants": [{"norm": "ln"}],
            "model": {"depth": 6},
            "measure": {"inits": 1, "samples": 2},
            "images": {"count": 2, "forward_source_block": 2},
        }
    }
    rows = 2 * 2 * 7 + 2 * (7 + 5)  # equiangular: 2 curves of 7 blocks; images: 7 + 5
    path = written(tmp_path, "apjn/measured_curves.csv", rows=rows)
    assert len(read_table(path, config)) == rows
    lines = path.read_text().splitlines(keepends=True)
    kept = int(0.6 * len(lines))
    path.write_text("".join(lines[:kept]))
    with pytest.raises(TableError, match=rf"{kept - 1} rows, fewer than the {rows} the config"):
        read_table(path, config)
    read_table(path)  # without a config, only the rows themselves are checked


@pytest.mark.parametrize("content", [b"", b"placement,readout,source\n"])
def test_an_empty_rates_table_is_refused_with_a_clear_message(tmp_path, content):
    path = results_path(tmp_path, "counting/rates.csv")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(TableError) as error:
        read_table(path)
    message = str(error.value)
    assert str(path) in message and "rule counting_rates rebuilds it" in message
    assert ("empty (0 bytes)" if not content else "missing columns") in message


def test_a_header_only_table_is_refused(tmp_path):
    path = results_path(tmp_path, "counting/rates.csv")
    path.parent.mkdir(parents=True)
    path.write_text(",".join(SCHEMAS["counting/rates.csv"].names) + "\n")
    with pytest.raises(TableError, match=r"no rows \(only a header\)"):
        read_table(path)


def _edited(tmp_path: Path, name: str, edit) -> Path:
    path = results_path(tmp_path, name)
    table = valid_table(SCHEMAS[name], 6)
    changed = edit(table)  # edits in place, or returns the edited table
    table = table if changed is None else changed
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)  # by hand: write_table would refuse it
    return path


def test_a_nan_where_none_is_allowed_is_refused_with_its_row(tmp_path):
    path = _edited(
        tmp_path, "apjn/agreement.csv", lambda t: t.__setitem__("sample", [0, 1, 2, None, 4, 5])
    )
    with pytest.raises(TableError, match=r"column 'sample' has missing values .* row 3 \(line 5"):
        read_table(path)


def test_a_missing_column_is_refused(tmp_path):
    path = _edited(tmp_path, "apjn/agreement.csv", lambda t: t.drop(columns="gmfe"))
    with pytest.raises(TableError, match=r"missing column \['gmfe'\]") as error:
        read_table(path)
    assert "rule apjn_agreement rebuilds it" in str(error.value)


def test_an_out_of_range_value_is_refused(tmp_path):
    path = _edited(tmp_path, "apjn/agreement.csv", lambda t: t.__setitem__("gmfe", 0.5))
    with pytest.raises(TableError, match=r"column 'gmfe' has values < 1 \(e.g. 0.5\)"):
        read_table(path)


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("accuracy", 1.5, "values > 1"),
        ("seed", 1.5, "should hold integers"),
        ("readout", "regresion", "'regresion', not one of"),
        ("B", -np.inf, "values <= 0"),
        ("max_vector_norm", -1.0, "values < 0"),
    ],
)
def test_hand_edited_training_values_are_refused(tmp_path, column, value, problem):
    def edit(table):
        table[column] = table[column].astype(object)
        table.loc[2, column] = value

    with pytest.raises(TableError, match=re.escape(problem)):
        read_table(_edited(tmp_path, "counting/training.csv", edit))


def test_a_row_with_surplus_fields_is_refused(tmp_path):
    path = written(tmp_path, "counting/walls.csv", rows=3)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], *(line + ",7" for line in lines[1:])]) + "\n")
    with pytest.raises(TableError, match="more fields than its header"):
        read_table(path)


def test_nan_and_inf_are_allowed_where_the_computation_makes_them(tmp_path):
    def edit(table):
        table["B"] = np.inf  # unconstrained runs
        table["first_failing_count"] = np.nan  # every count correct

    assert np.isinf(read_table(_edited(tmp_path, "counting/training.csv", edit))["B"]).all()


def test_text_columns_stay_text(tmp_path):
    """A number-like text is read as the text '1', not the number 1."""
    path = _edited(
        tmp_path, "counting/exponents.csv", lambda t: t.__setitem__("training_window", "1")
    )
    assert read_table(path)["training_window"].tolist() == ["1"] * 6


def test_a_chunk_table_needs_its_item_column(tmp_path):
    path = results_path(tmp_path, "apjn/items/curves/1-of-2.csv")
    table = valid_table(SCHEMAS["apjn/measured_curves.csv"], 4)
    write_table(table.assign(item="ln_images")[["item", *table.columns]], path)
    assert read_table(path)["item"].tolist() == ["ln_images"] * 4
    table.to_csv(path, index=False)
    with pytest.raises(TableError, match=r"missing column \['item'\]") as error:
        read_table(path)
    assert "rule apjn_curves rebuilds it" in str(error.value)


# --- write_table ----------------------------------------------------------------------------


def test_an_invalid_table_is_never_written(tmp_path):
    path = results_path(tmp_path, "counting/rates.csv")
    table = valid_table(SCHEMAS["counting/rates.csv"], 4)
    table.loc[2, "fit_points"] = -1
    with pytest.raises(TableError) as error:
        write_table(table, path)
    message = str(error.value)
    assert "refusing to write table" in message and str(path) in message
    assert "rule counting_rates computed" in message and "row 2" in message
    assert not path.parent.exists() or list(path.parent.iterdir()) == []


def test_an_invalid_table_keeps_the_previous_version(tmp_path):
    path = written(tmp_path, "counting/rates.csv", rows=4)
    before = path.read_bytes()
    with pytest.raises(TableError, match="unexpected column"):
        write_table(valid_table(SCHEMAS["counting/rates.csv"], 4).assign(extra=1), path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["rates.csv"]


def test_write_table_checks_the_row_count_the_config_implies(tmp_path):
    config = resolved(TINY)
    rows = SCHEMAS["counting/rates.csv"].rows(config)
    write_table(
        valid_table(SCHEMAS["counting/rates.csv"], rows),
        results_path(tmp_path, "counting/rates.csv"),
        config,
    )
    with pytest.raises(TableError, match=f"{rows - 1} rows, fewer than the {rows}"):
        write_table(
            valid_table(SCHEMAS["counting/rates.csv"], rows - 1),
            tmp_path / "results/counting/rates.csv",
            config,
        )


# --- row counts implied by the config --------------------------------------------------------


@pytest.mark.parametrize("preset", ["default", "tiny", "paper"])
def test_row_counts_match_the_sweep_items(preset):
    """The row counts of the sweep tables agree with the items the workflow enumerates."""
    from transformer_stability.apjn.items import (
        curve_items,
        depth_items,
        sensitivity_items,
        train_items,
    )
    from transformer_stability.counting.items import theory_items
    from transformer_stability.counting.items import train_items as counting_items
    from transformer_stability.numerics.items import group_items, weights_items

    files = {"default": [], "tiny": [TINY], "paper": [str(ROOT / "config" / "paper.yaml")]}
    config = resolved(*files[preset])
    apjn, seed = config["apjn"], config["seed"]

    def rows(name):
        return SCHEMAS[name].rows(config)

    curves = 0
    for item in curve_items(apjn, seed):
        samples = item.settings.samples if item.input == "equiangular" else item.images.count
        curves += samples * (2 * item.spec.depth + 2 - item.forward_source)
    assert rows("apjn/measured_curves.csv") == curves
    for name, items in (
        ("apjn/sensitivity.csv", sensitivity_items(apjn, seed)),
        ("apjn/depth_measured.csv", depth_items(apjn, seed)),
    ):
        assert rows(name) == sum(i.settings.samples * len(i.depths) for i in items)
    assert rows("apjn/trainability.csv") == sum(len(i.runs) for i in train_items(apjn, seed))
    training = counting_items(config["counting"], seed)
    bisected = sum(i.bisection is not None for i in training)
    assert rows("counting/empirical_bmin.csv") == bisected
    assert rows("counting/walls.csv") == len(theory_items(config["counting"], seed))
    groups = group_items(config["numerics"], seed)
    recursion = sum(2 * i.spec.shape()[0] * len(i.precisions) for i in groups)
    assert rows("numerics/gpt2_recursion.csv") == recursion
    assert rows("numerics/gpt2_errors.csv") == 5 * recursion
    weights = weights_items(config["numerics"], seed)
    assert rows("numerics/gpt2_weights.csv") == sum(3 * i.spec.shape()[0] for i in weights)


# --- the pipeline's own tables ----------------------------------------------------------------


@pytest.mark.slow
def test_every_schema_accepts_the_tables_of_a_tiny_run(tiny_run):
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    config = resolved(TINY)
    found = set()
    for path in sorted((tiny_run.workdir / "results").rglob("*.csv")):
        if "benchmarks" in path.parts:
            continue
        schema = schema_for(path)
        assert schema is not None, f"no schema for {path}"
        table = read_table(path, config)  # raises TableError on any problem
        if schema.name in SCHEMAS:
            found.add(schema.name)
            if schema.rows is not None:
                assert len(table) == schema.rows(config)
    assert found == set(SCHEMAS)


def test_an_empty_text_counts_as_missing(tmp_path):
    """An empty string is written as an empty field, which reads back as NaN."""
    table = valid_table(SCHEMAS["numerics/gpt2_weights.csv"], 3).assign(model=["a", "", "c"])
    with pytest.raises(TableError, match=r"column 'model' has missing values .* row 1"):
        write_table(table, results_path(tmp_path, "numerics/gpt2_weights.csv"))
