"""Determinism and resume, end to end: two runs of the tiny config from scratch write identical
tables, and a run killed in the middle leaves nothing a rerun trusts and resumes."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import (
    ROOT,
    TINY,
    TINY_CORES,
    announced_jobs,
    copy_of_run,
    result_tables,
    run_snakemake,
)

PROVENANCE = {"seed", "device", "dtype", "versions"}


@pytest.mark.slow
def test_two_runs_from_scratch_write_identical_tables(tmp_path, tiny_run):
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    second = run_snakemake(tmp_path, "--cores", TINY_CORES, "--configfile", TINY)
    assert second.returncode == 0, second.stderr[-3000:]

    first, again = result_tables(tiny_run.workdir), result_tables(tmp_path)
    assert sorted(first) == sorted(again)
    differing = [name for name in first if first[name] != again[name]]
    assert not differing, f"tables differ between two runs from scratch: {differing}"

    # every study table says how it was made (the figure-side tables are derived from them)
    study_tables = [name for name in first if not name.startswith("results/figures/")]
    assert study_tables
    for name in study_tables:
        header = set(first[name].split(b"\n", 1)[0].decode().split(","))
        assert header >= PROVENANCE, f"{name} lacks {sorted(PROVENANCE - header)}"


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL snakemake and every process below it, as a crash or an OOM kill would."""
    parent = psutil.Process(process.pid)
    victims = [*parent.children(recursive=True), parent]
    for victim in victims:
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.send_signal(signal.SIGKILL)
    psutil.wait_procs(victims, timeout=30)
    process.wait(timeout=30)


def _jobs(output: str) -> list[tuple[str, str]]:
    """(rule, chunk wildcard or "") of every job a Snakemake log announces."""
    return [(rule, wildcards.get("chunk", "")) for rule, wildcards in announced_jobs(output)]


@pytest.mark.slow
def test_a_run_killed_mid_sweep_redoes_only_the_killed_chunk(tmp_path, tiny_run):
    """A forced rerun of the trainability sweep (two chunks, run one after the other) in a copy of
    the tiny run is killed once its first chunk is rewritten while the second runs: the killed
    chunk's output is gone, the gathered table untouched, the rerun redoes only the killed chunk
    and the gathered table equals the uninterrupted reference."""
    workdir = copy_of_run(tiny_run, tmp_path / "run")
    table, items = "results/apjn/trainability.csv", workdir / "results/apjn/items/train"
    args = ["--cores", "1", "--configfile", TINY]
    forced = [*args, "--forcerun", "apjn_train", "--", table]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(workdir), *forced]
    log_path = tmp_path / "killed_run.log"
    started_at = time.time()
    with open(log_path, "w") as log:
        unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log as Snakemake writes it
        process = subprocess.Popen(
            cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=unbuffered
        )
        deadline = time.monotonic() + 600
        while "(Rule: apjn_train)" not in log_path.read_text():  # "Finished jobid: n (Rule: ...)"
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never finished a training chunk"
            time.sleep(0.01)
        # the second chunk's job has just started: its Python is still importing torch
        while len(re.findall(r"^(?:local)?rule apjn_train:", log_path.read_text(), re.M)) < 2:
            assert process.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.01)
        _kill_tree(process)

    started = [chunk for rule, chunk in _jobs(log_path.read_text()) if rule == "apjn_train"]
    rewritten = {path.stem for path in items.glob("*.csv") if path.stat().st_mtime > started_at}
    chunks = {path.stem for path in (tiny_run.workdir / items.relative_to(workdir)).glob("*.csv")}
    assert len(started) == 2 and set(started) == chunks and started[0] in rewritten, started
    assert not (items / f"{started[1]}.csv").exists(), "the killed chunk left an output behind"
    reference = result_tables(tiny_run.workdir)[table]
    assert (workdir / table).read_bytes() == reference  # not gathered from a partial sweep

    # the kill left Snakemake's lock: a plain rerun refuses and says how to release it
    locked = run_snakemake(workdir, *args, "--", table)
    assert locked.returncode != 0
    assert "--unlock" in locked.stdout + locked.stderr
    assert run_snakemake(workdir, "--unlock", *args).returncode == 0

    rerun = run_snakemake(workdir, *args, "--", table)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    jobs = _jobs(rerun.stdout + rerun.stderr)
    assert sorted(jobs) == [("apjn_train", started[1]), ("gather", "")], jobs

    # what the interrupted-and-resumed run wrote equals the uninterrupted reference run
    assert (workdir / table).read_bytes() == reference
