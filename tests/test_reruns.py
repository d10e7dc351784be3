"""Reruns follow changes: after the tiny run, editing one package module or one config key makes
Snakemake plan exactly the jobs that depend on it (dry runs in a copy of the tiny run)."""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import (
    ROOT,
    TINY_ARGS,
    TINY_CORES,
    announced_jobs,
    copy_of_run,
    run_snakemake,
    sources_lock,
)

from transformer_stability.registry import SWEEPS, study_figures

PACKAGE = ROOT / "src" / "transformer_stability"


@contextlib.contextmanager
def edited(module: str):
    """The module with one comment line appended (a real content change, which Snakemake
    checks by checksum), restored byte for byte and with its mtime afterwards; no other
    test's workflow run sees it (conftest.sources_lock)."""
    path = PACKAGE / module
    original, stat = path.read_bytes(), path.stat()
    with sources_lock(exclusive=True):
        try:
            path.write_bytes(original + b"# an edit\n")
            yield
        finally:
            path.write_bytes(original)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def planned(workdir: Path, *configfiles: str) -> list[tuple[str, dict[str, str]]]:
    """The jobs a dry run of the tiny config (plus `configfiles`) plans, `all` left out."""
    args = ["-n", "--cores", TINY_CORES, *TINY_ARGS, *configfiles]
    result = run_snakemake(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return [job for job in announced_jobs(result.stdout) if job[0] != "all"]


def _rules(jobs) -> set[str]:
    return {rule for rule, _ in jobs}


def _figures(jobs) -> set[str]:
    return {wildcards["figure"] for rule, wildcards in jobs if rule == "figure"}


@pytest.fixture(scope="module")
def workdir(tiny_run, tmp_path_factory) -> Path:
    copy = copy_of_run(tiny_run, tmp_path_factory.mktemp("reruns") / "run")
    assert planned(copy) == [], "the copy of the tiny run is not up to date"
    return copy


@pytest.mark.slow
def test_editing_the_apjn_estimator_reruns_the_apjn_measurements_and_their_figures(workdir):
    with edited("apjn/measure.py"):
        jobs = planned(workdir)
    # the training runs record the estimator's J^{L,0} of each model at init
    measured = {"apjn_curves", "apjn_width", "apjn_end_to_end", "apjn_train", "apjn_finite_n"}
    derived = {"gather", "apjn_agreement", "apjn_width_fit", "apjn_tuning", "apjn_finite_n_compare"}
    derived |= {"apjn_sensitivity_ratios"}
    derived |= {"figure", "claims"}
    assert _rules(jobs) == measured | derived
    expected = {"apjn_permsym", "apjn_images", "apjn_gmfe", "apjn_token_stats", "apjn_width_scan"}
    trained = {"apjn_trainability", "apjn_trainability_theory", "apjn_tuning_contrasts"}
    finite_n = {"apjn_finite_n"}
    assert _figures(jobs) == expected | trained | finite_n | {
        "apjn_sensitivity",
        "apjn_depth_scaling",
    }


@pytest.mark.slow
@pytest.mark.parametrize("study", ["apjn", "numerics", "counting"])
def test_editing_a_figure_module_redraws_that_figure_alone(workdir, study):
    figure = study_figures(study)[0]
    module = figure.plot.__module__
    with edited(module.removeprefix("transformer_stability.").replace(".", "/") + ".py"):
        jobs = planned(workdir)
    assert _rules(jobs) == {"figure"}
    assert _figures(jobs) == {figure.name}


@pytest.mark.slow
def test_editing_the_apjn_theory_fits_reruns_no_measurement_and_no_training(workdir):
    """The fits of the mean-field tables (apjn/theory_tables.py) feed the theory tables, their
    figures and the claims; no measurement or training job imports them."""
    with edited("apjn/theory_tables.py"):
        jobs = planned(workdir)
    assert _rules(jobs) == {"apjn_theory_curves", "apjn_theory_depth", "figure", "claims"}
    assert not _rules(jobs) & set(SWEEPS)


@pytest.mark.slow
def test_changing_the_theory_widths_does_not_retrain(workdir, tmp_path):
    wider = tmp_path / "wider.yaml"
    wider.write_text(yaml.safe_dump({"counting": {"theory": {"widths": [8, 16]}}}))
    jobs = planned(workdir, str(wider))
    assert "counting_theory" in _rules(jobs)
    assert not _rules(jobs) & {"counting_training", "apjn_train", "numerics_gpt2"}


# One config change per mechanism by which a setting reaches a table (settings.py): a rule's own
# settings (the acceptance case), a wildcard job's own section, a derived rule's own key, a
# sweep's items and its gather, and a presentation-only key. The claims rule, which tests the
# claims on every table with every study's section, replans on any of them and is left out.
CHANGES = {
    "counting.geometry_length": (
        {"counting": {"geometry_length": 4}},
        {"counting_geometry", "figure"},
        {"counting_geometry"},
    ),
    "numerics.softmax.samples": (
        {"numerics": {"softmax": {"samples": 3}}},
        {"numerics_bounds", "figure"},
        {"numerics_softmax", "numerics_sinks"},  # N9 draws the synthetic sinks beside the model's
    ),
    "counting.theory.fit_points": (
        {"counting": {"theory": {"fit_points": 3}}},
        {"counting_rates", "counting_exponents", "figure"},
        {"counting_bmin", "counting_constrained", "counting_exponents", "counting_precision"},
    ),
    "apjn.measure.sweep_samples": (
        {"apjn": {"measure": {"sweep_samples": 2}}},
        {"apjn_end_to_end", "gather", "apjn_sensitivity_ratios", "figure"},
        {"apjn_depth_scaling", "apjn_sensitivity"},
    ),
    "studies": ({"studies": ["apjn", "counting"]}, set(), set()),
}


@pytest.fixture(scope="module")
def results_alone(tiny_run, tmp_path_factory) -> Path:
    """The tiny run's results copied without Snakemake's metadata (.snakemake/), as results
    brought back from a cluster are: only the tables' own settings records can tell a change."""
    copy = copy_of_run(tiny_run, tmp_path_factory.mktemp("results_alone") / "run")
    shutil.rmtree(copy / ".snakemake")
    assert planned(copy) == [], "the copied results are not up to date"
    return copy


@pytest.mark.slow
@pytest.mark.workflow  # on a copy of the tiny run, taken by name below
@pytest.mark.parametrize("metadata", [True, False], ids=["with_metadata", "results_alone"])
@pytest.mark.parametrize("key", sorted(CHANGES))
def test_changing_a_setting_replans_the_rules_whose_tables_depend_on_it(
    request, tmp_path, key, metadata
):
    change, rules, figures = CHANGES[key]
    run = request.getfixturevalue("workdir" if metadata else "results_alone")
    override = tmp_path / "change.yaml"
    override.write_text(yaml.safe_dump(change))
    jobs = planned(run, str(override))
    if not metadata:
        assert planned(run) == [], "a dry run under another setting left a trigger behind"
    assert _rules(jobs) - {"claims"} == rules
    assert _figures(jobs) == figures
    experiments = {w["experiment"] for rule, w in jobs if rule == "numerics_bounds"}
    assert experiments <= {"softmax"}  # a bound experiment reruns on its own section only


def _checkout_copy(destination: Path) -> Path:
    """The repository's files (tracked and new, not ignored) copied to `destination`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        cwd=ROOT,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    return destination


def _run_in_checkout(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake started in `checkout` as a user starts it there, importing its own package."""
    # a table rule and a sweep rule of the tiny config, seconds each
    until = ["--until", "apjn_theory_curves", "apjn_finite_n"]
    command = [sys.executable, "-m", "snakemake", "--cores", TINY_CORES, *TINY_ARGS]
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    result = subprocess.run(
        [*command, *until, *args], capture_output=True, text=True, cwd=checkout, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.slow
@pytest.mark.workflow  # it runs two of the tiny config's jobs
def test_a_moved_checkout_replans_nothing(tmp_path):
    """Jobs record their input paths; code inputs inside the checkout are named relative to it,
    so a checkout moved (or copied with its results and .snakemake) is up to date where it lands."""
    checkout = _checkout_copy(tmp_path / "checkout")
    ran = announced_jobs(_run_in_checkout(checkout).stderr)
    assert _rules(ran) == {"apjn_theory_curves", "apjn_finite_n"}
    moved = checkout.rename(tmp_path / "moved")
    replanned = announced_jobs(_run_in_checkout(moved, "-n").stdout)
    assert not replanned, f"planned again after the move: {replanned}"


@pytest.mark.slow
def test_editing_the_cost_models_reruns_nothing(workdir):
    """The cost models set requests, chunks and segments, never a table's value: recalibrating
    them (work.py's rates, each study's costs.py) plans no job, although every sweep item is
    costed by them."""
    modules = ["work.py", "apjn/costs.py", "numerics/costs.py", "counting/costs.py"]
    with contextlib.ExitStack() as stack:
        for module in modules:
            stack.enter_context(edited(module))
        assert planned(workdir) == []


@pytest.mark.slow
def test_editing_the_bootstrap_reruns_no_measurement_and_no_training(workdir):
    """The intervals (resampling.py) are computed from the measured tables, never inside a
    sweep: the width scan's per-curve GMFE lives apart from its averages (agreement.py,
    agreement_intervals.py)."""
    with edited("resampling.py"):
        jobs = planned(workdir)
    assert "claims" in _rules(jobs)
    assert not _rules(jobs) & set(SWEEPS), _rules(jobs)
