"""The SLURM profile on a real (single-node, local) SLURM: jobs go through sbatch, GPU rules ask
for a GPU on the gpu partition, local rules stay local, and the tables equal a local run's.

tests/slurm/local_slurm.sh installs slurm-wlm and munge when missing (root and apt-get needed),
starts munged, slurmctld and slurmd for this machine only, and stops them afterwards. Where that
is impossible the test is skipped with the script's reason; TS_SKIP_SLURM=1 skips it on purpose.
"""

import os
import re
import subprocess
import sys
from datetime import datetime

import pytest
import yaml
from conftest import ROOT, SCHEMA_PATH, TINY, load_yaml, result_tables, sources_lock

from transformer_stability.registry import SWEEPS, validate

SCRIPT = ROOT / "tests" / "slurm" / "local_slurm.sh"
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
# Enough to prove the SLURM path, in few jobs (each job is a Snakemake start and a torch import,
# and the executor polls squeue at growing intervals): one job of each resource class. A cheap
# CPU rule with its local figure, and one GPU sweep with its local gather: Study C's training,
# one job per item as the profile's set-scatter asks (so that GPU jobs can run side by side),
# with nothing upstream. The other GPU sweeps take the same path: the profile gives every GPU rule
# its GPU and partition the same way (test_workflow.py checks that each is planned with its
# resources on the cluster profile).
FIGURE = "results/figures/apjn_theory_curves.pdf"
TARGETS = [FIGURE, "results/counting/training.csv"]
SUBMITTED = {  # rule -> partition it must be submitted to, and whether it asks for a GPU
    "apjn_theory_curves": ("cpu", False),
    "counting_training": ("gpu", True),
}
LOCAL = {"figure", "gather"}
TABLES = [
    "results/apjn/theory_curves.csv",
    "results/counting/training.csv",
]
NODE_MEM_MB = 2000  # memory requests are capped at this on the one-node test cluster


@pytest.fixture(scope="module")
def local_slurm(tmp_path_factory):
    if os.environ.get("TS_SKIP_SLURM") == "1":
        pytest.skip("TS_SKIP_SLURM=1")
    if not sys.platform.startswith("linux"):
        pytest.skip("the local SLURM cluster needs Linux")
    state = tmp_path_factory.mktemp("slurm")
    start = subprocess.run(
        ["bash", str(SCRIPT), "start", str(state)], capture_output=True, text=True, timeout=900
    )
    try:
        if start.returncode == 77:
            pytest.skip(start.stderr.strip().splitlines()[-1])
        assert start.returncode == 0, start.stderr[-3000:]
        yield {**os.environ, "SLURM_CONF": str(state / "slurm.conf")}
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(state)], timeout=120)


def _test_profile(directory) -> str:
    """profiles/slurm with its thread and memory requests fitted to the test machine: one thread
    per job, as in the reference run (the same torch thread count, hence identical numbers),
    memory at most NODE_MEM_MB. Everything else (executor, set-scatter, partitions, GPU
    requests) as shipped."""
    profile = load_yaml(PROFILE)
    assert profile["executor"] == "slurm"
    profile["set-threads"] = dict.fromkeys(profile["set-threads"], 1)
    for resources in [profile["default-resources"], *profile["set-resources"].values()]:
        if "mem_mb" in resources:
            resources["mem_mb"] = min(resources["mem_mb"], NODE_MEM_MB)
    directory.mkdir()
    (directory / "config.yaml").write_text(yaml.safe_dump(profile))
    return str(directory)


def _slurm_jobs(env) -> dict[str, list[dict[str, str]]]:
    """Every job slurmctld knows (finished ones stay for MinJobAge), by the rule it ran."""
    out = subprocess.run(
        ["scontrol", "--oneliner", "show", "job"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    jobs: dict[str, list[dict[str, str]]] = {}
    for line in out.stdout.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        rule = re.match(r"rule_(\w+?)(_wildcards.*)?$", fields.get("Comment", ""))
        if rule:
            jobs.setdefault(rule.group(1), []).append(fields)
    return jobs


def _overlapping(jobs: list[dict[str, str]]) -> bool:
    """Whether two of the jobs ran at the same time (scontrol's times have 1 s resolution)."""
    spans = sorted(
        (datetime.fromisoformat(job["StartTime"]), datetime.fromisoformat(job["EndTime"]))
        for job in jobs
    )
    return any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))


@pytest.mark.slow
def test_tiny_workflow_through_sbatch_matches_a_local_run(local_slurm, tiny_run, tmp_path):
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    env = local_slurm
    args = ["--profile", _test_profile(tmp_path / "profile"), "--configfile", TINY]
    args += ["--slurm-no-account", "--slurm-status-command", "squeue"]
    args += ["--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]
    args += ["--seconds-between-status-checks", "1"]  # a local cluster answers at once
    workdir = tmp_path / "run"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]
    cmd += ["--directory", str(workdir), *args, "--", *TARGETS]
    with sources_lock():
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]

    # every non-local rule went through sbatch, to the right partition, GPU rules with a GPU,
    # one job per sweep item; GPU jobs ran side by side (the submitting process does not hold
    # them to the one GPU token a local run has)
    jobs = _slurm_jobs(env)
    assert set(jobs) == set(SUBMITTED), output[-4000:]
    for rule, (partition, gpu) in SUBMITTED.items():
        for job in jobs[rule]:
            assert job["JobState"] == "COMPLETED", (rule, job)
            assert job["Partition"] == partition, (rule, job)
            assert ("gres:gpu:1" in job.get("TresPerJob", "")) == gpu, (rule, job)
        assert (workdir / ".snakemake/slurm_logs" / f"rule_{rule}").is_dir()
    tiny = validate(load_yaml(ROOT / "tests/configs/tiny.yaml"), SCHEMA_PATH)
    items = SWEEPS["counting_training"].items(tiny["counting"], tiny["seed"])
    assert len(jobs["counting_training"]) == len(items) > 1
    gpu_jobs = [job for rule, (_, gpu) in SUBMITTED.items() if gpu for job in jobs[rule]]
    assert _overlapping(gpu_jobs), [(j["StartTime"], j["EndTime"]) for j in gpu_jobs]
    all_jobs = [job for rule_jobs in jobs.values() for job in rule_jobs]
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", output)
    assert sorted(submitted) == sorted(job["JobId"] for job in all_jobs)
    ran_locally = set(re.findall(r"^localrule (\w+):", output, re.MULTILINE))
    assert ran_locally == LOCAL

    reference = result_tables(tiny_run.workdir)
    for table in TABLES:
        assert (workdir / table).read_bytes() == reference[table], table
    assert (workdir / FIGURE).stat().st_size > 5_000
