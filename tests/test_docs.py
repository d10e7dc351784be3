"""The documentation: one page per study, linked from both READMEs; what the pages name
(source files, tests, tables, figures, functions, relative links) exists; the configuration
reference is the current rendering of the schema; every `make` and `snakemake` command shown in
a bash block runs; and no tracked file points outside the repository."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from transformer_stability import config_doc
from transformer_stability.registry import FIGURES, STUDIES, TABLES
from transformer_stability.tables import result

DOCS = ROOT / "docs"
PAGES = [f"{study}.md" for study in STUDIES]
CONFIG_README = ROOT / "config" / "README.md"
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
# spelled in pieces so that this file does not match itself
OUTSIDE = ("../" + "shared", "shared/" + "specs")


def _markdown_files() -> dict[Path, str]:
    """Every page a reader meets: the READMEs and docs/*.md."""
    paths = [ROOT / "README.md", CONFIG_README, *sorted(DOCS.glob("*.md"))]
    return {path: path.read_text() for path in paths}


def _produced_tables() -> set[str]:
    """Every table the workflow writes under results/: one per table model of the registry
    (test_tables checks that a run writes each)."""
    return {result(model) for model in TABLES.values()}


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
    for page, text in _markdown_files().items():
        for path in re.findall(r"(?:src/transformer_stability|tests|bench)/[\w/]+\.py", text):
            assert (ROOT / path).is_file(), (page, path)


def test_tables_and_figures_named_in_the_docs_are_produced_by_the_workflow():
    tables = _produced_tables()
    for page, text in _markdown_files().items():
        for path in re.findall(r"results/[\w/]+\.csv", text):
            assert path in tables, (page, path)
        for name in re.findall(r"`(\w+)\.pdf`", text):
            assert name in FIGURES, (page, name)


def test_functions_named_in_the_docs_exist():
    defined = _defined_names()
    for page, text in _markdown_files().items():
        for name in re.findall(r"`(?:\w+\.)*(\w+)\(\)`", text):
            assert name in defined, (page, name)


# "A.1–A.5" (claims) and "N1–N9" (figures): a range of ids of one study
CLAIM_RANGE = re.compile(r"\b([ANC])\.(\d+)[–-]\1\.(\d+)\b")
FIGURE_RANGE = re.compile(r"\b([ANC])(\d+)[–-]\1(\d+)\b")
STUDY_OF = {"A": "apjn", "N": "numerics", "C": "counting"}


def _numbers(ids: list[str]) -> list[int]:
    return sorted(int(re.match(r"[ANC]\.?(\d+)", i).group(1)) for i in ids)


def study_codes(study) -> list[str]:
    """The study's figure codes that are numbers alone (A1, not A1-theory)."""
    return [f.code for f in study.figures if re.fullmatch(r"[ANC]\d+", f.code)]


def test_claim_and_figure_ranges_in_the_docs_are_the_registrys():
    """Every range of claim ids or figure codes a page names lies within its study's ids, and on
    the pages that list a study's claims or figures (the READMEs) it is the whole list, so
    a claim or figure added later cannot leave a stale count behind."""
    listing = {ROOT / "README.md", DOCS / "README.md"}
    wrong = []
    for path, text in _markdown_files().items():
        for pattern, kind in ((CLAIM_RANGE, "claims"), (FIGURE_RANGE, "figures")):
            for match in pattern.finditer(text):
                study = STUDIES[STUDY_OF[match.group(1)]]
                ids = [c.id for c in study.claims] if kind == "claims" else study_codes(study)
                known = _numbers(ids)
                first, last = int(match.group(2)), int(match.group(3))
                whole = (first, last) == (known[0], known[-1])
                if last > known[-1] or (path in listing and not whole):
                    wanted = f"{known[0]}–{known[-1]}"
                    wrong.append(f"{path.relative_to(ROOT)}: {match.group(0)} ({kind} {wanted})")
    assert not wrong, wrong


def test_relative_links_resolve():
    for path, text in _markdown_files().items():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"\w+:", target):
                continue  # an absolute URL
            assert (path.parent / target).exists(), (path.relative_to(ROOT).as_posix(), target)


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_anchors_of_links_between_pages_exist():
    for path, text in _markdown_files().items():
        for target, anchor in re.findall(r"\]\(([^)#\s]+\.md)#([^)\s]+)\)", text):
            page = path.parent / target
            if page.exists():  # a missing page is test_relative_links_resolve's to report
                assert anchor in _anchors(page.read_text()), (path.name, target, anchor)


def test_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_config_reference_is_the_current_rendering_of_the_schema():
    expected = config_doc.render(config_doc.load_schema())
    assert CONFIG_README.read_text() == expected, f"regenerate it: {config_doc.COMMAND}"


def test_every_config_key_has_a_description_and_a_default():
    keys = list(config_doc.walk(config_doc.load_schema()))
    assert len(keys) > 100
    for key in keys:
        assert key.spec.get("description", "").strip(), key.path
        # keys of list items (apjn.variants[].norm) are given per item: required or optional
        assert "default" in key.spec or key.in_list, key.path


def test_config_reference_lists_every_key_of_the_cpu_preset(default_config):
    documented = {key.path for key in config_doc.walk(config_doc.load_schema())}

    def paths(node: dict, prefix: str = "") -> set[str]:
        out = set()
        for name, value in node.items():
            path = f"{prefix}.{name}" if prefix else name
            out.add(path)
            if isinstance(value, dict):
                out |= paths(value, path)
        return out

    assert paths(default_config) <= documented
    text = CONFIG_README.read_text()
    for path in documented:  # a row each; the top-level sections are headings
        assert f"| `{path}` |" in text or f"\n## `{path}`\n" in text, path


def _shown_commands(program: str) -> list[list[str]]:
    """The `program` command lines (words after the program) of every bash block, once each."""
    found: dict[tuple[str, ...], None] = {}
    for text in _markdown_files().values():
        for block in BASH_BLOCK.findall(text):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                while words and re.fullmatch(r"\w+=\S*", words[0]):
                    words = words[1:]  # VAR=value before the command
                if words and Path(words[0]).name == program:
                    found[tuple(words[1:])] = None
    return [list(words) for words in found]


def _uses_conda(arguments: list[str]) -> bool:
    """Whether `--sdm` names conda; "--sdm conda" and "--sdm=conda" parse alike."""
    joined = " ".join(arguments)
    return re.search(r"--(sdm|software-deployment-method)[ =]conda\b", joined) is not None


@pytest.mark.parametrize("arguments", _shown_commands("make"), ids=" ".join)
def test_make_commands_in_the_docs_name_existing_targets(arguments):
    result = subprocess.run(
        ["make", "-n", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_make_report_in_a_directory_without_a_run_says_what_to_do(tmp_path):
    """`make report` for real (its recipe with this interpreter, no install): where no run
    recorded its configuration it stops and names the command to run first."""
    make = ["make", "-f", str(ROOT / "Makefile"), "-C", str(tmp_path), "report"]
    variables = [f"BIN={Path(sys.executable).parent}", "STAMP="]
    result = subprocess.run([*make, *variables], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "run `make reproduce` (or snakemake) first" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("arguments", _shown_commands("snakemake"), ids=" ".join)
def test_snakemake_commands_in_the_docs_plan_or_refuse_clearly(arguments, tmp_path):
    """Each command as a dry run in an empty directory, offline: it plans (the paper preset too:
    its outside inputs are checked when its jobs start, tests/test_preflight.py); a conda run
    needs `conda`."""
    command = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    command += ["--directory", str(tmp_path), "-n", *arguments]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    output = result.stdout + result.stderr
    if _uses_conda(arguments) and shutil.which("conda") is None:
        assert result.returncode != 0
        assert "Is conda installed" in output, output[-2000:]
    else:
        assert result.returncode == 0, output[-2000:]
        assert "This was a dry-run" in output or "Nothing to be done" in output
