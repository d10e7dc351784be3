"""Study N's captions are valid reStructuredText: the report renders each one with docutils,
and a caption docutils complains about ends in a "System Message" block on the report page."""

import io

import docutils.core
import pytest
from conftest import ROOT, SCHEMA_PATH, TINY, deep_merge, load_yaml
from jinja2 import StrictUndefined, Template

from transformer_stability.numerics.figures import FIGURES
from transformer_stability.registry import validate


def docutils_messages(text: str) -> str:
    """What docutils reports (info level and up) on `text`: its warning stream and any
    system-message block in the HTML; empty for valid reST."""
    stream = io.StringIO()
    settings = {"report_level": 1, "halt_level": 5, "warning_stream": stream}
    body = docutils.core.publish_parts(text, writer="html", settings_overrides=settings)
    messages = stream.getvalue()
    if "system-message" in body["html_body"]:
        messages += body["html_body"]
    return messages


@pytest.mark.parametrize("text", ["best max |y - c| against B", "zeta_- and zeta_+", "a *b"])
def test_docutils_messages_catch_broken_rest(text):
    assert docutils_messages(text)


@pytest.mark.parametrize("figure", FIGURES, ids=[f.code for f in FIGURES])
def test_caption_renders_without_docutils_messages_on_the_tiny_config(figure):
    config = validate(deep_merge(load_yaml(ROOT / "config.yaml"), load_yaml(TINY)), SCHEMA_PATH)
    caption = Template(figure.caption, undefined=StrictUndefined).render(config=config).strip()
    assert docutils_messages(caption) == "", figure.name
