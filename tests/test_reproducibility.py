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
from conftest import ROOT, TINY, TINY_CORES, announced_jobs, result_tables, run_snakemake

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
def test_a_run_killed_mid_sweep_redoes_only_the_killed_items(tmp_path, tiny_run):
    """The trainability sweep, one job per item (set-scatter), is killed once its first item is
    finished while the second runs: no partial table is left, the rerun redoes only the items
    that did not finish, and the gathered table equals the uninterrupted, chunked reference."""
    table, items = "results/apjn/trainability.csv", tmp_path / "results/apjn/items/train"
    args = ["--cores", "1", "--configfile", TINY, "--set-scatter", "apjn_train=100"]
    args += ["--", table]  # `--`: --set-scatter takes several values
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(tmp_path), *args]
    log_path = tmp_path / "killed_run.log"
    with open(log_path, "w") as log:
        unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log as Snakemake writes it
        process = subprocess.Popen(
            cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=unbuffered
        )
        deadline = time.monotonic() + 600
        while "(Rule: apjn_train)" not in log_path.read_text():  # "Finished jobid: n (Rule: ...)"
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never finished a training item"
            time.sleep(0.01)
        # the second item's job has just started: its Python is still importing torch
        while len(re.findall(r"^(?:local)?rule apjn_train:", log_path.read_text(), re.M)) < 2:
            assert process.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.01)
        _kill_tree(process)

    started = [chunk for rule, chunk in _jobs(log_path.read_text()) if rule == "apjn_train"]
    finished = {path.stem for path in items.glob("*.csv")}
    assert len(started) == 2 and started[0] in finished, (started, finished)
    assert started[1] not in finished, "the killed item left an output behind"
    assert not (tmp_path / table).exists()

    # the kill left Snakemake's lock: a plain rerun refuses and says how to release it
    locked = run_snakemake(tmp_path, *args)
    assert locked.returncode != 0
    assert "--unlock" in locked.stdout + locked.stderr
    assert run_snakemake(tmp_path, "--unlock", *args).returncode == 0

    rerun = run_snakemake(tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    jobs = _jobs(rerun.stdout + rerun.stderr)
    redone = {chunk for rule, chunk in jobs if rule == "apjn_train"}
    assert started[0] not in redone, "a finished item was redone"
    # the killed one and the unstarted: every item but the finished one
    assert started[1] in redone and len(redone) == len(list(items.glob("*.csv"))) - 1, redone
    assert {rule for rule, _ in jobs} == {"apjn_train", "gather"}

    # what the interrupted-and-resumed run wrote equals the uninterrupted, chunked reference run
    assert (tmp_path / table).read_bytes() == result_tables(tiny_run.workdir)[table]
