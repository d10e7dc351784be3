"""Study A's captions are valid reStructuredText: Snakemake's report renders them with docutils,
which turns a stray `zeta_-` (a link target), `|x|` (a substitution) or an unbalanced `*` into
an error box in the report."""

import docutils.core
import pytest
from conftest import ROOT, SCHEMA_PATH, TINY, deep_merge, load_yaml
from jinja2 import StrictUndefined, Template

from transformer_stability.registry import study_figures, validate

PRESETS = [TINY, str(ROOT / "config.yaml"), str(ROOT / "config" / "paper.yaml")]


def render(caption: str, config: dict) -> str:
    """The caption as the report shows it: Jinja over the config, then docutils to HTML with
    every message down to level 1 (info) written into the page."""
    text = Template(caption, undefined=StrictUndefined).render(config=config).strip()
    settings = {"report_level": 1, "warning_stream": False}
    return docutils.core.publish_parts(text, writer="html", settings_overrides=settings)[
        "html_body"
    ]


def test_render_reports_a_docutils_problem():
    """The check below can fail: a caption with a reST error renders a System Message."""
    assert "System Message" in render("zeta_- grows as |y - c|", {})
    assert "System Message" not in render("ζ₋ grows as abs(y - c)", {})


@pytest.mark.parametrize("preset", PRESETS, ids=["tiny", "default", "paper"])
def test_every_caption_renders_without_a_docutils_message(preset):
    config = validate(deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(preset)), SCHEMA_PATH)
    for figure in study_figures("apjn"):
        html = render(figure.caption, config)
        assert "System Message" not in html, (figure.code, html)
