"""envs/pipeline.yaml (conda) lists the same dependencies as pyproject.toml."""

import re
import tomllib

from conftest import ROOT, load_yaml


def _name_and_spec(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", requirement).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def test_conda_env_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_deps = dict(map(_name_and_spec, project["dependencies"]))
    conda = load_yaml(ROOT / "envs" / "pipeline.yaml")["dependencies"]
    pip_section = next(d["pip"] for d in conda if isinstance(d, dict))
    listed = [d for d in conda if isinstance(d, str)] + [d for d in pip_section if d[0] != "-"]
    conda_deps = dict(map(_name_and_spec, listed))
    conda_deps.pop("pip")
    assert conda_deps.pop("python") == ">=" + project["requires-python"].lstrip(">=")
    assert conda_deps == pip_deps
