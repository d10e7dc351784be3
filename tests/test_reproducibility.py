"""Determinism and resume, end to end: two runs of the tiny config from scratch write identical
tables, and a run killed in the middle leaves nothing a rerun trusts and resumes."""

import contextlib
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import ROOT, TINY, TINY_CORES, result_tables, run_snakemake

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


@pytest.mark.slow
def test_run_killed_after_its_first_job_leaves_no_trusted_output_and_resumes(tmp_path, tiny_run):
    # theory_curves runs first and finishes; then the trainability sweep (a checkpointed loop)
    # is killed once its first training run is checkpointed.
    first, killed = "results/apjn/theory_curves.csv", "results/apjn/trainability.csv"
    checkpoint = tmp_path / "results/apjn/.trainability.csv.ckpt"
    args = ["--cores", TINY_CORES, "--configfile", TINY, "--", first, killed]  # `--`: nargs="+"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(tmp_path), "--prioritize", first, *args]
    with open(tmp_path / "killed_run.log", "w") as log:
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 600
        while not ((tmp_path / first).exists() and any(checkpoint.glob("*.pkl"))):
            assert process.poll() is None, (tmp_path / "killed_run.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never reached the training loop"
            time.sleep(0.01)
        _kill_tree(process)

    assert not (tmp_path / killed).exists(), "the killed job left an output behind"
    assert any(checkpoint.glob("*.pkl"))

    # the kill left Snakemake's lock: a plain rerun refuses and says how to release it
    locked = run_snakemake(tmp_path, *args)
    assert locked.returncode != 0
    assert "--unlock" in locked.stdout + locked.stderr
    assert run_snakemake(tmp_path, "--unlock", *args).returncode == 0

    rerun = run_snakemake(tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    jobs = re.findall(r"^(?:local)?rule (\w+):", rerun.stdout + rerun.stderr, re.MULTILINE)
    assert jobs == ["apjn_trainability"], "only the killed job reruns"
    log = (tmp_path / "results/logs/apjn/trainability.log").read_text()
    resumed = re.search(r"checkpoint: (\d+) items resumed, (\d+) computed", log)
    assert resumed and int(resumed.group(1)) >= 1, log[-2000:]
    assert not checkpoint.exists(), "the checkpoint is removed once the table is written"

    # what the interrupted-and-resumed run wrote equals the uninterrupted reference run
    reference = result_tables(tiny_run.workdir)
    for name in (first, killed):
        assert (tmp_path / name).read_bytes() == reference[name], name
