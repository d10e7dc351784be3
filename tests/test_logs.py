"""What a job's log file receives: its own messages, warnings, and the traceback of an error
that ends it; and what it is spared (torch's jit.script deprecation note from forward mode)."""

import subprocess
import sys

import pytest

FAILING_JOB = """
import sys
from transformer_stability.logs import setup_logging
setup_logging(sys.argv[1])
def read_images(root):
    raise FileNotFoundError(f"no cifar-100-python/ under {root}")
read_images("/data/missing")
"""


def test_a_failing_job_leaves_its_traceback_and_message_in_its_log(tmp_path):
    log = tmp_path / "logs" / "job.log"
    run = subprocess.run(
        [sys.executable, "-c", FAILING_JOB, str(log)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "in read_images" in text
    assert "FileNotFoundError: no cifar-100-python/ under /data/missing" in text
    assert "FileNotFoundError" in run.stderr  # still on the terminal, once
    assert run.stderr.count("Traceback (most recent call last)") == 1


FORWARD_MODE = """
import torch, warnings
from transformer_stability.apjn.measure import forward_apjn
from transformer_stability.forward_mode import quiet_forward_mode
blocks = [torch.nn.Linear(4, 4) for _ in range(2)]
forward_apjn(blocks, torch.randn(1, 3, 4), torch.randn(1, 2, 3, 4), 8)
with quiet_forward_mode():
    warnings.warn("a warning of our own", FutureWarning, stacklevel=1)
"""


@pytest.mark.slow
def test_forward_mode_is_quiet_about_torch_internals_only():
    """A fresh process: torch loads its jvp decompositions (and warns) once per process."""
    run = subprocess.run(
        [sys.executable, "-W", "always", "-c", FORWARD_MODE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "jit.script" not in run.stderr
    assert "a warning of our own" in run.stderr
