"""The lock (requirements/lock.txt) pins every package `make` installs, within pyproject.toml's
bounds, leaving torch's CUDA runtime to its wheel; envs/pipeline.yaml (conda) installs the lock."""

import re
import tomllib

from conftest import ROOT, load_yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = ROOT / "requirements" / "lock.txt"
CUDA_ONLY = re.compile(r"^(nvidia-|cuda-|triton$)")


def _pins() -> dict[str, str]:
    """Package -> version of every requirement line of the lock, each one exact (`==`)."""
    lines = [line for line in LOCK.read_text().splitlines() if line and line[0] not in "# "]
    pins = {}
    for line in lines:
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==" and not requirement.marker, line
        pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def _locked_python() -> str:
    return re.search(r"with Python (\d+\.\d+)", LOCK.read_text()).group(1)


def test_lock_pins_every_dependency_within_its_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    pins = _pins()
    for line in declared:
        requirement = Requirement(line)
        version = pins.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not in the lock"
        assert requirement.specifier.contains(version, prereleases=True), (line, version)
    # the supported interpreter, which the lock was compiled with
    assert _locked_python() == "3.11" and project["requires-python"] == ">=3.11"


def test_lock_leaves_the_cuda_runtime_to_torchs_wheel():
    pins = _pins()
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
    assert not [name for name in pins if CUDA_ONLY.match(name)]
    assert "--hash" not in LOCK.read_text() and "+cpu" not in LOCK.read_text()


def test_conda_env_installs_exactly_the_lock():
    conda = load_yaml(ROOT / "envs" / "pipeline.yaml")["dependencies"]
    (pip_section,) = [d["pip"] for d in conda if isinstance(d, dict)]
    assert [d for d in conda if isinstance(d, str)] == [f"python={_locked_python()}", "pip"]
    assert pip_section[-1] == "-e ../"
    listed = {}
    for line in pip_section[:-1]:
        name, version = line.split("==")
        listed[canonicalize_name(name)] = version
    assert listed == _pins()
