"""Tables checked against their models on write and on read (each study's tables, io.py): a
truncated, empty or hand-edited table is refused with a message naming the file, every problem,
the rule that rebuilds it and the `--forcerun` fix; a computing bug fails before anything is
written; every model accepts what the pipeline writes, and no table has a column its model
lacks."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest
from conftest import ROOT, SCHEMA_PATH, TINY, deep_merge, load_yaml

from transformer_stability.apjn.tables import Agreement, MeasuredCurves
from transformer_stability.config import validate_config
from transformer_stability.counting.tables import Exponents, Rates, Training, Walls
from transformer_stability.io import read_table, write_table
from transformer_stability.registry import TABLES, table_model
from transformer_stability.settings import read_record, sidecar
from transformer_stability.tables import Table, TableError, columns_of, meta, table_schema
from transformer_stability.tables_doc import document


def tiny_config() -> dict:
    """The tiny preset as the workflow's jobs see it: over config.yaml, with the defaults."""
    config = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(Path(TINY)))
    return validate_config(config, SCHEMA_PATH)


def _value(column: pa.Column, row: int):
    """A valid value of `column`, varying with the row."""
    stats = {k: v for c in column.checks for k, v in c.statistics.items()}
    kind = str(column.dtype)
    if "allowed_values" in stats:
        values = list(stats["allowed_values"])
        return values[row % len(values)]
    if kind.startswith("str"):
        return f"v{row % 3}"
    if kind == "bool":
        return bool(row % 2)
    low = stats.get("min_value", 0.0)
    high = stats.get("max_value", low + 10.0)
    value = low + (high - low) * ((row % 7) + 1) / 8  # strictly inside the range
    return int(np.ceil(value)) if kind == "int64" else float(value)


def valid_table(model: type[Table], rows: int, chunk: bool = False) -> pd.DataFrame:
    """A table that `model` accepts, with a NaN in every column that allows one."""
    columns = table_schema(model, chunk).columns
    table = pd.DataFrame({name: [_value(c, r) for r in range(rows)] for name, c in columns.items()})
    for name, column in columns.items():
        if column.nullable and rows > 1:
            table.loc[1, name] = np.nan
    return table


def written(tmp_path: Path, model: type[Table], rows: int = 10) -> Path:
    path = tmp_path / "results" / meta(model)["path"]
    write_table(valid_table(model, rows), path, model)
    return path


def edited(tmp_path: Path, model: type[Table], edit) -> Path:
    """A valid table of `model`, edited, written by hand (write_table would refuse it)."""
    path = tmp_path / "results" / meta(model)["path"]
    table = valid_table(model, 6)
    changed = edit(table)  # edits in place, or returns the edited table
    path.parent.mkdir(parents=True, exist_ok=True)
    (table if changed is None else changed).to_csv(path, index=False)
    return path


def refusal(path: Path, model: type[Table], config=None, chunk: bool = False) -> str:
    with pytest.raises(TableError) as error:
        read_table(path, model, config, chunk=chunk)
    return str(error.value)


# --- the models and the registry -------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(TABLES))
def test_every_model_round_trips_a_valid_table(tmp_path, path):
    model = TABLES[path]
    table = read_table(written(tmp_path, model), model)
    assert list(table.columns) == list(table_schema(model).columns)
    assert len(table) == 10


def test_every_table_ends_with_its_provenance_once():
    for model in TABLES.values():
        columns = list(table_schema(model).columns)
        assert columns[-3:] == ["device", "dtype", "versions"], model
        assert columns.count("seed") == 1, model
    assert columns_of(Training).index("seed") < len(columns_of(Training))  # its own seeds


def test_models_are_found_by_the_path_below_results():
    assert table_model("results/apjn/measured_curves.csv") is MeasuredCurves
    assert table_model("/x/results/counting/rates.parquet") is Rates
    for path in (
        "counting/rates.csv",
        "/tmp/t.csv",
        "results/apjn/items/measured_curves/1-of-2.csv",
    ):
        assert table_model(path) is None
    for path, model in TABLES.items():
        # a study's table is its own; the claims table, of every study, is the shared layer's
        owner = path.split("/")[0] if "/" in path else "claims"
        assert model.__module__.split(".")[1] == owner, path


def test_the_committed_table_docs_are_current():
    """Regenerate with `python -m transformer_stability.tables_doc > docs/tables.md`."""
    assert (ROOT / "docs" / "tables.md").read_text() == document()


def test_every_column_has_a_description():
    for model in TABLES.values():
        for name, column in table_schema(model).columns.items():
            assert column.description, f"{model.__name__}.{name}"


CURVES_SCRIPT = ROOT / "workflow" / "scripts" / "apjn_curves.py"


def test_editing_a_model_reruns_no_job():
    """The models check outputs but never change them: no rule lists them as an input."""
    from transformer_stability.code_inputs import script_sources

    for script in (ROOT / "workflow" / "scripts").glob("*.py"):
        sources = script_sources(script)
        names = {Path(p).name for p in sources}
        in_tables_package = [p for p in sources if Path(p).parent.name == "tables"]
        assert not names & {"tables.py", "registry.py"} and not in_tables_package, script
    # the modules that compute tables (theory_tables.py, measured_tables.py, ...) are inputs
    assert any(Path(p).name == "measured_tables.py" for p in script_sources(CURVES_SCRIPT))


# --- truncated, empty and hand-edited tables --------------------------------------------------


def test_a_table_cut_mid_row_is_refused_naming_the_file_its_rule_and_the_fix(tmp_path):
    path = written(tmp_path, MeasuredCurves, rows=157)
    data = path.read_bytes()
    cut = int(0.6 * len(data))
    while data[cut - 1 : cut] == b"\n":  # make sure the cut falls inside a row
        cut += 1
    path.write_bytes(data[:cut])
    message = refusal(path, MeasuredCurves)
    assert str(path) in message and "ends mid-row" in message
    assert "snakemake --forcerun results/apjn/measured_curves.csv" in message
    assert "rule gather rebuilds it" in message


def test_a_table_cut_between_rows_is_refused_by_the_config_row_count(tmp_path):
    config = tiny_config()
    rows = Agreement.rows(config)
    path = tmp_path / "results" / meta(Agreement)["path"]
    write_table(valid_table(Agreement, rows), path, Agreement, config)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-3]))
    message = refusal(path, Agreement, config)
    assert f"{rows - 3} rows, fewer than the {rows} the config implies" in message
    assert refusal(path, Agreement) == message  # without one: the settings recorded beside it


@pytest.mark.parametrize("chunk", [False, True])
def test_a_table_cut_between_rows_is_refused_by_the_rows_written(tmp_path, chunk):
    """A table whose config fixes no row count (a gathered sweep's, or a chunk of it): the
    sidecar records the rows written, and a cut at a row boundary, which parses, is refused."""
    assert MeasuredCurves.rows(tiny_config()) is None
    path = tmp_path / "results" / "apjn" / "items" / "measured_curves" / "1-of-2.csv"
    if not chunk:
        path = tmp_path / "results" / meta(MeasuredCurves)["path"]
    write_table(valid_table(MeasuredCurves, 12, chunk), path, MeasuredCurves, chunk=chunk)
    assert read_record(path) == {"rows": 12}
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    message = refusal(path, MeasuredCurves, chunk=chunk)
    assert str(path) in message and "11 rows, fewer than the 12 written" in message
    sidecar(path).unlink()  # a table made before rows were recorded: read as it is
    assert len(read_table(path, MeasuredCurves, chunk=chunk)) == 11


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "the file is empty (0 bytes)"), (b"placement,readout,source\n", "missing columns")],
)
def test_an_empty_table_is_refused_with_a_clear_message(tmp_path, content, problem):
    path = tmp_path / "results" / meta(Rates)["path"]
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    message = refusal(path, Rates)
    assert str(path) in message and "rule counting_rates rebuilds it" in message
    assert problem in message


def test_a_header_only_table_is_refused(tmp_path):
    path = tmp_path / "results" / meta(Rates)["path"]
    path.parent.mkdir(parents=True)
    path.write_text(",".join(table_schema(Rates).columns) + "\n")
    assert "no rows (only a header)" in refusal(path, Rates)


def test_a_nan_where_none_is_allowed_is_refused_with_its_row_and_line(tmp_path):
    missing = "has missing values (empty or NaN): 1 row, first at row 3 (line 5 of the file)"
    for column, values in (("sample", [0, 1, 2]), ("direction", ["forward"] * 3)):
        path = edited(
            tmp_path, Agreement, lambda t, c=column, v=values: t.__setitem__(c, v + [None] + v[:2])
        )
        assert f"column '{column}' {missing}" in refusal(path, Agreement)


def test_a_missing_column_is_refused(tmp_path):
    path = edited(tmp_path, Agreement, lambda t: t.drop(columns="gmfe"))
    message = refusal(path, Agreement)
    assert "missing column ['gmfe']" in message and "rule apjn_agreement rebuilds it" in message


def test_columns_out_of_order_are_refused(tmp_path):
    path = edited(tmp_path, Walls, lambda t: t[["readout", *t.columns.drop("readout")]])
    assert "columns out of order" in refusal(path, Walls)


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("accuracy", 1.5, "column 'accuracy' has values > 1 (e.g. 1.5): 1 row, first at row 2"),
        ("seed", 1.5, "column 'seed' should hold int64"),
        ("readout", "regresion", "column 'readout' has values not one of"),
        ("B", -np.inf, "column 'B' has values <= 0"),
        ("max_vector_norm", -1.0, "column 'max_vector_norm' has values < 0 (e.g. -1.0)"),
        ("accuracy", np.inf, "column 'accuracy' has infinite values"),
    ],
)
def test_hand_edited_values_are_refused(tmp_path, column, value, problem):
    def edit(table):
        table[column] = table[column].astype(object)
        table.loc[2, column] = value

    assert problem in refusal(edited(tmp_path, Training, edit), Training)


def test_every_problem_is_listed(tmp_path):
    def edit(table):
        table["accuracy"] = 2.0
        table["steps"] = -1

    message = refusal(edited(tmp_path, Training, edit), Training)
    assert "column 'accuracy'" in message and "column 'steps' has values < 0" in message


def test_a_row_with_surplus_fields_is_refused(tmp_path):
    path = written(tmp_path, Walls, rows=3)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], *(line + ",7" for line in lines[1:])]) + "\n")
    assert "more fields than its header" in refusal(path, Walls)


def test_nan_and_inf_are_allowed_where_the_computation_makes_them(tmp_path):
    def edit(table):
        table["B"] = np.inf  # unconstrained runs
        table["first_failing_count"] = np.nan  # every count correct

    assert np.isinf(read_table(edited(tmp_path, Training, edit), Training)["B"]).all()


def test_text_columns_stay_text(tmp_path):
    """A number-like text is read as the text '1', not the number 1."""
    path = edited(tmp_path, Exponents, lambda t: t.__setitem__("training_window", "1"))
    assert read_table(path, Exponents)["training_window"].tolist() == ["1"] * 6


def test_an_integer_valued_float_column_is_a_float_column(tmp_path):
    path = edited(tmp_path, Training, lambda t: t.__setitem__("accuracy", 1))  # written "1"
    assert read_table(path, Training)["accuracy"].tolist() == [1] * 6


def test_a_chunk_table_needs_its_item_column(tmp_path):
    path = tmp_path / "results" / "apjn" / "items" / "measured_curves" / "1-of-2.csv"
    table = valid_table(MeasuredCurves, 4, chunk=True).assign(item="ln_images")
    write_table(table, path, MeasuredCurves, chunk=True)
    assert read_table(path, MeasuredCurves, chunk=True)["item"].tolist() == ["ln_images"] * 4
    table.drop(columns="item").to_csv(path, index=False)
    with pytest.raises(TableError) as error:
        read_table(path, MeasuredCurves, chunk=True)
    message = str(error.value)
    assert "missing column ['item']" in message and "chunk rule of its sweep" in message
    assert "--forcerun results/apjn/items/measured_curves/1-of-2.csv" in message


def test_a_table_without_a_model_is_not_checked(tmp_path):
    odd = pd.DataFrame({"x": [np.nan, -1.0]})
    write_table(odd, tmp_path / "t.csv")
    assert read_table(tmp_path / "t.csv")["x"].isna().sum() == 1


# --- write_table ------------------------------------------------------------------------------


def test_an_invalid_table_is_never_written(tmp_path):
    path = tmp_path / "results" / meta(Rates)["path"]
    table = valid_table(Rates, 4)
    table.loc[2, "fit_points"] = -1
    with pytest.raises(TableError) as error:
        write_table(table, path, Rates)
    message = str(error.value)
    assert "refusing to write table" in message and str(path) in message
    assert "rule counting_rates computed" in message and "row 2" in message
    assert not path.parent.exists() or list(path.parent.iterdir()) == []


def test_an_invalid_table_keeps_the_previous_version(tmp_path):
    path = written(tmp_path, Rates, rows=4)
    before = path.read_bytes()
    with pytest.raises(TableError, match="unexpected column"):
        write_table(valid_table(Rates, 4).assign(extra=1), path, Rates)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["rates.csv", "rates.settings.json"]
    assert read_record(path) == {"rows": 4}  # the record of the version kept


def test_an_empty_text_counts_as_missing(tmp_path):
    """An empty string is written as an empty field, which reads back as NaN."""
    table = valid_table(Walls, 3).assign(placement=["none", "", "none"])
    with pytest.raises(TableError, match=r"column 'placement' has empty text .* row 1"):
        write_table(table, tmp_path / "walls.csv", Walls)


# --- the pipeline's own tables ----------------------------------------------------------------


@pytest.mark.slow
def test_every_table_of_a_tiny_run_matches_its_model(tiny_run):
    """Every table under results/ is checked against its model (chunk tables against their
    gathered table's), every model has its table, and the columns are the model's."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    config = tiny_config()
    results = tiny_run.workdir / "results"
    gathered = {}
    for path in sorted(results.rglob("*.csv")):
        if "benchmarks" in path.parts:
            continue
        key = path.relative_to(results).as_posix()
        if "items" in path.parts:
            gathered.setdefault(key.split("/")[2], []).append(path)
            continue
        model = TABLES[key]
        table = read_table(path, model, config)  # raises TableError on any problem
        assert list(table.columns) == list(table_schema(model).columns), key
    assert set(TABLES) == {
        p.relative_to(results).as_posix()
        for p in results.rglob("*.csv")
        if "items" not in p.parts and "benchmarks" not in p.parts
    }
    assert gathered  # the chunk tables: each sweep's chunks hold its gathered model's columns
    for chunks in gathered.values():
        for path in chunks:
            read_table(path, chunk_model(path), chunk=True)


def chunk_model(path: Path) -> type[Table]:
    """The gathered table's model of a sweep's chunk table, by the chunk's columns."""
    header = path.read_text().split("\n", 1)[0].split(",")
    assert header[0] == "item", path
    models = [m for m in TABLES.values() if list(table_schema(m).columns) == header[1:]]
    assert models, path
    return models[0]


@pytest.mark.slow
def test_any_table_of_a_tiny_run_cut_at_a_row_boundary_is_refused(tiny_run, tmp_path):
    """Every CSV the tiny run writes (gathered and derived tables, the sweeps' chunk tables, the
    claims), copied with its sidecar and cut before its last row, still parses: its
    reader refuses it, naming the rows found and written and the command that rebuilds it."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    results = tiny_run.workdir / "results"
    tables = [p for p in sorted(results.rglob("*.csv")) if "benchmarks" not in p.parts]
    assert len(tables) > 60
    for path in tables:
        copy = tmp_path / path.relative_to(tiny_run.workdir)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sidecar(path), sidecar(copy))
        lines = path.read_text().splitlines(keepends=True)
        copy.write_text("".join(lines[:-1]))
        chunk = "items" in path.parts
        model = chunk_model(path) if chunk else table_model(path)
        rows = len(lines) - 1
        message = refusal(copy, model, chunk=chunk)
        assert f"{rows - 1} rows, fewer than the {rows} written" in message, path
        assert "--forcerun" in message, path
