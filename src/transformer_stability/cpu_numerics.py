"""One set of CPU code paths for the training jobs, whatever the x86-64 host.

torch on a CPU picks its kernels by the host's instruction set: ATen's vectorized operators,
MKL's matrix products and oneDNN's convolutions each have AVX2 and AVX-512 variants (and MKL
variants per processor generation), which round differently in the last bit. A measurement
barely notices; a training does: hundreds of steps amplify a last-bit difference into another
trajectory, so the same commit trained on two hosts gave different seeds' losses and, at a
criterion's edge, another verdict. The training jobs therefore fix every one of these choices
to its AVX2 variant (for MKL, its conditional numerical reproducibility branch), which the
x86-64 servers of the last decade all run: two such hosts then train the same bits at the same
thread count. AVX-512 is faster only for large products, which the trained models do not have;
the measurements keep the host's fastest code.

Each library reads its variable once, at its first computation, so `pin_cpu_numerics` works
after torch is imported as long as nothing has been computed yet; where torch has already chosen
its kernels, it stops the job instead of letting it train other bits. Torch-free."""

from __future__ import annotations

import logging
import os
import platform
import sys

log = logging.getLogger(__name__)

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
"""The variables and the AVX2 code path each selects (a value already set is kept)."""
X86_64 = frozenset({"x86_64", "amd64"})
"""The names `platform.machine()` gives an x86-64 host (lower case): the hosts pinned."""


def pin_cpu_numerics() -> dict[str, str]:
    """Select the AVX2 code paths of ATen, MKL and oneDNN for this process (x86-64 only: other
    hosts have one set of kernels) before it computes anything; the variables in effect."""
    if platform.machine().lower() not in X86_64:
        return {}
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)
    pinned = {name: os.environ[name] for name in PINNED}
    torch = sys.modules.get("torch")
    if torch is not None:
        chosen, wanted = torch.backends.cpu.get_cpu_capability(), pinned["ATEN_CPU_CAPABILITY"]
        if chosen not in {wanted.upper(), "DEFAULT"}:
            raise RuntimeError(
                f"torch computed before the CPU code paths were pinned: its kernels are {chosen},"
                f" not {wanted}; call pin_cpu_numerics() before the job computes anything"
            )
    log.info("CPU code paths for training: %s", ", ".join(f"{k}={v}" for k, v in pinned.items()))
    return pinned
