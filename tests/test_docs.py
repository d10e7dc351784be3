"""The science documentation in docs/: one page per study, linked from both READMEs; what the
pages name (source files, tests, tables, figures, functions, relative links) exists; and no
tracked file points outside the repository."""

import re
import shutil
import subprocess

import pytest
from conftest import ROOT

from transformer_stability.registry import FIGURES, STUDIES

DOCS = ROOT / "docs"
PAGES = [f"{study}.md" for study in STUDIES]
# spelled in pieces so that this file does not match itself
OUTSIDE = ("../" + "shared", "shared/" + "specs")


def _docs_text() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(DOCS.glob("*.md"))}


def _produced_tables() -> set[str]:
    """Every table the workflow writes under results/: the figure registry's inputs, the
    gathered sweep tables and the literal outputs of the rule modules."""
    tables = {path for figure in FIGURES.values() for path in figure.tables.values()}
    for rules in (ROOT / "workflow" / "rules").glob("*.smk"):
        text = rules.read_text()
        tables |= {f"results/{key}.csv" for key in re.findall(r'"(\w+/\w+)":\s*"results/', text)}
        tables |= set(re.findall(r'"(results/[\w/]+\.csv)"', text))
    return tables


def _defined_names() -> set[str]:
    source = "\n".join(
        path.read_text() for path in (ROOT / "src" / "transformer_stability").rglob("*.py")
    )
    return set(re.findall(r"^\s*def (\w+)\(", source, re.MULTILINE))


def test_every_study_has_a_page_linked_from_both_readmes():
    readme = (ROOT / "README.md").read_text()
    index = (DOCS / "README.md").read_text()
    for page in PAGES:
        assert (DOCS / page).is_file(), page
        assert re.search(rf"\]\(docs/{re.escape(page)}(#[^)]*)?\)", readme), (
            f"README.md does not link docs/{page}"
        )
        assert re.search(rf"\]\({re.escape(page)}(#[^)]*)?\)", index), (
            f"docs/README.md does not link {page}"
        )


def test_nothing_tracked_points_outside_the_repository():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no tracked files to list")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    offenders = []
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        offenders += [f"{name}: {needle}" for needle in OUTSIDE if needle in text]
    assert not offenders, offenders


def test_source_files_and_tests_named_in_the_docs_exist():
    for page, text in _docs_text().items():
        for path in re.findall(r"(?:src/transformer_stability|tests|bench)/[\w/]+\.py", text):
            assert (ROOT / path).is_file(), (page, path)


def test_tables_and_figures_named_in_the_docs_are_produced_by_the_workflow():
    tables = _produced_tables()
    for page, text in _docs_text().items():
        for path in re.findall(r"results/[\w/]+\.csv", text):
            assert path in tables, (page, path)
        for name in re.findall(r"`(\w+)\.pdf`", text):
            assert name in FIGURES, (page, name)


def test_functions_named_in_the_docs_exist():
    defined = _defined_names()
    for page, text in _docs_text().items():
        for name in re.findall(r"`(?:\w+\.)*(\w+)\(\)`", text):
            assert name in defined, (page, name)


def test_relative_links_in_the_docs_resolve():
    for page, text in _docs_text().items():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"\w+:", target):
                continue  # an absolute URL
            assert (DOCS / target).exists(), (page, target)
