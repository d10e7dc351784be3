"""Device and dtype resolution: `cuda` when available, else the CPU, through the same code."""

from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64}


NO_CUDA = (
    "config key 'device' is 'cuda' but no CUDA device is visible here (nvidia-smi, "
    "CUDA_VISIBLE_DEVICES); set it to 'auto' (the GPU where there is one, else the CPU) or 'cpu'"
)


def resolve_device(name: str) -> torch.device:
    """'auto' -> cuda if available else cpu; 'cuda' without a GPU is an error, not a fallback.
    On CUDA, float32 stays float32: TF32 (a 10-bit mantissa, cuDNN's default for convolutions)
    would put rounding of order 1e-3 into the APJN estimates and the numerics references."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(NO_CUDA)
    if name == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return torch.device(name)


def resolve_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(DTYPES)}") from None
