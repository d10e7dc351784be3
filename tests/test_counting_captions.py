"""Study C's captions are valid reStructuredText once the run's configuration fills them in:
Snakemake's report renders them with docutils, which appends a "System Message" for a bare
|x| (a substitution reference), a trailing underscore (a link) or an unbalanced *."""

import io

import pytest
from conftest import ROOT, TINY, deep_merge, load_yaml
from docutils.core import publish_parts
from jinja2 import StrictUndefined, Template

from transformer_stability.registry import study_figures


def _messages(text: str) -> tuple[str, str]:
    """docutils' warnings and the rendered body of a caption, at report level 1 (info)."""
    warnings = io.StringIO()
    settings = {"report_level": 1, "warning_stream": warnings}
    body = publish_parts(text, writer="html", settings_overrides=settings)["body"]
    return warnings.getvalue(), body


def test_a_bare_absolute_value_is_caught():
    warnings, body = _messages("max |y - c| on the grid")
    assert "System Message" in body and "substitution" in warnings


@pytest.mark.parametrize(
    "overrides", [TINY, "config.yaml", "config/paper.yaml"], ids=["tiny", "default", "paper"]
)
def test_every_counting_caption_renders_without_a_docutils_message(overrides):
    config = deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(ROOT / overrides))
    for figure in study_figures("counting"):
        text = Template(figure.caption, undefined=StrictUndefined).render(config=config).strip()
        warnings, body = _messages(text)
        assert "System Message" not in body and not warnings, (figure.code, warnings)
        assert "|y - c|" in body or "y - c" not in text, figure.code
