"""The Snakemake workflow as a user runs it: dry run, config errors, a tiny end-to-end run."""

import json
import re

import pandas as pd
import pytest
from conftest import ROOT, TINY_ARGS, copy_of_run, job_blocks, load_yaml, run_snakemake

from transformer_stability.plotting import listed_code
from transformer_stability.registry import FIGURES as REGISTRY

FIGURES = [figure.pdf for figure in REGISTRY.values()]


@pytest.mark.slow
def test_dry_run_lists_every_figure_target(tmp_path):
    result = run_snakemake(tmp_path, "-n")
    assert result.returncode == 0, result.stderr
    for figure in FIGURES:
        assert figure in result.stdout
    # a dry run computes nothing: it writes only the jobs' settings records (settings_inputs.py)
    results = tmp_path / "results"
    written = {p.relative_to(results) for p in results.rglob("*") if p.is_file()}
    assert written and all(path.parts[0] == "settings" for path in written)
    # the costliest chunks start first, and so do the rules whose files a chunk reads
    priority = _priorities(result.stdout)
    assert min(priority["apjn_curves"]) > max(priority["numerics_gpt2"]) > 1
    assert min(priority["numerics_train"]) == max(priority["numerics_gpt2"])
    assert min(priority["numerics_tokenizer"]) == max(priority["numerics_gpt2"])
    assert set(priority["counting_theory"]) == {1}  # a sweep without a cost model
    assert set(priority["figure"]) == set(priority["gather"]) == {0}


def _priorities(output: str) -> dict[str, list[int]]:
    """Each rule's job priorities as a dry run lists them (0 where a job names none)."""
    found: dict[str, list[int]] = {}
    for rule, block in job_blocks(output):
        value = re.search(r"^    priority: (\d+)$", block, re.MULTILINE)
        found.setdefault(rule, []).append(int(value.group(1)) if value else 0)
    return found


@pytest.mark.slow
def test_bad_config_stops_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apjn:\n  variants:\n    - {norm: batchnorm}\n")
    result = run_snakemake(tmp_path, "--cores", "1", "--configfile", str(bad))
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "config key 'apjn.variants[0].norm'" in message
    assert "allowed values: 'ln', 'derf', 'dyt'" in message
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_tiny_run_writes_every_figure_and_table_then_is_up_to_date(tiny_run, tmp_path):
    run, result = tiny_run.workdir, tiny_run.result
    assert result.returncode == 0, result.stderr[-3000:]
    for figure in FIGURES:
        for suffix in (".pdf", ".png"):
            path = run / figure.replace(".pdf", suffix)
            assert path.stat().st_size > 5_000, path

    curves = pd.read_csv(run / "results/apjn/theory_curves.csv")
    tiny = load_yaml(ROOT / "tests/configs/tiny.yaml")["apjn"]
    assert set(curves["norm"]) == {v["norm"] for v in tiny["variants"]}
    # both directions of every variant agree on the end-to-end value J^{L,0}
    ends = curves[
        ((curves["direction"] == "forward") & (curves["block"] == tiny["model"]["depth"]))
        | ((curves["direction"] == "backward") & (curves["block"] == 0))
    ]
    for _, pair in ends.groupby(["norm", "alpha"], dropna=False):
        assert pair["apjn"].iloc[0] == pytest.approx(pair["apjn"].iloc[1], rel=1e-12)

    depth = pd.read_csv(run / "results/apjn/theory_depth.csv")
    assert depth["depth"].max() == tiny["theory"]["max_depth"]
    laws = pd.read_csv(run / "results/apjn/depth_laws.csv")
    # pre-LN's zeta_- window may lie beyond the tiny depth: then it draws no law line
    assert "sqrt_depth_slope" in set(laws["quantity"])
    assert set(laws["quantity"]) <= {"zeta_minus", "sqrt_depth_slope"}
    asymptotics = pd.read_csv(run / "results/apjn/asymptotics.csv")
    assert set(asymptotics["quantity"]) == {
        "zeta_minus",
        "zeta_plus",
        "sqrt_depth_slope",
        "stretch_exponent",
    }
    tokens = pd.read_csv(run / "results/apjn/preln_tokens.csv")
    assert set(tokens["n_tokens"]) == {*tiny["theory"]["token_counts"], 9}  # 3 x 3 patches
    for log in ("theory_curves", "theory_depth"):
        assert (run / f"results/logs/apjn/{log}.log").exists()

    measured = pd.read_csv(run / "results/apjn/measured_curves.csv")
    assert set(measured["input"]) == {"equiangular", "images"}
    assert (measured["device"] == "cpu").all()
    agreement = pd.read_csv(run / "results/apjn/agreement.csv")
    assert set(agreement["region"]) == {"early", "shallow", "middle", "deep"}
    assert (agreement["gmfe"] >= 1.0).all()
    # the width scan keeps the head dimension; at the configured width its models are A3's
    # image models (same seeds, images and weights): the width sweep leaves them to the curve
    # sweep, and the width fit takes their rows from agreement.csv
    scan = pd.read_csv(run / "results/apjn/width_agreement.csv")
    head_dim = tiny["model"]["width"] // tiny["model"]["heads"]
    widths = {h * head_dim for h in tiny["width_scan"]["heads"]}
    assert set(scan["width"]) == widths - {tiny["model"]["width"]}
    assert set(pd.read_csv(run / "results/apjn/width_excess.csv")["width"]) == widths
    training = pd.read_csv(run / "results/apjn/trainability.csv")
    # (pre-LN + Derf and DyT at one alpha) x 2 multipliers x 2 rates x 2 depths x 1 seed
    assert len(training) == 24 and not training["diverged"].any()

    workdir = copy_of_run(tiny_run, tmp_path / "run")  # the shared run stays as it was made
    again = run_snakemake(workdir, "--cores", "2", *TINY_ARGS)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr

    report = run_snakemake(workdir, *TINY_ARGS, "--report", "report.html")
    assert report.returncode == 0, report.stderr[-3000:]
    html = (workdir / "report.html").read_text(errors="replace")
    for figure in FIGURES:
        assert figure.split("/")[-1] in html
    # one category per study; every figure labelled by what it varies (the models of Study A,
    # the norm placement of Study C, the precision of Study N); the configuration included
    labels = dict(
        re.findall(r'"name": "([\w.]+)", "filename": "[^"]*", "labels": (\{[^}]*\})', html)
    )
    label_of_study = {"apjn": "models", "counting": "placement", "numerics": "precision"}
    for figure in REGISTRY.values():
        found = json.loads(labels[f"{figure.name}.pdf"])
        assert found["figure"] == listed_code(figure.code)
        assert label_of_study[figure.study] in found, figure.name
    for category in ("Study A: signal propagation", "Study C: counting", "Study N: numerics"):
        assert category in html
    assert "forward_source_block" in html
