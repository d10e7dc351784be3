"""Determinism and resume, end to end: sweeps recut into other chunks write the same tables as
the tiny run, every table records its provenance, and a run killed in the middle leaves nothing a
rerun trusts and resumes."""

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import (
    CUT_IN_TWO,
    ROOT,
    TINY_ARGS,
    TINY_CORES,
    announced_jobs,
    copy_of_run,
    result_tables,
    run_snakemake,
    sources_lock,
    tiny_args,
)

from transformer_stability.registry import SWEEPS
from transformer_stability.tables import result

PROVENANCE = {"seed", "device", "dtype", "versions"}


# Sweeps recut into one chunk and rerun alone, in a copy of the tiny run: the two the tiny run
# cuts in two (conftest.CUT_IN_TWO, for these tests), whose jobs are cheap and whose cut
# matters. Study C's training puts one item in its first chunk and three in its second, so one
# chunk trains them in another order and after another item in the same process; Study N's
# GPT-2 runs interleave the models' items by cost and write two tables per chunk, so one chunk
# builds each model once for all its items.
RECUT = CUT_IN_TWO


@pytest.mark.slow
def test_a_sweep_recut_into_one_chunk_writes_identical_tables(tmp_path, tiny_run):
    """In a copy of the tiny run without the RECUT sweeps' chunk and gathered tables, their
    gathered tables are remade with each sweep in one chunk instead of two: one chunk job per
    sweep, nothing upstream reruns, and the tables equal the tiny run's byte for byte, so they
    depend neither on the run nor on how its sweeps were cut into jobs. (The chunks' own
    tables, under items/, are named by the cut.)"""
    workdir = copy_of_run(tiny_run, tmp_path / "run")
    reference = result_tables(tiny_run.workdir)
    tables = []
    for rule in RECUT:
        for output, model in SWEEPS[rule].tables.items():
            items = workdir / Path(SWEEPS[rule].chunk_table(output)).parent
            assert len(list(items.glob("*.csv"))) == 2, items  # the tiny run's cut
            shutil.rmtree(items)
            tables.append(result(model))
            (workdir / tables[-1]).unlink()
    args = ["--cores", TINY_CORES, *tiny_args(**dict.fromkeys(RECUT, 1))]
    recut = run_snakemake(workdir, *args, "--", *tables)
    assert recut.returncode == 0, recut.stderr[-3000:]
    jobs = _jobs(recut.stdout + recut.stderr)
    assert sorted(job for job in jobs if job[0] != "gather") == [
        (rule, "1-of-1") for rule in sorted(RECUT)
    ], jobs  # one job per sweep, and no other job
    assert len(jobs) == len(RECUT) + len(tables)  # and a gather per table
    differing = [t for t in tables if (workdir / t).read_bytes() != reference[t]]
    assert not differing, f"tables differ between two cuts of their sweep: {differing}"


@pytest.mark.slow
def test_every_table_of_the_tiny_run_records_its_provenance(tiny_run):
    """Every table the tiny run writes (the chunks' tables under items/ aside) says how it was
    made: its seed, device, dtype and package versions."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    tables = {k: v for k, v in result_tables(tiny_run.workdir).items() if "/items/" not in k}
    assert tables and not [name for name in tables if name.startswith("results/figures/")]
    for name, content in tables.items():
        header = set(content.split(b"\n", 1)[0].decode().split(","))
        assert header >= PROVENANCE, f"{name} lacks {sorted(PROVENANCE - header)}"


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL snakemake and every process below it, as a crash or an OOM kill would. Each one is
    stopped before its children are listed, so that none starts a child that outlives the kill
    (the job just announced may be forking its Python)."""
    stopped, pending = [], [psutil.Process(process.pid)]
    while pending:
        victim = pending.pop()
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.suspend()
            stopped.append(victim)
            pending += victim.children()
    for victim in stopped:
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.kill()
    psutil.wait_procs(stopped, timeout=30)
    process.wait(timeout=30)


def _jobs(output: str) -> list[tuple[str, str]]:
    """(rule, chunk wildcard or "") of every job a Snakemake log announces."""
    return [(rule, wildcards.get("chunk", "")) for rule, wildcards in announced_jobs(output)]


# The sweep the kill test interrupts: two cheap chunks in the tiny run, one gathered table.
KILLED = "counting_training"


@pytest.mark.slow
def test_a_run_killed_mid_sweep_redoes_only_the_killed_chunk(tmp_path, tiny_run):
    """In a copy of the tiny run without the KILLED sweep's outputs, the sweep (two
    chunks, run one after the other) is killed once its first chunk is finished while the second
    runs: no partial table is left, the rerun redoes only the killed chunk, and the gathered
    table equals the uninterrupted reference."""
    workdir = copy_of_run(tiny_run, tmp_path / "run")
    ((output, model),) = SWEEPS[KILLED].tables.items()
    table, items = result(model), workdir / Path(SWEEPS[KILLED].chunk_table(output)).parent
    chunks = sorted(path.stem for path in items.glob("*.csv"))
    shutil.rmtree(items)
    (workdir / table).unlink()
    args = ["--cores", "1", *TINY_ARGS]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(workdir), *args, "--", table]
    log_path = tmp_path / "killed_run.log"
    with sources_lock(), open(log_path, "w") as log:
        unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log as Snakemake writes it
        process = subprocess.Popen(
            cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=unbuffered
        )
        deadline = time.monotonic() + 600
        while f"(Rule: {KILLED})" not in log_path.read_text():  # "Finished jobid: n (Rule: ...)"
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never finished a training chunk"
            time.sleep(0.01)
        # the second chunk's job has just started: its Python is still importing torch
        while len(re.findall(rf"^(?:local)?rule {KILLED}:", log_path.read_text(), re.M)) < 2:
            assert process.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.01)
        _kill_tree(process)

    started = [chunk for rule, chunk in _jobs(log_path.read_text()) if rule == KILLED]
    finished = {path.stem for path in items.glob("*.csv")}
    assert len(started) == 2 and sorted(started) == chunks and started[0] in finished, started
    assert started[1] not in finished, "the killed chunk left an output behind"
    assert not (workdir / table).exists()

    # the kill left Snakemake's lock: a plain rerun refuses and says how to release it
    locked = run_snakemake(workdir, *args, "--", table)
    assert locked.returncode != 0
    assert "--unlock" in locked.stdout + locked.stderr
    assert run_snakemake(workdir, "--unlock", *args).returncode == 0

    rerun = run_snakemake(workdir, *args, "--", table)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    jobs = _jobs(rerun.stdout + rerun.stderr)
    assert sorted(jobs) == [(KILLED, started[1]), ("gather", "")], rerun.stdout[-3000:]

    # what the interrupted-and-resumed run wrote equals the uninterrupted reference run
    assert (workdir / table).read_bytes() == result_tables(tiny_run.workdir)[table]
