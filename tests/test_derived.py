"""Rules whose script is a `derived_job`: the names it reads and writes are the rule's."""

import ast
import re

import pytest
from conftest import ROOT

SCRIPTS = ROOT / "workflow" / "scripts"


def _derived_scripts() -> dict[str, set[str]]:
    """Script name -> the output names its derived_job call writes (its `models` dict)."""
    found = {}
    for path in sorted(SCRIPTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "derived_job":
                found[path.name] = {key.value for key in node.args[3].keys}
    return found


def _rule_of(script: str) -> str:
    """The text of the rule that runs `script`."""
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"\n(?=rule )", path.read_text()):
            if f'"../scripts/{script}"' in rule:
                return rule
    raise AssertionError(f"no rule runs {script}")


def _names(rule: str, section: str) -> set[str]:
    block = re.search(rf"\n    {section}:\n((?:        .*\n)+)", rule).group(1)
    return set(re.findall(r"^        (\w+)=", block, flags=re.MULTILINE))


@pytest.mark.parametrize("script", sorted(_derived_scripts()))
def test_a_derived_rule_names_its_input_table_and_every_output(script):
    rule = _rule_of(script)
    assert "table" in _names(rule, "input"), rule
    assert _names(rule, "output") == _derived_scripts()[script], rule


def test_the_apjn_derived_tables_are_derived_jobs():
    assert set(_derived_scripts()) >= {
        "apjn_agreement.py",
        "apjn_finite_n_compare.py",
        "apjn_sensitivity_ratios.py",
        "apjn_tuning.py",
        "apjn_width_fit.py",
    }
