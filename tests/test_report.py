"""`make report` describes the run that made the figures: after a one-figure run it plans no job
and reports exactly that figure, as PDF and PNG, with captions and the configuration of that run."""

import json
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, TINY, load_yaml, run_snakemake

from transformer_stability.report import report_command

FIGURE = "apjn_theory_curves"


@pytest.mark.slow
def test_report_after_a_one_figure_run_holds_that_figure_for_that_run(tmp_path):
    run = run_snakemake(
        tmp_path, "--cores", "2", "--configfile", TINY, "--", f"results/figures/{FIGURE}.pdf"
    )
    assert run.returncode == 0, run.stderr[-3000:]
    recorded = yaml.safe_load((tmp_path / "results/config.yaml").read_text())
    tiny = load_yaml(ROOT / "tests/configs/tiny.yaml")
    assert recorded["apjn"]["model"]["width"] == tiny["apjn"]["model"]["width"]

    command = report_command(ROOT / "Snakefile", tmp_path)
    report_args = ("--report", str((tmp_path / "results/report.html").resolve()))
    planned = subprocess.run(
        ["-n" if c == "--report" else c for c in command if c != report_args[1]],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "Nothing to be done" in planned.stdout + planned.stderr

    report = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (tmp_path / "results/report.html").read_text(errors="replace")
    names = set(re.findall(r'"name": "([\w.]+)", "filename"', html))
    assert names == {f"{FIGURE}.pdf", f"{FIGURE}.png"}
    width = tiny["apjn"]["model"]["width"]
    assert f"ViT of width\\n{width} and depth" in html or f"ViT of width {width} and depth" in html
    assert json.dumps(width) in html and "384" not in re.findall(r"width\D{0,12}(\d+)", html)


def test_report_needs_a_recorded_run(tmp_path):
    with pytest.raises(SystemExit, match="no .*results/config.yaml"):
        report_command(ROOT / "Snakefile", tmp_path)
    assert sys.executable  # the command is built with this interpreter
