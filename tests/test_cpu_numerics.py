"""The training jobs' CPU code paths (cpu_numerics.py): pinned to AVX2 from inside the job, as if
set before Python started, so that two x86-64 hosts train the same bits; the tiny run's training
jobs say so in their logs."""

import os
import platform
import subprocess
import sys
import types
from pathlib import Path

import pytest

from transformer_stability import cpu_numerics
from transformer_stability.cpu_numerics import PINNED, X86_64, pin_cpu_numerics

X86 = platform.machine().lower() in X86_64
CPUINFO = Path("/proc/cpuinfo")
AVX2 = X86 and CPUINFO.exists() and " avx2" in CPUINFO.read_text()
needs_avx2 = pytest.mark.skipif(not AVX2, reason="needs an x86-64 host with AVX2")

# A few steps of Study A's batched training (ATen kernels, MKL products, oneDNN's patch
# convolution), printed to the last bit; `PIN` is replaced by the pinning call or by nothing.
TRAINING = """
import torch
from transformer_stability.apjn.spec import ViTSpec
from transformer_stability.apjn.training import texture_dataset, train_group
from transformer_stability.apjn.train_items import Schedule
PIN
torch.set_num_threads(1)
spec = ViTSpec(width=16, heads=2, depth=2, img_size=8, patch_size=4, mlp_ratio=1.0,
               norm="dyt", alpha=1.0, relu=True)
data = texture_dataset(classes=2, size=8, train=16, test=8, seed=0)
rows = train_group([spec] * 4, [1e-3, 3e-3, 1e-2, 3e-2], [0, 0, 1, 1], data,
                   Schedule(steps=8, batch_size=4, weight_decay=0.05, warmup_fraction=0.1),
                   torch.device("cpu"))
print(torch.backends.cpu.get_cpu_capability(), [r["final_loss"].hex() for r in rows])
"""
PIN_CALL = "from transformer_stability.cpu_numerics import pin_cpu_numerics; pin_cpu_numerics()"


def _train(pin: str, env: dict[str, str]) -> str:
    base = {k: v for k, v in os.environ.items() if k not in PINNED}
    run = subprocess.run(
        [sys.executable, "-c", TRAINING.replace("PIN", pin)],
        capture_output=True, text=True, env={**base, **env}, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


@pytest.fixture
def job(monkeypatch):
    """A process about to train, seen by `pin_cpu_numerics`: an x86-64 host, an environment of
    its own without the pinned variables (a copy: what a pin sets must not reach the workflow
    runs this test worker starts later, which would compute with other kernels than the tiny
    run's) and a torch that has chosen the kernels `job.capability`."""
    monkeypatch.setattr(cpu_numerics.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k not in PINNED})
    state = types.SimpleNamespace(capability="AVX2")
    cpu = types.SimpleNamespace(get_cpu_capability=lambda: state.capability)
    monkeypatch.setitem(
        sys.modules, "torch", types.SimpleNamespace(backends=types.SimpleNamespace(cpu=cpu))
    )
    return state


@pytest.mark.slow
@needs_avx2
def test_pinning_inside_the_job_trains_the_bits_of_pinning_before_python_starts():
    """On an AVX-512 host a pin that did nothing would train the host's bits, which differ
    from the pinned ones after these 8 steps (checked once by hand on such a host)."""
    inside = _train(PIN_CALL, {})
    assert inside == _train("", PINNED)
    assert inside.startswith("AVX2 ")


def test_a_variable_already_set_is_kept_and_the_others_are_set(job):
    os.environ["MKL_CBWR"] = "AUTO"
    assert pin_cpu_numerics() == {**PINNED, "MKL_CBWR": "AUTO"}
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2"


def test_other_architectures_are_left_as_they_are(job, monkeypatch):
    monkeypatch.setattr(cpu_numerics.platform, "machine", lambda: "arm64")
    assert pin_cpu_numerics() == {}
    assert not set(PINNED) & set(os.environ)


@pytest.mark.slow
@pytest.mark.skipif(not X86, reason="the code paths are pinned on x86-64 only")
def test_every_training_job_of_the_tiny_run_pins_its_code_paths_and_no_other_job_does(tiny_run):
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    logs = tiny_run.workdir / "results" / "logs"
    pinned = {
        str(path.relative_to(logs).parent / path.stem)
        for path in logs.rglob("*.log")
        if "CPU code paths for training: ATEN_CPU_CAPABILITY=avx2" in path.read_text()
    }
    trainings = {"numerics/train", "numerics/sinks"}
    trainings |= {f"{rule}/{log.stem}" for rule in ("apjn_train", "counting_training")
                  for log in (logs / rule).glob("*.log")}  # fmt: skip
    assert pinned == trainings
    assert len(trainings) > 3


def test_a_pin_after_torch_chose_its_kernels_stops_the_job(job):
    """A job that computed before pinning would train the host's bits under a log saying
    otherwise: torch's capability, once chosen, is the one it keeps."""
    job.capability = "AVX512"
    with pytest.raises(RuntimeError, match="kernels are AVX512, not avx2"):
        pin_cpu_numerics()
    job.capability = "AVX2"
    assert pin_cpu_numerics() == PINNED
