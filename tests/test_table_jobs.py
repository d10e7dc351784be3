"""Data rules whose script is a `table_job`: the tables it reads and writes are the rule's named
inputs and outputs, and a job writes its tables with their provenance and settings."""

import ast
import re
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import ROOT

from transformer_stability.io import read_table, write_table
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import read_settings
from transformer_stability.table_jobs import table_job
from transformer_stability.tables import Provenance, Table, columns_of

SCRIPTS = ROOT / "workflow" / "scripts"


def _keys(node: ast.expr, module: ast.Module) -> set[str] | None:
    """The keys of a dict literal, or of the module-level dict a name is bound to; None for
    one model (a rule with one output)."""
    if isinstance(node, ast.Name):
        for statement in module.body:
            target = statement.targets[0] if isinstance(statement, ast.Assign) else None
            if isinstance(target, ast.Name) and target.id == node.id:
                node = statement.value
                break
    return {key.value for key in node.keys} if isinstance(node, ast.Dict) else None


def _table_jobs() -> dict[str, tuple[set[str] | None, set[str]]]:
    """Script name -> (the output names its table_job writes, the input names it reads)."""
    found = {}
    for path in sorted(SCRIPTS.glob("*.py")):
        module = ast.parse(path.read_text())
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "table_job":
                inputs = _keys(node.args[3], module) if len(node.args) > 3 else set()
                found[path.name] = (_keys(node.args[2], module), inputs)
    return found


def _rule_of(script: str) -> str:
    """The text of the rule that runs `script`."""
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"\n(?=rule )", path.read_text()):
            if f'"../scripts/{script}"' in rule:
                return rule
    raise AssertionError(f"no rule runs {script}")


def _section(rule: str, section: str) -> str:
    return re.search(rf"\n    {section}:\n((?:        .*\n)+)", rule).group(1)


def _names(rule: str, section: str) -> set[str]:
    return set(re.findall(r"^        (\w+)=", _section(rule, section), flags=re.MULTILINE))


@pytest.mark.parametrize("script", sorted(_table_jobs()))
def test_a_table_rule_names_the_tables_its_script_reads_and_writes(script):
    rule = _rule_of(script)
    outputs, inputs = _table_jobs()[script]
    assert inputs <= _names(rule, "input"), rule
    if outputs is None:  # one model: the rule's one output
        assert len(re.findall(r"^        \S", _section(rule, "output"), re.MULTILINE)) == 1, rule
    else:  # besides its tables a job may save a directory (numerics_sinks: the trained model)
        saved = set(re.findall(r"^        (\w+)=directory\(", _section(rule, "output"), re.M))
        assert _names(rule, "output") - saved == outputs, rule


def test_every_data_rule_outside_the_sweeps_is_a_table_job():
    special = {"figure.py", "gather.py", "claims.py", "numerics_tokenizer.py", "numerics_train.py"}
    sweeps = {p.name for p in SCRIPTS.glob("*.py") if "sweep_jobs import" in p.read_text()}
    assert {p.name for p in SCRIPTS.glob("*.py")} - special - sweeps == set(_table_jobs())


class Measured(Table):
    x: float

    class Config:
        metadata = {"path": "test/measured.csv", "rule": "test"}


class Derived(Table):
    y: float

    class Config:
        metadata = {"path": "test/derived.csv", "rule": "test"}


def _job(tmp_path, inputs: dict, outputs: dict) -> SimpleNamespace:
    return SimpleNamespace(
        log=[str(tmp_path / "job.log")],
        input=SimpleNamespace(**inputs),
        output=SimpleNamespace(**outputs),
        params=SimpleNamespace(settings={"seed": 7, "k": 1}),
    )


def test_a_derived_table_carries_its_source_provenance_and_both_settings(tmp_path):
    source = tmp_path / "results" / "test" / "measured.csv"
    measured = with_provenance(pd.DataFrame({"x": [1.0, 2.0]}), seed=3, device="cuda", dtype="bf16")
    write_table(measured, source, Measured, {"seed": 7, "upstream": "a"})
    out = tmp_path / "results" / "test" / "derived.csv"
    job = _job(tmp_path, {"table": str(source)}, {"table": str(out)})

    def compute(tables, settings):
        assert settings == {"seed": 7, "k": 1, "upstream": "a"}
        return {"table": tables["table"][["x"]].rename(columns={"x": "y"}) * 2}

    table_job(job, compute, {"table": Derived}, {"table": Measured}, carry="table")
    written = read_table(out, Derived)
    assert list(written["y"]) == [2.0, 4.0]
    assert written[columns_of(Provenance)].iloc[0].to_dict() == {
        "seed": 3,
        "device": "cuda",
        "dtype": "bf16",
        "versions": measured["versions"].iloc[0],
    }
    assert read_settings(out) == {"seed": 7, "k": 1, "upstream": "a"}


def test_a_computed_table_records_a_cpu_float64_computation_from_the_seed(tmp_path):
    out = tmp_path / "results" / "test" / "derived.csv"
    job = _job(tmp_path, {}, {})
    job.output = [str(out)]
    table_job(job, lambda tables, settings: pd.DataFrame({"y": [float(settings["k"])]}), Derived)
    written = read_table(out, Derived)
    assert written[["y", "seed", "device", "dtype"]].iloc[0].to_list() == [1.0, 7, "cpu", "float64"]
    assert read_settings(out) == {"seed": 7, "k": 1}
