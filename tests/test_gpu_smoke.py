"""bench/gpu_smoke.sh, the GPU readiness check, on its CPU path: the same items and functions
as on a GPU node, at the tiny config's scale; a CPU run records nothing in bench/RESULTS.md."""

import subprocess
import sys

import pytest
from conftest import ROOT, TINY


@pytest.mark.slow
def test_gpu_smoke_runs_one_item_of_each_gpu_rule_on_the_cpu_path():
    results = (ROOT / "bench/RESULTS.md").read_bytes()
    run = subprocess.run(
        ["bash", "bench/gpu_smoke.sh", "--device", "cpu", "--configfile", TINY, "--length", "8"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    apjn = ("apjn_curves ln_equiangular_init0:", "apjn_width ln_w32_init0:")
    for line in (*apjn, "numerics_gpt2 random-", "counting_training"):
        assert line in run.stdout, run.stdout
    assert (ROOT / "bench/RESULTS.md").read_bytes() == results
