"""bench/paper_scale.py, the paper-scale meter, and bench/gpu_smoke.sh, which runs it on a GPU
node: every planned rule's item runs through its chunk job's function, in a stated reduced form
on the CPU, and is recorded beside the cost model's prediction (here at the tiny config's
scale)."""

import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, TINY

from transformer_stability.registry import SWEEPS

sys.path.insert(0, str(ROOT / "bench"))
from paper_scale import load_config, measured_form, record, rule_items, run  # noqa: E402

CPU = torch.device("cpu")


@pytest.mark.slow
@pytest.mark.workflow  # it runs two sweeps' items end to end, each in a job's process
def test_gpu_smoke_runs_the_meter_item_by_item_and_records_apart(tmp_path):
    results, records = tmp_path / "results.md", tmp_path / "records.json"
    before = (ROOT / "bench/RESULTS.md").read_bytes()
    command = ["bash", "bench/gpu_smoke.sh", "--device", "cpu", "--configfile", TINY]
    rules = ["--rules", "apjn_width", "counting_training"]
    run_ = subprocess.run(
        [*command, *rules, "--results", str(results), "--json", str(records)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert run_.returncode == 0, run_.stderr[-3000:]
    rows = json.loads(records.read_text())
    assert [row["rule"] for row in rows] == ["apjn_width", "counting_training"]
    for row in rows:
        assert row["form"] == "paper item" and row["work_ratio"] == 1.0, row  # --full
        assert row["cpu_s"] > 0 and 0 < row["wall_s"] == row["paper_wall_s"], row
        assert 100 < row["host_mib"] < row["predicted_host_mib"], row  # the model bounds it
        assert row["gpu_mib"] is None
        assert f"| `{row['rule']}` | `{row['item']}` | paper item |" in results.read_text()
    assert (ROOT / "bench/RESULTS.md").read_bytes() == before


@pytest.mark.slow
def test_every_rules_reduced_form_runs_and_extrapolates_by_its_work():
    items = rule_items(load_config(ROOT / TINY))
    assert {rule for rule, _, _ in items} == {
        sweep.rule for sweep in SWEEPS.values() if sweep.work is not None
    }
    for rule, item, table_of in items:
        reduced, form = measured_form(rule, item, full=False)
        row = record(rule, item, reduced, form, run(rule, reduced, table_of, CPU))
        assert row["work_ratio"] >= 1 and row["paper_wall_s"] >= row["wall_s"], row
        assert row["paper_host_mib"] >= row["predicted_host_mib"] * 0.99, row


@pytest.mark.slow
def test_every_paper_items_reduced_form_is_less_work_of_the_same_kind_in_the_same_pieces():
    for rule, item, _ in rule_items(load_config(ROOT / "config/paper.yaml")):
        reduced, form = measured_form(rule, item, full=False)
        assert form != "paper item" and type(reduced) is type(item), rule
        small, big = SWEEPS[rule].work(reduced), SWEEPS[rule].work(item)
        assert small.flop < big.flop or small.steps < big.steps, rule
        settings = getattr(getattr(reduced, "curve", reduced), "settings", None)
        if settings is not None:  # a Study A measurement: two pieces, the paper's piece size
            spec = getattr(reduced, "curve", reduced).spec
            assert spec.depth == settings.chunk_blocks + 1, rule
        assert measured_form(rule, item, full=True) == (item, "paper item")
