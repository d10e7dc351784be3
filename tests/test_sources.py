"""Rules list the package modules their scripts import (transformer_stability.sources), so reruns
follow code edits: these closures decide which jobs an edit reruns."""

from pathlib import Path

import pytest
from conftest import ROOT

from transformer_stability.registry import FIGURES
from transformer_stability.sources import module_sources, script_sources

SCRIPTS = sorted((ROOT / "workflow" / "scripts").glob("*.py"))


def _modules(paths: list[str]) -> set[str]:
    package = ROOT / "src" / "transformer_stability"
    return {Path(p).relative_to(package).as_posix() for p in paths}


def test_closures_follow_imports_transitively():
    # apjn/experiment.py imports apjn/measure.py, which imports nothing of the package itself
    curves = _modules(script_sources(ROOT / "workflow/scripts/apjn_curves.py"))
    assert {"apjn/experiment.py", "apjn/measure.py", "apjn/theory.py", "jobs.py"} <= curves
    assert {"__init__.py", "apjn/__init__.py"} <= curves  # packages run before their modules
    assert "apjn/train.py" not in curves


@pytest.mark.parametrize(
    ("script", "not_imported"),
    [
        ("apjn_train.py", {"apjn/experiment.py"}),  # measure.py: J^{L,0} at init of each run
        ("apjn_theory_curves.py", {"apjn/measure.py", "apjn/models.py"}),
        # the bound grid comes from the theory's lower bound, not from the constructions
        (
            "counting_train.py",
            {"counting/precision.py", "counting/study.py", "counting/constructions.py"},
        ),
    ],
)
def test_a_job_does_not_depend_on_code_it_never_runs(script, not_imported):
    assert not _modules(script_sources(ROOT / "workflow/scripts" / script)) & not_imported


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.name != "figure.py"], ids=str)
def test_computing_jobs_never_depend_on_figure_styling(script):
    """Restyling a figure (figures and style modules, plotting) must not rerun a measurement;
    nor may a study's pipeline declaration or the registry, which import the figures."""
    closure = _modules(script_sources(script))
    styling = {m for m in closure if m.endswith(("figures.py", "style.py", "pipeline.py"))}
    styling |= closure & {"plotting.py", "registry.py", "study.py"}
    assert not styling


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_plot_depends_on_its_own_figures_module_only(name):
    closure = _modules(module_sources(FIGURES[name].plot.__module__))
    study = FIGURES[name].study
    assert f"{study}/figures.py" in closure
    others = {f"{s}/figures.py" for s in ("apjn", "numerics", "counting")} - {f"{study}/figures.py"}
    assert not closure & others
