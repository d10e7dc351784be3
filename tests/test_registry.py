"""The figure registry: every figure declared once, and what follows from it (plot signatures,
captions valid reStructuredText for every preset, report labels, the README's figure table)
agrees with the declaration."""

import inspect
import io
import re

import pytest
from conftest import ROOT, TINY, deep_merge, load_yaml
from docutils.core import publish_parts
from jinja2 import StrictUndefined, Template

from transformer_stability.registry import FIGURES, STUDIES, study_figures

LABEL_OF_STUDY = {"apjn": "models", "counting": "placement", "numerics": "precision"}


def _readme_rows() -> dict[str, tuple[str, str]]:
    """README figure table: figure name -> (code, data column)."""
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| ([\w-]+) \| `(\w+)\.pdf` \| .*? \| (.*) \|$", text, re.MULTILINE)
    return {name: (code, data) for code, name, data in rows}


def test_names_and_codes_are_unique_and_studies_known():
    codes = [figure.code for figure in FIGURES.values()]
    assert len(set(codes)) == len(codes)
    for name, figure in FIGURES.items():
        assert name.startswith(f"{figure.study}_") and figure.study in STUDIES
    assert sum(len(study_figures(study)) for study in STUDIES) == len(FIGURES) == 30


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_plot_takes_exactly_the_declared_tables(name):
    figure = FIGURES[name]
    parameters = inspect.signature(figure.plot).parameters
    required = {p for p, v in parameters.items() if v.default is inspect.Parameter.empty}
    assert required <= set(figure.tables) <= set(parameters)
    for path in figure.inputs.values():
        assert re.fullmatch(rf"results/{figure.study}/\w+\.csv", path), path


def _docutils_problems(text: str) -> str:
    """docutils' warnings on a caption at report level 1 (info), as Snakemake's report renders
    it: a bare |x| (a substitution), a trailing underscore (a link target) or an unbalanced *
    would put a "System Message" into the report."""
    warnings = io.StringIO()
    settings = {"report_level": 1, "warning_stream": warnings}
    body = publish_parts(text, writer="html", settings_overrides=settings)["body"]
    return warnings.getvalue() + ("System Message" if "System Message" in body else "")


@pytest.mark.parametrize("text", ["max |y - c| on the grid", "zeta_- fit", "a *b c"])
def test_the_docutils_check_catches_broken_rest(text):
    assert _docutils_problems(text)


@pytest.mark.parametrize("config_file", [TINY, "config.yaml", "config/paper.yaml"])
def test_captions_and_labels_render_for_every_preset(config_file):
    config = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / config_file))
    for figure in FIGURES.values():
        caption = Template(figure.template, undefined=StrictUndefined).render(config=config).strip()
        assert caption.startswith(figure.code.split("-")[0]), figure.name
        assert not _docutils_problems(caption), (figure.code, _docutils_problems(caption))
        labels = figure.labels(config)
        assert labels["figure"] == figure.code
        assert LABEL_OF_STUDY[figure.study] in labels
        # Snakemake's report formats labels with the job's wildcards: a brace would break it
        assert not any("{" in str(value) for value in labels.values()), figure.name


def test_readme_table_lists_every_registered_figure_with_its_code_and_data():
    rows = _readme_rows()
    assert set(rows) == set(FIGURES)
    for name, (code, data) in rows.items():
        figure = FIGURES[name]
        assert code == figure.code, name
        for path in figure.inputs.values():
            assert path.removeprefix("results/") in data, (name, path)
