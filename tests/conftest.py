"""Shared paths and helpers for the tests."""

import contextlib
import copy
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# One thread per test process, set before torch or numpy start their pools: pytest-xdist runs a
# worker per core beside the workflow runs of the slow tests, and intra-op threads on the tests'
# small tensors only wait for each other (tests/test_apjn_train.py: 67 CPU s with torch's
# default threads, 9 with one, on a busy machine). Snakemake sets its jobs' thread variables to
# the job's threads, so the tests' workflow runs compute as a user's run does.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402
from filelock import FileLock  # noqa: E402

from transformer_stability.registry import SWEEPS  # noqa: E402

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = str(ROOT / "tests" / "configs" / "tiny.yaml")
TINY_CORES = "2"  # the reference run's --cores: torch rules use as many threads
# The sweeps the tiny run cuts in two jobs, as a default run cuts every sweep: the ones whose cut
# a test changes (test_reproducibility recuts them into one job and kills one mid-sweep). Every
# other sweep is one job there, which spares the suite a Python process (its imports) per sweep.
CUT_IN_TWO = ("counting_training", "numerics_gpt2")


def tiny_args(**cuts: int) -> list[str]:
    """What a workflow run on the tiny run (or a copy of it) is given: the sweeps' cuts (`cuts`
    changing some) and the config, last, so that a test's own config files may follow."""
    jobs = {rule: 2 if rule in CUT_IN_TWO else 1 for rule in SWEEPS} | cuts
    scatter = [f"{rule}={count}" for rule, count in jobs.items()]
    return ["--set-scatter", *scatter, "--configfile", TINY]


TINY_ARGS = tiny_args()
# the system's Chromium, for the report's browser test (.ci/install-chromium installs it)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def load_yaml(path: Path) -> dict:
    with open(path) as handle:
        return yaml.safe_load(handle)


def deep_merge(base: dict, override: dict) -> dict:
    """What Snakemake does with --configfile over the Snakefile's configfile."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# Tests that edit a package module in place (test_reruns) hold this lock exclusively while the
# edit lasts, every workflow run of the suite holds it shared: under pytest-xdist a run on the
# other worker would otherwise see the edited module and plan its dependents.
SOURCES_LOCK = Path(tempfile.gettempdir()) / (
    f"ts-sources-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}.lock"
)
_EDITING = False  # whether this process holds the lock exclusively


@contextlib.contextmanager
def sources_lock(exclusive: bool = False) -> Iterator[None]:
    """Shared: the package sources stay as committed while it is held; exclusive: nobody else
    runs the workflow meanwhile (an editing test's own runs go ahead)."""
    global _EDITING
    if _EDITING:
        yield
        return
    with open(SOURCES_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        _EDITING = exclusive
        try:
            yield
        finally:
            _EDITING = False


def run_snakemake(
    workdir: Path, *args: str, timeout: int = 900, offline: bool = False
) -> subprocess.CompletedProcess:
    """Run the repository's workflow with `workdir` as working directory (`offline`: with
    HF_HUB_OFFLINE=1, as on a machine without network)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(workdir), *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"} if offline else None
    with sources_lock():
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
        )


@dataclass(frozen=True)
class TinyRun:
    workdir: Path
    result: subprocess.CompletedProcess


def _tiny_run_in(workdir: Path) -> TinyRun:
    return TinyRun(workdir, run_snakemake(workdir, "--cores", TINY_CORES, *TINY_ARGS))


@pytest.fixture(scope="session")
def tiny_run(request, tmp_path_factory, worker_id) -> TinyRun:
    """The whole DAG of the tiny config, run once per session from scratch: the one end-to-end run
    of the suite. Tests read it, or change a copy of it (`copy_of_run`); the determinism, resume
    and SLURM tests check their tables against it. Under pytest-xdist the workers share it: the
    first to need it runs it while the others wait on a lock, then read its outcome. A session
    that deselects the workflow tests (`make test`) never starts it: a test that takes it by name
    (`request.getfixturevalue`) must be marked workflow itself."""
    if "not workflow" in request.config.getoption("markexpr"):
        pytest.fail("a test that needs the tiny run is not marked workflow")
    if worker_id == "master":
        return _tiny_run_in(tmp_path_factory.mktemp("tiny_run"))
    shared = tmp_path_factory.getbasetemp().parent  # the session's folder, above the workers'
    outcome = shared / "tiny_run.json"
    with FileLock(shared / "tiny_run.lock"):
        if not outcome.exists():
            run = _tiny_run_in(shared / "tiny_run")
            fields = {"args": run.result.args, "returncode": run.result.returncode}
            fields |= {"stdout": run.result.stdout, "stderr": run.result.stderr}
            outcome.write_text(json.dumps(fields))
        fields = json.loads(outcome.read_text())
    return TinyRun(shared / "tiny_run", subprocess.CompletedProcess(**fields))


def copy_of_run(run: TinyRun, destination: Path) -> Path:
    """A copy of the finished run's directory (results, logs and Snakemake's metadata, mtimes
    kept), which a test may change, rerun or kill without touching the shared run."""
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    shutil.copytree(run.workdir, destination, symlinks=True)
    return destination


def result_tables(workdir: Path) -> dict[str, bytes]:
    """Every CSV under workdir/results, by path relative to workdir."""
    return {
        path.relative_to(workdir).as_posix(): path.read_bytes()
        for path in sorted((workdir / "results").rglob("*.csv"))
    }


def deny_writes_in(monkeypatch, *folders: Path) -> None:
    """os.access as for a user who may not write in `folders` (as root, permission bits bind
    nobody, so a chmod alone cannot show it)."""
    denied = {Path(f).resolve() for f in folders}
    real = os.access

    def access(path, mode, **kwargs):
        if mode & os.W_OK and Path(path).resolve() in denied:
            return False
        return real(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)


@pytest.fixture(scope="session")
def schema() -> Path:
    """The config schema, as validate_config takes it (a path, read by snakemake.utils.validate)."""
    return SCHEMA_PATH


@pytest.fixture(scope="session")
def default_config() -> dict:
    return load_yaml(ROOT / "config.yaml")


def job_blocks(output: str) -> list[tuple[str, str]]:
    """(rule, its announcement's lines) of every job a Snakemake log (or dry run) announces."""
    blocks = re.split(r"^(?=(?:local)?rule \w+:$)", output, flags=re.MULTILINE)[1:]
    return [(re.match(r"(?:local)?rule (\w+):", block).group(1), block) for block in blocks]


def announced_jobs(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job a Snakemake log (or dry run) announces, in order."""
    jobs = []
    for rule, block in job_blocks(output):
        line = re.search(r"^    wildcards: (.*)$", block, re.MULTILINE)
        wildcards = dict(re.findall(r"(\w+)=([^,\s]+)", line.group(1))) if line else {}
        jobs.append((rule, wildcards))
    return jobs


def pytest_terminal_summary(terminalreporter) -> None:
    """Say at the end of the run, not only in a skip line, that the report went untested."""
    skipped = terminalreporter.stats.get("skipped", [])
    if CHROMIUM is None and any("test_report_browser.py" in r.nodeid for r in skipped):
        message = "NO CHROMIUM: the report was NOT tested in a browser (apt-get install chromium)"
        terminalreporter.write_sep("!", message, red=True, bold=True)
        print(message, file=sys.stderr)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marker it adds is selected on
def pytest_collection_modifyitems(items) -> None:
    """Every test that needs the shared tiny run is an end-to-end test (marked `workflow`, which
    `make test-workflow` runs and `make test` leaves out), so no test can read the run from the
    wrong tier. The end-to-end tests last: under pytest-xdist the other worker runs the others
    while the first one waits for the shared tiny run. Of those, the SLURM test first: it holds
    the sources lock shared for a minute of mostly waiting on its executor, and the tests that
    edit a module (test_reruns) wait for it; early, the other worker has other tests to run."""
    for item in items:
        if "tiny_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.workflow)
    items.sort(
        key=lambda item: (
            item.get_closest_marker("workflow") is not None,
            item.path.name != "test_slurm.py",
        )
    )
