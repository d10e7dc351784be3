"""The shared layer knows no study: only registry.py assembles the studies, and a study never
reaches into another. Imports are read statically (ast), so a function-level import counts."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "transformer_stability"
STUDIES = ("apjn", "numerics", "counting")
SHARED = sorted(p for p in PACKAGE.glob("*.py") if p.name not in ("registry.py", "__init__.py"))
# command-line entry points that describe every study, through the registry only
READS_THE_REGISTRY = {"tables_doc.py", "cluster_plan.py", "check_config.py", "report.py"}


def _package(path: Path) -> str:
    return path.parent.relative_to(PACKAGE.parent).as_posix().replace("/", ".")


def _imported(path: Path, package: str) -> set[str]:
    """Every module name `path` (a module of `package`) imports, relative imports resolved."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _studies_in(names: set[str]) -> set[str]:
    found = {name.split(".")[1] for name in names if name.startswith("transformer_stability.")}
    return found & {*STUDIES, "registry"}


def test_the_shared_modules_are_the_expected_ones():
    """The shared modules the registry names are among those checked (a rename would skip them)."""
    wanted = {"config", "io", "sweeps", "sweep_jobs", "table_jobs", "report", "plotting", "study"}
    assert wanted <= {p.stem for p in SHARED}


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_a_shared_module_imports_no_study(path):
    allowed = {"registry"} if path.name in READS_THE_REGISTRY else set()
    assert _studies_in(_imported(path, _package(path))) <= allowed


@pytest.mark.parametrize("study", STUDIES)
def test_a_study_imports_no_other_study_nor_the_registry(study):
    for path in sorted((PACKAGE / study).rglob("*.py")):
        assert _studies_in(_imported(path, _package(path))) <= {study}, path.relative_to(PACKAGE)


def test_the_checker_sees_a_study_import(tmp_path):
    """The check is not vacuous: a shared module importing a study is caught, relative too."""
    module = tmp_path / "bad.py"
    module.write_text("from .apjn import theory\nimport transformer_stability.registry\n")
    assert _studies_in(_imported(module, "transformer_stability")) == {"apjn", "registry"}
    module.write_text("from ..counting.names import READOUTS\n")
    assert _studies_in(_imported(module, "transformer_stability.apjn")) == {"counting"}
