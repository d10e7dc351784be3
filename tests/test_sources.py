"""Rules list the package modules their scripts import (transformer_stability.code_inputs),
so reruns follow code edits: these closures decide which jobs an edit reruns."""

import json
from pathlib import Path

import pytest
from conftest import ROOT

from transformer_stability.code_inputs import module_closure, script_sources
from transformer_stability.plotting import figures_in
from transformer_stability.registry import FIGURES

SCRIPTS = sorted((ROOT / "workflow" / "scripts").glob("*.py"))


def _modules(paths: list[str]) -> set[str]:
    package = ROOT / "src" / "transformer_stability"
    return {Path(p).resolve().relative_to(package).as_posix() for p in paths}


def test_closures_follow_imports_transitively():
    # apjn/measured_tables.py imports apjn/measure.py, which imports nothing of the package itself
    curves = _modules(script_sources(ROOT / "workflow/scripts/apjn_curves.py"))
    assert {
        "apjn/measured_tables.py",
        "apjn/measure.py",
        "apjn/theory.py",
        "sweep_jobs.py",
    } <= curves
    assert {"__init__.py", "apjn/__init__.py"} <= curves  # packages run before their modules
    assert "apjn/training.py" not in curves


def test_table_models_are_left_out_of_closures_in_a_package_too():
    """Study A's models are a package: importing one of its modules directly still adds no
    model to a closure, so tightening a model reruns nothing."""
    closure = module_closure("transformer_stability.apjn.tables.measured")
    assert closure and not [name for name in closure if "tables" in name.split(".")]


@pytest.mark.parametrize(
    ("script", "not_imported"),
    [
        ("apjn_train.py", {"apjn/measured_tables.py"}),  # measure.py: J^{L,0} at init of each run
        ("apjn_theory_curves.py", {"apjn/measure.py", "apjn/models.py"}),
        # the bound grid comes from the theory's lower bound, not from the constructions
        (
            "counting_training.py",
            {"counting/precision.py", "counting/theory_tables.py", "counting/constructions.py"},
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
    styling = {m for m in closure if m.endswith(("style.py", "pipeline.py")) or "figures" in m}
    styling |= closure & {"plotting.py", "registry.py", "study.py"}
    assert not styling


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_plot_depends_on_its_own_figure_module_only(name):
    """One module per figure: editing one plot or caption redraws that figure alone."""
    own = FIGURES[name].plot.__module__
    closure = set(module_closure(own))
    others = {figure.plot.__module__ for figure in FIGURES.values()} - {own}
    assert own in closure and not closure & others


def _package(root: Path, modules: dict[str, str]) -> str:
    """A figures package `figs_<n>` under `root` with these module sources; its name."""
    name = f"figs_{len(list(root.iterdir()))}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, source in modules.items():
        (root / name / f"{module}.py").write_text(source)
    return name


FIGURE_SOURCE = """\
from transformer_stability.plotting import FigureSpec
FIGURE = FigureSpec("{name}", "{code}", "apjn", {{}}, print, "", dict)
"""


def test_figures_are_found_one_per_module_in_the_natural_order_of_their_codes(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    codes = {"ten": "A10", "two": "A2", "one_theory": "A1-theory", "one": "A1"}
    modules = {m: FIGURE_SOURCE.format(name=m, code=c) for m, c in codes.items()}
    package = _package(tmp_path, {**modules, "_helpers": "WIDTH = 3\n"})
    found = figures_in(package)
    assert [f.code for f in found] == ["A1", "A1-theory", "A2", "A10"]
    assert [f.name for f in found] == ["one", "one_theory", "two", "ten"]
    stray = _package(tmp_path, {**modules, "colours": "WIDTH = 3\n"})
    with pytest.raises(TypeError, match=f"{stray}.colours"):
        figures_in(stray)


def test_stored_imports_count_only_for_the_content_they_were_read_from(tmp_path, monkeypatch):
    """Each start keeps what a file imports, keyed by the file's content: a stored entry is
    used while the file is unchanged, an edited file is parsed again, and the store a start
    leaves behind lets the next one skip the parse."""
    from transformer_stability import code_inputs

    monkeypatch.setattr(code_inputs, "_store_path", lambda: tmp_path / "store.json")
    code_inputs._store.cache_clear()
    source = tmp_path / "script.py"
    source.write_text("from transformer_stability.apjn import measure\n")

    def imports() -> frozenset[str]:
        """What a new start finds: the store read again, written once the start has asked."""
        code_inputs._imports.cache_clear()
        code_inputs._store.cache_clear()
        found = code_inputs._imports(source, "")
        code_inputs._save_store()
        return found

    parsed = imports()
    assert parsed == {"transformer_stability.apjn", "transformer_stability.apjn.measure"}
    store = json.loads((tmp_path / "store.json").read_text())
    (entry,) = store.values()
    entry[1] = ["transformer_stability.stored"]  # what a start would use instead of parsing
    (tmp_path / "store.json").write_text(json.dumps(store))
    assert imports() == {"transformer_stability.stored"}
    source.write_text("import transformer_stability.numerics\n")
    assert imports() == {"transformer_stability.numerics"}
    code_inputs._imports.cache_clear()
    code_inputs._store.cache_clear()
