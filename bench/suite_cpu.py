"""Where `make test`'s CPU time goes: run pytest (every core, as `make test` does) with a plugin
that charges each test the CPU seconds its worker spent on it, its subprocesses (workflow runs,
dry runs) included, then print the costliest tests and files.

On a two-core machine the suite is CPU-bound, so its wall time is about its CPU time over the
cores it keeps busy: this, not `--durations` (which counts a test waiting for the shared tiny
run or a lock), says what shortening a test would save.

    .venv/bin/python bench/suite_cpu.py [pytest arguments, e.g. -m "not workflow"]

With TS_SUITE_CPU_KEEP=<folder>, every test's record stays there (one JSON file per worker:
test, CPU s in pytest, CPU s in subprocesses, wall s).
"""

from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

RECORDS_ENV = "TS_SUITE_CPU_RECORDS"
KEEP_ENV = "TS_SUITE_CPU_KEEP"  # a folder to keep each worker's records in, for a closer look


def _cpu_seconds() -> tuple[float, float]:
    """(this process, its waited-for children): user + system seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


_RECORDS: list[tuple[str, float, float, float]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    (own, children), start = _cpu_seconds(), time.perf_counter()
    yield
    own_after, children_after = _cpu_seconds()
    wall = time.perf_counter() - start
    _RECORDS.append((item.nodeid, own_after - own, children_after - children, wall))


def pytest_sessionfinish(session):
    folder = os.environ.get(RECORDS_ENV)
    if folder and _RECORDS:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        (Path(folder) / f"{worker}.json").write_text(json.dumps(_RECORDS))


def report(folder: Path, top: int = 30) -> str:
    rows = [row for path in folder.glob("*.json") for row in json.loads(path.read_text())]
    rows.sort(key=lambda row: -(row[1] + row[2]))
    own, children = sum(r[1] for r in rows), sum(r[2] for r in rows)
    lines = [f"{len(rows)} tests: {own:.0f} CPU s in pytest, {children:.0f} in subprocesses"]
    lines += ["", "| CPU s | of which subprocesses | wall s | test |"]
    lines += ["| ---: | ---: | ---: | --- |"]
    lines += [f"| {o + c:.1f} | {c:.1f} | {w:.1f} | `{name}` |" for name, o, c, w in rows[:top]]
    by_file: collections.Counter[str] = collections.Counter()
    for name, o, c, _ in rows:
        by_file[name.split("::")[0]] += o + c
    lines += ["", "| CPU s | file |", "| ---: | --- |"]
    lines += [f"| {cpu:.1f} | `{name}` |" for name, cpu in by_file.most_common(top)]
    return "\n".join(lines)


def main(args: list[str]) -> int:
    bench = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as scratch:
        folder = os.environ.get(KEEP_ENV) or scratch
        env = {**os.environ, RECORDS_ENV: folder}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(bench), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "pytest", "-n", "auto", "-q", "-p", "suite_cpu", *args]
        returncode = subprocess.run(command, env=env, cwd=bench.parent).returncode
        print(report(Path(folder)))
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
